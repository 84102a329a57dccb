package mkdwarfs

import "golang.org/x/sys/unix"

func mkdev(maj, min uint32) uint64 { return unix.Mkdev(maj, min) }

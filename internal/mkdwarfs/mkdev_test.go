//go:build unix && !freebsd

package mkdwarfs

import "golang.org/x/sys/unix"

// mkdev is the dev argument of unix.Mknod, whose type differs on FreeBSD.
func mkdev(maj, min uint32) int { return int(unix.Mkdev(maj, min)) }

//go:build unix && !freebsd

package dwarfsextract

import "golang.org/x/sys/unix"

func mknod(p string, mode uint32, dev uint64) error { return unix.Mknod(p, mode, int(dev)) }

//go:build !linux && !windows

package fusefs

import "golang.org/x/sys/unix"

// fuseRdev is rdev as this kernel's dev_t, which its FUSE passes through.
func fuseRdev(maj, mnr uint32) uint32 { return uint32(unix.Mkdev(maj, mnr)) }

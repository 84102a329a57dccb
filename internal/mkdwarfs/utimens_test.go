//go:build unix

package mkdwarfs

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs/metadata"
)

func utimensat(p string, ts []syscall.Timespec) error {
	uts := []unix.Timespec{{Sec: ts[0].Sec, Nsec: ts[0].Nsec}, {Sec: ts[1].Sec, Nsec: ts[1].Nsec}}
	return unix.UtimesNanoAt(unix.AT_FDCWD, p, uts, unix.AT_SYMLINK_NOFOLLOW)
}

// hostRdev is a stat(2) rdev in the layout images use (metadata.MakeDev).
func hostRdev(r uint64) uint64 {
	return metadata.MakeDev(unix.Major(r), unix.Minor(r))
}

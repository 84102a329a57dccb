//go:build unix

package manifest

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

func statOf(p string, _ fs.FileInfo) (stat, error) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return stat{}, &fs.PathError{Op: "lstat", Path: p, Err: err}
	}
	return stat{
		mode: uint32(st.Mode), uid: st.Uid, gid: st.Gid,
		sec: int64(st.Mtim.Sec), nsec: int64(st.Mtim.Nsec), nlink: int(st.Nlink),
		major: unix.Major(uint64(st.Rdev)), minor: unix.Minor(uint64(st.Rdev)),
	}, nil
}

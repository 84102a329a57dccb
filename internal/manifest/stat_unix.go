//go:build unix

package manifest

import (
	"io/fs"

	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs/internal/stattime"
)

func statOf(p string, _ fs.FileInfo) (stat, error) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return stat{}, &fs.PathError{Op: "lstat", Path: p, Err: err}
	}
	s := stat{
		mode: uint32(st.Mode), uid: st.Uid, gid: st.Gid,
		sec: int64(st.Mtim.Sec), nsec: int64(st.Mtim.Nsec), nlink: int(st.Nlink),
		major: unix.Major(uint64(st.Rdev)), minor: unix.Minor(uint64(st.Rdev)),
	}
	if _, m, _, ok := stattime.Times(p, false); ok {
		s.sec, s.nsec = m.Sec, m.Nsec
	}
	return s, nil
}

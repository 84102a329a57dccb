//go:build linux && (386 || arm)

package stattime

import "golang.org/x/sys/unix"

// Times returns the access, modification and change times of path (of a
// final symlink itself unless follow), through statx (Linux 4.11). ok is
// false when statx fails: the caller keeps what stat gave.
func Times(path string, follow bool) (atime, mtime, ctime Time, ok bool) {
	flags := unix.AT_SYMLINK_NOFOLLOW
	if follow {
		flags = 0
	}
	var st unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, path, flags, unix.STATX_ATIME|unix.STATX_MTIME|unix.STATX_CTIME, &st) != nil {
		return atime, mtime, ctime, false
	}
	conv := func(t unix.StatxTimestamp) Time { return Time{t.Sec, int64(t.Nsec)} }
	return conv(st.Atime), conv(st.Mtime), conv(st.Ctime), true
}

package manifest

import (
	"io/fs"
	"syscall"
)

// statOf describes what Windows keeps: the type, the permission bits Go
// derives from the read-only attribute, and the modification time. Owners
// are 0 and every file has one link.
func statOf(_ string, fi fs.FileInfo) (stat, error) {
	m := fi.Mode()
	mode := uint32(m.Perm())
	switch {
	case m.IsDir():
		mode |= syscall.S_IFDIR
	case m&fs.ModeSymlink != 0:
		mode |= syscall.S_IFLNK
	case m.IsRegular():
		mode |= syscall.S_IFREG
	default:
		mode |= syscall.S_IFIFO
	}
	t := fi.ModTime()
	return stat{mode: mode, sec: t.Unix(), nsec: int64(t.Nanosecond()), nlink: 1}, nil
}

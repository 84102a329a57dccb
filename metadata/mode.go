package metadata

import "io/fs"

// ModeOf returns the image's mode word (type and permission bits) for what
// a portable fs.FileMode says, for systems whose stat carries no Unix mode
// (Windows): directories, symlinks and regular files keep their type, and
// anything else is taken for a FIFO.
func ModeOf(m fs.FileMode) uint32 {
	mode := uint32(m.Perm())
	switch {
	case m.IsDir():
		mode |= ModeDir
	case m&fs.ModeSymlink != 0:
		mode |= ModeSymlink
	case m.IsRegular():
		mode |= ModeRegular
	default:
		mode |= ModeFIFO
	}
	return mode
}

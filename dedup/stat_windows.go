package dedup

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"github.com/godwarfs/godwarfs/metadata"
)

// statLinks is what the scanner needs of a file beyond its inode fields.
// Windows reports neither a link count nor an inode number through
// stat, so every file counts as unlinked.
type statLinks struct {
	nlink uint64
	id    devIno
}

// statPath maps what Windows reports onto stat(2) fields: the type and
// permission bits Go derives from the attributes (the read-only attribute
// clears the write bits), owner 0, and the change time taken from the last
// write, as Windows has none.
func statPath(osPath string, follow, allTimes bool) (*inode, statLinks, error) {
	var fi fs.FileInfo
	var err error
	if follow {
		fi, err = os.Stat(osPath)
	} else {
		fi, err = os.Lstat(osPath)
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, statLinks{}, err
	}
	mode := metadata.ModeOf(fi.Mode())
	in := &inode{mode: mode, size: fi.Size(), dense: true}
	mt := fi.ModTime()
	in.setMtime(timespec{mt.Unix(), int64(mt.Nanosecond())})
	if allTimes {
		x := in.ext()
		x.atime, x.ctime = in.mtime(), in.mtime()
		if d, ok := fi.Sys().(*syscall.Win32FileAttributeData); ok {
			at := d.LastAccessTime.Nanoseconds()
			x.atime = timespec{at / 1e9, at % 1e9}
		}
	}
	in.kind = kindOf(mode)
	return in, statLinks{nlink: 1}, nil
}

// openRead opens a file or directory for reading.
func openRead(name string) (*os.File, error) { return os.Open(name) }

// dataExtents reports no holes: sparse files are read like any other.
func dataExtents(f *os.File, size, allocated int64) ([]extent, error) { return nil, nil }

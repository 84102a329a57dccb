//go:build unix

package dedup

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs/internal/stattime"
	"github.com/godwarfs/godwarfs/metadata"
)

// statLinks is what the scanner needs of a file beyond its inode fields:
// the link count and identity that merge hard links.
type statLinks struct {
	nlink uint64
	id    devIno
}

// statPath stats osPath (following a final symlink when follow is set).
// x/sys/unix names the fields alike on every Unix; only their widths
// differ, hence the conversions.
func statPath(osPath string, follow, allTimes bool) (*inode, statLinks, error) {
	var st unix.Stat_t
	var err error
	if follow {
		err = unix.Stat(osPath, &st)
	} else {
		err = unix.Lstat(osPath, &st)
	}
	if err != nil {
		return nil, statLinks{}, err
	}
	rdev := uint64(st.Rdev)
	if runtime.GOOS != "linux" {
		rdev = metadata.MakeDev(unix.Major(rdev), unix.Minor(rdev))
	}
	in := &inode{
		mode:  uint32(st.Mode),
		uid:   st.Uid,
		gid:   st.Gid,
		size:  st.Size,
		dense: int64(st.Blocks)*512 >= st.Size,
	}
	mtime := timespec{int64(st.Mtim.Sec), int64(st.Mtim.Nsec)}
	atime := timespec{int64(st.Atim.Sec), int64(st.Atim.Nsec)}
	ctime := timespec{int64(st.Ctim.Sec), int64(st.Ctim.Nsec)}
	if a, m, c, ok := stattime.Times(osPath, follow); ok {
		atime, mtime, ctime = timespec{a.Sec, a.Nsec}, timespec{m.Sec, m.Nsec}, timespec{c.Sec, c.Nsec}
	}
	in.setMtime(mtime)
	in.kind = kindOf(in.mode)
	if allTimes {
		x := in.ext()
		x.atime, x.ctime = atime, ctime
	}
	if rdev != 0 && in.kind == kDev {
		in.ext().rdev = rdev
	}
	return in, statLinks{uint64(st.Nlink), devIno{uint64(st.Dev), uint64(st.Ino)}}, nil
}

// openRead opens a file or directory for reading. os.Open also tries to
// register every descriptor with the runtime's poller, which a regular
// file or directory refuses: four system calls more per file than this,
// and a build opens each file twice (scanning, segmenting).
func openRead(name string) (*os.File, error) {
	for {
		fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			return os.NewFile(uintptr(fd), name), nil
		}
		if err != unix.EINTR {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
}

// dataExtents returns the data ranges of a file via SEEK_DATA/SEEK_HOLE, or
// nil if the file has no holes (or the filesystem cannot tell). A file
// with as many bytes allocated as its size has no holes (the test cp and
// tar make too), and is not probed.
func dataExtents(f *os.File, size, allocated int64) ([]extent, error) {
	if size == 0 || allocated >= size {
		return nil, nil
	}
	fd := int(f.Fd())
	var ext []extent
	var off int64
	for off < size {
		d, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if err != nil {
			if errors.Is(err, unix.ENXIO) {
				break // only a hole remains
			}
			if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOTSUP) {
				return nil, nil
			}
			return nil, err
		}
		if d >= size {
			break
		}
		h, err := unix.Seek(fd, d, unix.SEEK_HOLE)
		if err != nil {
			return nil, err
		}
		if h > size {
			h = size
		}
		ext = append(ext, extent{d, h - d})
		off = h
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	if len(ext) == 1 && ext[0].off == 0 && ext[0].len == size {
		return nil, nil
	}
	if ext == nil {
		ext = []extent{} // entirely a hole
	}
	return ext, nil
}

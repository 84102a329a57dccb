package godwarfs

import (
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/godwarfs/godwarfs/metadata"
)

// Permission-class st_mode bits (the type bits are metadata.Mode*).
const (
	sISUID = 0o4000
	sISGID = 0o2000
	sISVTX = 0o1000
)

// maxReadFile bounds ReadFile allocations; use Open or NewReader beyond.
const maxReadFile = 16 << 30

// maxSymlinkHops bounds symlink resolution like the kernel's ELOOP limit.
const maxSymlinkHops = 40

var (
	_ fs.FS         = (*Image)(nil)
	_ fs.ReadDirFS  = (*Image)(nil)
	_ fs.StatFS     = (*Image)(nil)
	_ fs.ReadFileFS = (*Image)(nil)
	_ fs.ReadLinkFS = (*Image)(nil)
)

// Stat is what fs.FileInfo.Sys() returns for entries of an Image.
type Stat struct {
	Ino, Uid, Gid, Nlink       uint32
	Mode                       uint32 // raw st_mode
	Rdev                       uint64
	Size, Allocated            int64
	Atime, Mtime, Ctime, Btime time.Time
	HasBtime                   bool
}

// FileMode converts a raw st_mode to an fs.FileMode.
func FileMode(mode uint32) fs.FileMode {
	m := fs.FileMode(mode & 0o777)
	switch mode & metadata.ModeType {
	case metadata.ModeDir:
		m |= fs.ModeDir
	case metadata.ModeSymlink:
		m |= fs.ModeSymlink
	case metadata.ModeFIFO:
		m |= fs.ModeNamedPipe
	case metadata.ModeSocket:
		m |= fs.ModeSocket
	case metadata.ModeChar:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case metadata.ModeBlock:
		m |= fs.ModeDevice
	case metadata.ModeRegular:
	default:
		m |= fs.ModeIrregular
	}
	if mode&sISUID != 0 {
		m |= fs.ModeSetuid
	}
	if mode&sISGID != 0 {
		m |= fs.ModeSetgid
	}
	if mode&sISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

func toTime(t metadata.Time) time.Time { return time.Unix(t.Sec, int64(t.Nsec)) }

// statOf converts inode metadata into a *Stat.
func statOf(in metadata.Inode) *Stat {
	return &Stat{
		Ino: in.Num, Uid: in.Uid, Gid: in.Gid, Nlink: in.Nlink, Mode: in.Mode, Rdev: in.Rdev,
		Size: in.Size, Allocated: in.AllocatedSize,
		Atime: toTime(in.Atime), Mtime: toTime(in.Mtime), Ctime: toTime(in.Ctime), Btime: toTime(in.Btime),
		HasBtime: in.HasBtime,
	}
}

type fileInfo struct {
	name string
	st   *Stat
}

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.st.Size }
func (fi *fileInfo) Mode() fs.FileMode  { return FileMode(fi.st.Mode) }
func (fi *fileInfo) ModTime() time.Time { return fi.st.Mtime }
func (fi *fileInfo) IsDir() bool        { return fi.st.Mode&metadata.ModeType == metadata.ModeDir }
func (fi *fileInfo) Sys() any           { return fi.st }

func (im *Image) info(name string, ino uint32) (*fileInfo, error) {
	in, err := im.InodeInfo(ino)
	if err != nil {
		return nil, err
	}
	return &fileInfo{name: name, st: statOf(in)}, nil
}

// resolve maps an io/fs path to an inode. With follow, a final symlink is
// followed; intermediate symlinks are always followed. Targets that leave
// the image (absolute or above the root) do not exist.
func (im *Image) resolve(op, name string, follow bool) (uint32, error) {
	if !fs.ValidPath(name) {
		return 0, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	var parts []string
	if name != "." {
		parts = strings.Split(name, "/")
	}
	var buf [16]uint32
	stack := append(buf[:0], im.root) // directory chain, for ".." in link targets
	hops := 0
	for len(parts) > 0 {
		p := parts[0]
		parts = parts[1:]
		switch p {
		case "", ".":
			continue
		case "..":
			if len(stack) == 1 {
				return 0, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
			}
			stack = stack[:len(stack)-1]
			continue
		}
		dir := stack[len(stack)-1]
		dmode, err := im.fs.Mode(dir)
		if err != nil {
			return 0, &fs.PathError{Op: op, Path: name, Err: err}
		}
		if dmode&metadata.ModeType != metadata.ModeDir {
			return 0, &fs.PathError{Op: op, Path: name, Err: syscall.ENOTDIR}
		}
		if err := im.fs.CheckDir(dir); err != nil {
			return 0, &fs.PathError{Op: op, Path: name, Err: named(im.name, err)}
		}
		ino, ok := im.fs.Lookup(dir, p)
		if !ok {
			return 0, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		mode, err := im.fs.Mode(ino)
		if err != nil {
			return 0, &fs.PathError{Op: op, Path: name, Err: err}
		}
		if mode&metadata.ModeType == metadata.ModeSymlink && (len(parts) > 0 || follow) {
			hops++
			if hops > maxSymlinkHops {
				return 0, &fs.PathError{Op: op, Path: name, Err: syscall.ELOOP}
			}
			target, err := im.fs.Readlink(ino)
			if err != nil {
				return 0, &fs.PathError{Op: op, Path: name, Err: err}
			}
			if strings.HasPrefix(target, "/") || target == "" {
				return 0, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
			}
			parts = append(strings.Split(target, "/"), parts...)
			continue
		}
		stack = append(stack, ino)
	}
	return stack[len(stack)-1], nil
}

// Lookup resolves name (io/fs syntax) to an inode without following a final
// symlink.
func (im *Image) Lookup(name string) (uint32, error) { return im.resolve("lookup", name, false) }

// Stat implements fs.StatFS; symlinks are followed within the image.
func (im *Image) Stat(name string) (fs.FileInfo, error) {
	ino, err := im.resolve("stat", name, true)
	if err != nil {
		return nil, err
	}
	fi, err := im.info(path.Base(name), ino)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	return fi, nil
}

// Lstat is Stat without following a final symlink.
func (im *Image) Lstat(name string) (fs.FileInfo, error) {
	ino, err := im.resolve("lstat", name, false)
	if err != nil {
		return nil, err
	}
	fi, err := im.info(path.Base(name), ino)
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: err}
	}
	return fi, nil
}

// ReadLink implements fs.ReadLinkFS: it returns the target of symlink
// name as stored.
func (im *Image) ReadLink(name string) (string, error) {
	ino, err := im.resolve("readlink", name, false)
	if err != nil {
		return "", err
	}
	t, err := im.fs.Readlink(ino)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: err}
	}
	return t, nil
}

// ReadDir implements fs.ReadDirFS (entries sorted by name).
func (im *Image) ReadDir(name string) ([]fs.DirEntry, error) {
	ino, err := im.resolve("readdir", name, true)
	if err != nil {
		return nil, err
	}
	ents, err := im.readDirIno(ino)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	return ents, nil
}

func (im *Image) readDirIno(ino uint32) ([]fs.DirEntry, error) {
	in, err := im.InodeInfo(ino)
	if err != nil {
		return nil, err
	}
	if in.Mode&metadata.ModeType != metadata.ModeDir {
		return nil, syscall.ENOTDIR
	}
	raw, err := im.fs.ReadDir(ino)
	if err != nil {
		return nil, named(im.name, err)
	}
	// The entries' attributes are read when Info asks for them: a walk
	// that stats what it visits would otherwise build every FileInfo
	// twice. One array backs all entries of the directory.
	ents := make([]dirEntry, len(raw))
	out := make([]fs.DirEntry, len(raw))
	for i, e := range raw {
		mode, err := im.fs.Mode(e.Ino)
		if err != nil {
			return nil, err
		}
		ents[i] = dirEntry{im: im, name: e.Name, ino: e.Ino, mode: mode}
		out[i] = &ents[i]
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// dirEntry is an fs.DirEntry whose FileInfo is built on demand.
type dirEntry struct {
	im   *Image
	name string
	ino  uint32
	mode uint32 // raw st_mode
}

func (d *dirEntry) Name() string      { return d.name }
func (d *dirEntry) IsDir() bool       { return d.mode&metadata.ModeType == metadata.ModeDir }
func (d *dirEntry) Type() fs.FileMode { return FileMode(d.mode).Type() }
func (d *dirEntry) String() string    { return fs.FormatDirEntry(d) }
func (d *dirEntry) Info() (fs.FileInfo, error) {
	fi, err := d.im.info(d.name, d.ino)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: d.name, Err: err}
	}
	return fi, nil
}

// ReadFile implements fs.ReadFileFS.
func (im *Image) ReadFile(name string) ([]byte, error) {
	ino, err := im.resolve("readfile", name, true)
	if err != nil {
		return nil, err
	}
	b, err := im.readAll(ino)
	if err != nil {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: err}
	}
	return b, nil
}

func (im *Image) readAll(ino uint32) ([]byte, error) {
	in, err := im.InodeInfo(ino)
	if err != nil {
		return nil, err
	}
	switch in.Mode & metadata.ModeType {
	case metadata.ModeDir:
		return nil, syscall.EISDIR
	case metadata.ModeRegular:
	default:
		return nil, nil
	}
	f, err := im.openFile(ino, in, "", "")
	if err != nil {
		return nil, err
	}
	// A corrupt image can describe an enormous (sparse) file; refuse to
	// allocate it in one piece rather than crash.
	if f.size > maxReadFile {
		return nil, fmt.Errorf("file of %d bytes too large to read at once: %w", f.size, syscall.EFBIG)
	}
	buf := make([]byte, f.size)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !(err == io.EOF && int64(n) == f.size) {
		return nil, err
	}
	return buf, nil
}

// Open implements fs.FS. Symlinks are followed; directories implement
// fs.ReadDirFile; everything else is a *File (non-regular files read as
// empty).
func (im *Image) Open(name string) (fs.File, error) {
	ino, err := im.resolve("open", name, true)
	if err != nil {
		return nil, err
	}
	in, err := im.InodeInfo(ino)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if in.Mode&metadata.ModeType == metadata.ModeDir {
		return &dirFile{im: im, ino: ino, fi: &fileInfo{name: path.Base(name), st: statOf(in)}, path: name}, nil
	}
	f, err := im.openFile(ino, in, path.Base(name), name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return f, nil
}

type dirFile struct {
	im      *Image
	ino     uint32
	fi      *fileInfo
	path    string
	entries []fs.DirEntry
	loaded  bool
}

func (d *dirFile) Stat() (fs.FileInfo, error) { return d.fi, nil }
func (d *dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.path, Err: syscall.EISDIR}
}
func (d *dirFile) Close() error { return nil }

// ReadDir implements fs.ReadDirFile.
func (d *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	if !d.loaded {
		ents, err := d.im.readDirIno(d.ino)
		if err != nil {
			return nil, &fs.PathError{Op: "readdir", Path: d.path, Err: err}
		}
		d.entries, d.loaded = ents, true
	}
	if n <= 0 {
		out := d.entries
		d.entries = nil
		return out, nil
	}
	if len(d.entries) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(d.entries))
	out := d.entries[:n:n]
	d.entries = d.entries[n:]
	return out, nil
}

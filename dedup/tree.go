package dedup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/godwarfs/godwarfs/internal/mmap"
)

// A TreeSource supplies an input tree that is not a directory on disk,
// such as an archive (Options.Tree). The tree it returns goes through the
// same filters, ordering, segmenting and metadata as a scanned directory.
type TreeSource interface {
	// ReadTree reads the whole tree. It calls progress now and then with
	// the bytes of input read so far, and warn for what the image cannot
	// hold. The build takes the returned tree apart as it converts it:
	// each call must return a tree of its own.
	ReadTree(ctx context.Context, progress func(read int64), warn func(format string, args ...any)) (*TreeNode, error)
}

// TreeNode is one entry of a TreeSource's tree.
type TreeNode struct {
	// Name is the entry's name in its directory ("" for the root).
	Name string
	// Mode holds the file type (syscall.S_IFDIR, S_IFREG, ...) and the
	// permission bits.
	Mode                uint32
	UID, GID            uint32
	Atime, Mtime, Ctime time.Time
	// Size is a regular file's length in bytes.
	Size int64
	// Rdev is a device's number (unix.Mkdev).
	Rdev uint64
	// Target is a symbolic link's target.
	Target string
	// Data is where a regular file's bytes are.
	Data FileData
	// Link, if set, makes this entry a further name of the regular file
	// Link: the two share one inode (a hard link).
	Link *TreeNode
	// Children are a directory's entries, sorted by name.
	Children []*TreeNode
}

// FileData locates a regular file's bytes: [Off, Off+size) of R.
type FileData struct {
	R   io.ReaderAt
	Off int64
	// Extents, if not nil, are the data ranges of a sparse file (offsets
	// relative to the file); the rest reads as zeros and is stored as
	// holes unless Options.NoSparse.
	Extents []Extent
	// Name is the file's name in error messages (e.g. its archive member).
	Name string
}

// Extent is a data range [Off, Off+Len) of a sparse file.
type Extent struct{ Off, Len int64 }

// Mapper is implemented by a FileData.R that can hand out its bytes
// without a copy (a mapped file, or one in memory); the segmenter reads
// large files through it. release is called when the bytes are no longer
// used.
type Mapper interface {
	Map(off, n int64) (data []byte, release func(), err error)
}

// fromTree builds the scanner's tree from a TreeSource, applying the same
// type and filter rules as a directory walk.
func (s *scanner) fromTree(ctx context.Context, b *builder) (*entry, error) {
	var last int64
	progress := func(n int64) {
		if n == last {
			return
		}
		last = n
		s.mu.Lock()
		s.stats.ArchiveBytes = n
		b.report()
		s.mu.Unlock()
	}
	t, err := s.opt.Tree.ReadTree(ctx, progress, s.warn)
	if err != nil {
		return nil, err
	}
	b.phase("scanning")
	s.mu.Lock()
	s.stats.Phase = "scanning"
	b.report()
	s.mu.Unlock()
	if t.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return nil, fmt.Errorf("input %s: the root is not a directory", s.root)
	}
	// Only hard link targets need finding again: a map of every file
	// would cost more than the file's own records.
	targets := map[*TreeNode]bool{}
	var findLinks func(n *TreeNode)
	findLinks = func(n *TreeNode) {
		for _, c := range n.Children {
			if c.Link != nil {
				targets[c.Link] = true
			}
			findLinks(c)
		}
	}
	findLinks(t)
	inodes := map[*TreeNode]*inode{}
	root := &entry{ino: nodeInode(t, s.opt.KeepAllTimes), top: true}
	// The source's tree is taken apart as it is converted, each node
	// dropped once its entry exists, so that the two trees, which cost
	// about as much each, are never both whole. Names are copied out of
	// the source's strings, which may hold whole paths.
	var add func(d *entry, n *TreeNode, dirRel string) error
	add = func(d *entry, n *TreeNode, dirRel string) error {
		kids := n.Children
		n.Children = nil
		for i, c := range kids {
			kids[i] = nil
			rel := c.Name
			if dirRel != "" {
				rel = dirRel + "/" + c.Name
			}
			src := c
			if c.Link != nil {
				src = c.Link
			}
			in := inodes[src]
			if in == nil {
				in = nodeInode(src, s.opt.KeepAllTimes)
				if in.data != nil && in.data.Name == rel && in.data.Extents == nil {
					// The entry's path names the file as well, and an
					// empty file's bytes are nowhere.
					if in.size == 0 {
						in.data = &noData
					} else {
						in.data.Name = ""
					}
				}
				if src.Mode&syscall.S_IFMT == syscall.S_IFREG && targets[src] {
					inodes[src] = in
				}
			}
			switch in.kind {
			case kDev:
				if !s.opt.WithDevices {
					continue
				}
			case kSpecial:
				if !s.opt.WithSpecials {
					continue
				}
			}
			if !filterKeep(s.opt.Filters, rel, in.kind == kDir) {
				continue
			}
			e := &entry{name: strings.Clone(c.Name), parent: d, ino: in}
			d.children = append(d.children, e)
			if in.kind == kDir {
				if err := add(e, c, rel); err != nil {
					return err
				}
			}
		}
		return ctx.Err()
	}
	if err := add(root, t, ""); err != nil {
		return nil, err
	}
	return root, nil
}

// noData is the FileData of every empty file a TreeSource names by its
// path: nothing reads or changes it.
var noData FileData

// PhaseReading is Stats.Phase while a TreeSource is read.
const PhaseReading = "reading"

func timespecOf(t time.Time) timespec {
	if t.IsZero() {
		return timespec{}
	}
	return timespec{t.Unix(), int64(t.Nanosecond())}
}

func nodeInode(n *TreeNode, allTimes bool) *inode {
	in := &inode{
		mode:  n.Mode,
		uid:   n.UID,
		gid:   n.GID,
		dense: true,
	}
	in.setMtime(timespecOf(n.Mtime))
	if allTimes {
		x := in.ext()
		x.atime, x.ctime = timespecOf(n.Atime), timespecOf(n.Ctime)
	}
	switch n.Mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		in.kind = kDir
	case syscall.S_IFLNK:
		in.kind = kLink
		in.ext().target = n.Target
		in.size = int64(len(n.Target))
	case syscall.S_IFREG:
		in.kind = kReg
		in.size = n.Size
		d := n.Data
		in.data = &d
	case syscall.S_IFCHR, syscall.S_IFBLK:
		in.kind = kDev
		if n.Rdev != 0 {
			in.ext().rdev = n.Rdev
		}
	default:
		in.kind = kSpecial
	}
	return in
}

// fileSource is an open regular file: a file on disk or a TreeSource's
// data.
type fileSource interface {
	io.Reader
	io.ReaderAt
	Close() error
}

// openData opens f for reading.
func (b *builder) openData(f *inode) (fileSource, error) {
	if f.data != nil {
		return nopCloser{io.NewSectionReader(f.data.R, f.data.Off, f.size)}, nil
	}
	return b.opt.OpenFile(b.osPath(f))
}

type nopCloser struct{ *io.SectionReader }

func (nopCloser) Close() error { return nil }

// dataExtents returns a TreeSource file's data ranges.
func (f *inode) dataExtents() []extent {
	if f.data.Extents == nil {
		return nil
	}
	ext := make([]extent, len(f.data.Extents))
	for i, e := range f.data.Extents {
		ext[i] = extent{e.Off, e.Len}
	}
	return ext
}

// mapData returns f's bytes for the segmenter: mapped or in memory when
// its source allows, else read into buf.
func (b *builder) mapData(f *inode) ([]byte, func(), error) {
	d := f.data
	if m, ok := d.R.(Mapper); ok && f.size >= 1<<20 {
		data, release, err := m.Map(d.Off, f.size)
		if err == nil {
			return data, release, nil
		}
		if !errors.Is(err, mmap.ErrUnsupported) {
			return nil, nil, fmt.Errorf("cannot read %s: %w", b.osPath(f), err)
		}
	}
	if int64(cap(b.segBuf)) < f.size {
		b.segBuf = make([]byte, f.size)
	}
	data := b.segBuf[:f.size]
	n, err := d.R.ReadAt(data, d.Off)
	if int64(n) == f.size {
		err = nil
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, nil, fmt.Errorf("cannot read %s: %w", b.osPath(f), err)
	}
	return data, func() {}, nil
}

var _ fileSource = (*os.File)(nil)

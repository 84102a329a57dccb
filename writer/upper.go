//go:build linux

package writer

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/metadata"
	"golang.org/x/sys/unix"
)

// The overlayfs extended attributes an upper directory may carry, in the
// trusted (mounted by root) or user (userxattr) namespace.
const (
	xattrOpaque   = "overlay.opaque"
	xattrRedirect = "overlay.redirect"
	xattrMetacopy = "overlay.metacopy"
)

// upperTree is the tree of an image with an overlayfs upper directory
// applied, as a dedup.TreeSource: the image's entries, whose data is read
// from its blocks when needed (an update matches them to the image's
// files by path, size and mtime, so mostly never), and the upper
// directory's on top: a 0/0 character device deletes what the image has
// at its path, an opaque directory replaces the image's directory, other
// entries add or replace.
type upperTree struct {
	dir   string
	image *baseImage
	warn  func(format string, args ...any)
	// files are the upper directory's regular files as read, to see that
	// they did not change while the update ran.
	files []upperFile
	rd    *imageFiles
}

type upperFile struct {
	path  string
	size  int64
	mtime time.Time
}

// ReadTree implements dedup.TreeSource.
func (t *upperTree) ReadTree(ctx context.Context, _ func(int64), _ func(string, ...any)) (*dedup.TreeNode, error) {
	root, err := t.lower()
	if err != nil {
		return nil, err
	}
	links := map[[2]uint64]*dedup.TreeNode{}
	st, err := os.Lstat(t.dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("upper %s: not a directory", t.dir)
	}
	if err := t.checkXattrs(t.dir); err != nil {
		return nil, err
	}
	setAttrs(root, st)
	if err := t.apply(ctx, root, t.dir, "", links); err != nil {
		return nil, err
	}
	return root, nil
}

// lower returns the image's tree.
func (t *upperTree) lower() (*dedup.TreeNode, error) {
	f := t.image.fs
	rd := &imageFiles{cache: newDecodedBlocks(t.image.im, t.image.limit, 4)}
	t.rd = rd
	nodes := map[uint32]*dedup.TreeNode{}
	var conv func(ino uint32, name, rel string) (*dedup.TreeNode, error)
	conv = func(ino uint32, name, rel string) (*dedup.TreeNode, error) {
		if first, ok := nodes[ino]; ok {
			return &dedup.TreeNode{Name: name, Link: first}, nil
		}
		a, err := f.Inode(ino)
		if err != nil {
			return nil, fmt.Errorf("%s: /%s: %w", t.image.name, rel, err)
		}
		n := &dedup.TreeNode{Name: name, Mode: a.Mode, UID: a.Uid, GID: a.Gid,
			Atime: time.Unix(a.Atime.Sec, int64(a.Atime.Nsec)), Mtime: time.Unix(a.Mtime.Sec, int64(a.Mtime.Nsec)),
			Ctime: time.Unix(a.Ctime.Sec, int64(a.Ctime.Nsec)), Rdev: a.Rdev}
		switch a.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			chunks, err := f.FileChunks(ino)
			if err != nil {
				return nil, fmt.Errorf("%s: /%s: %w", t.image.name, rel, err)
			}
			n.Size = a.Size
			n.Data = dedup.FileData{R: &imageFile{files: rd, chunks: chunks}, Name: t.image.name + ":/" + rel}
			nodes[ino] = n
		case syscall.S_IFLNK:
			if n.Target, err = f.Readlink(ino); err != nil {
				return nil, fmt.Errorf("%s: /%s: %w", t.image.name, rel, err)
			}
		case syscall.S_IFDIR:
			ents, err := f.ReadDir(ino)
			if err != nil {
				return nil, fmt.Errorf("%s: /%s: %w", t.image.name, rel, err)
			}
			for _, e := range ents {
				crel := e.Name
				if rel != "" {
					crel = rel + "/" + e.Name
				}
				c, err := conv(e.Ino, e.Name, crel)
				if err != nil {
					return nil, err
				}
				n.Children = append(n.Children, c)
			}
		}
		return n, nil
	}
	return conv(0, "", "")
}

// setAttrs gives n the attributes of st (an upper directory's entry).
func setAttrs(n *dedup.TreeNode, st os.FileInfo) {
	sys := st.Sys().(*syscall.Stat_t)
	n.Mode, n.UID, n.GID = uint32(sys.Mode), sys.Uid, sys.Gid
	n.Atime = time.Unix(int64(sys.Atim.Sec), int64(sys.Atim.Nsec))
	n.Mtime = time.Unix(int64(sys.Mtim.Sec), int64(sys.Mtim.Nsec))
	n.Ctime = time.Unix(int64(sys.Ctim.Sec), int64(sys.Ctim.Nsec))
	n.Rdev = uint64(sys.Rdev)
}

// apply applies upper directory dir (at rel) to the merged directory d.
func (t *upperTree) apply(ctx context.Context, d *dedup.TreeNode, dir, rel string, links map[[2]uint64]*dedup.TreeNode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	idx := map[string]int{}
	for i, c := range d.Children {
		idx[c.Name] = i
	}
	set := func(name string, n *dedup.TreeNode) {
		if i, ok := idx[name]; ok {
			d.Children[i] = n
			return
		}
		idx[name] = len(d.Children)
		d.Children = append(d.Children, n)
	}
	var gone []string
	for _, de := range ents {
		name := de.Name()
		p := filepath.Join(dir, name)
		crel := name
		if rel != "" {
			crel = rel + "/" + name
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		sys := st.Sys().(*syscall.Stat_t)
		mode := uint32(sys.Mode)
		if mode&syscall.S_IFMT == syscall.S_IFCHR && sys.Rdev == 0 {
			// A whiteout: the path is gone.
			if _, ok := idx[name]; !ok {
				t.warn("upper %s: whiteout for /%s, which the image does not have", t.dir, crel)
				continue
			}
			gone = append(gone, name)
			continue
		}
		if err := t.checkXattrs(p); err != nil {
			return err
		}
		switch mode & syscall.S_IFMT {
		case syscall.S_IFDIR:
			opaque, err := t.opaque(p)
			if err != nil {
				return err
			}
			var n *dedup.TreeNode
			if i, ok := idx[name]; ok && !opaque && d.Children[i].Mode&syscall.S_IFMT == syscall.S_IFDIR {
				n = d.Children[i]
			} else {
				n = &dedup.TreeNode{Name: name}
				set(name, n)
			}
			setAttrs(n, st)
			if err := t.apply(ctx, n, p, crel, links); err != nil {
				return err
			}
		case syscall.S_IFREG:
			key := [2]uint64{uint64(sys.Dev), uint64(sys.Ino)}
			if first, ok := links[key]; ok && sys.Nlink > 1 {
				set(name, &dedup.TreeNode{Name: name, Link: first})
				continue
			}
			n := &dedup.TreeNode{Name: name, Size: st.Size(), Data: dedup.FileData{R: &lazyFile{path: p}, Name: p}}
			setAttrs(n, st)
			links[key] = n
			t.files = append(t.files, upperFile{p, st.Size(), st.ModTime()})
			set(name, n)
		case syscall.S_IFLNK:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			n := &dedup.TreeNode{Name: name, Target: target}
			setAttrs(n, st)
			set(name, n)
		default:
			n := &dedup.TreeNode{Name: name}
			setAttrs(n, st)
			set(name, n)
		}
	}
	if len(gone) > 0 {
		drop := map[string]bool{}
		for _, g := range gone {
			drop[g] = true
		}
		kept := d.Children[:0]
		for _, c := range d.Children {
			if !drop[c.Name] {
				kept = append(kept, c)
			}
		}
		d.Children = kept
	}
	sort.Slice(d.Children, func(i, j int) bool { return d.Children[i].Name < d.Children[j].Name })
	return nil
}

func (t *upperTree) close() {
	if t.rd != nil {
		t.rd.cache.close()
	}
}

// getXattr returns extended attribute name of p (not following a
// symbolic link).
func getXattr(p, name string) (string, bool) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Lgetxattr(p, name, buf)
		if err == unix.ERANGE {
			buf = make([]byte, 2*len(buf))
			continue
		}
		if err != nil {
			return "", false
		}
		return string(buf[:n]), true
	}
}

// verify reports an upper file whose size or mtime changed since it was
// read.
func (t *upperTree) verify() error {
	for _, f := range t.files {
		st, err := os.Lstat(f.path)
		if err != nil {
			return fmt.Errorf("%s: %w: %w", f.path, dedup.ErrChanged, err)
		}
		if st.Size() != f.size || !st.ModTime().Equal(f.mtime) {
			return fmt.Errorf("%s: %w", f.path, dedup.ErrChanged)
		}
	}
	return nil
}

// checkXattrs refuses an entry overlayfs redirects or copied up without
// its data.
func (t *upperTree) checkXattrs(p string) error {
	for _, ns := range []string{"trusted.", "user."} {
		if v, ok := getXattr(p, ns+xattrRedirect); ok {
			return fmt.Errorf("%s: renamed directory (%s%s=%q; mount with redirect_dir=off): %w", p, ns, xattrRedirect, v, ErrUpper)
		}
		if _, ok := getXattr(p, ns+xattrMetacopy); ok {
			return fmt.Errorf("%s: metadata-only copy (%s%s; mount with metacopy=off): %w", p, ns, xattrMetacopy, ErrUpper)
		}
	}
	return nil
}

// opaque reports whether upper directory p hides the image's directory.
func (t *upperTree) opaque(p string) (bool, error) {
	for _, ns := range []string{"trusted.", "user."} {
		v, ok := getXattr(p, ns+xattrOpaque)
		switch {
		case !ok:
		case v == "y":
			return true, nil
		default:
			return false, fmt.Errorf("%s: %s%s=%q is not supported: %w", p, ns, xattrOpaque, v, ErrUpper)
		}
	}
	return false, nil
}

// imageFiles reads files of an image for an upper tree's ReaderAts,
// which the scanner's workers call at once.
type imageFiles struct {
	mu    sync.Mutex
	cache *decodedBlocks
}

// imageFile is an image's regular file as an io.ReaderAt.
type imageFile struct {
	files  *imageFiles
	chunks []metadata.ChunkRef
}

func (f *imageFile) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	var pos int64
	for _, c := range f.chunks {
		if n == len(p) {
			break
		}
		end := pos + int64(c.Size)
		if off+int64(n) >= end {
			pos = end
			continue
		}
		from := off + int64(n) - pos
		k := min(int64(len(p)-n), int64(c.Size)-from)
		if c.Hole {
			clear(p[n : n+int(k)])
		} else {
			f.files.mu.Lock()
			d, err := f.files.cache.get(c.Block)
			if err == nil && uint64(c.Offset)+c.Size > uint64(len(d)) {
				err = fmt.Errorf("chunk %d+%d beyond block %d of %d bytes: %w", c.Offset, c.Size, c.Block, len(d), block.ErrCorrupt)
			}
			if err != nil {
				f.files.mu.Unlock()
				return n, err
			}
			copy(p[n:n+int(k)], d[int64(c.Offset)+from:])
			f.files.mu.Unlock()
		}
		n += int(k)
		pos = end
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// lazyFile is an upper directory's file as an io.ReaderAt, opened for
// each read so that a large tree holds no descriptors.
type lazyFile struct{ path string }

func (f *lazyFile) ReadAt(p []byte, off int64) (int, error) {
	fd, err := os.Open(f.path)
	if err != nil {
		return 0, err
	}
	defer fd.Close()
	return fd.ReadAt(p, off)
}

//go:build linux && !386 && !arm

package apprun

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/godwarfs/godwarfs"
)

// extractor writes an image's tree (or the part match selects) below
// dir. It restores what running a program from the tree needs: types,
// permission bits, modification times, symbolic and hard links. Owners
// stay the extracting user's, and devices, fifos and sockets are left
// out.
type extractor struct {
	im    *godwarfs.Image
	dir   string
	match func(p string) bool // nil: everything
	list  io.Writer           // gets each extracted path (nil: none)
	// links maps inodes with several names to the first one extracted.
	links map[uint32]string
	buf   []byte
	// dirs are the directories whose mode and time are set once their
	// entries are in place (a read-only one could not take them).
	dirs []dirAttr
}

type dirAttr struct {
	p     string
	mode  fs.FileMode
	mtime time.Time
}

func extract(im *godwarfs.Image, dir string, match func(string) bool, list io.Writer) error {
	x := &extractor{im: im, dir: dir, match: match, list: list, links: map[uint32]string{}, buf: make([]byte, 1<<20)}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := x.walk("."); err != nil {
		return err
	}
	for i := len(x.dirs) - 1; i >= 0; i-- {
		d := x.dirs[i]
		if err := os.Chmod(d.p, d.mode); err != nil {
			return err
		}
		_ = os.Chtimes(d.p, d.mtime, d.mtime) // best effort, as for files
	}
	return nil
}

func (x *extractor) walk(dir string) error {
	ents, err := x.im.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		p := path.Join(dir, e.Name())
		fi, err := x.im.Lstat(p)
		if err != nil {
			return err
		}
		want := x.match == nil || x.match(p)
		if want {
			if err := x.one(p, fi); err != nil {
				return fmt.Errorf("extracting %s: %w", p, err)
			}
		}
		if fi.IsDir() {
			if err := x.walk(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// one extracts the entry p.
func (x *extractor) one(p string, fi fs.FileInfo) error {
	dst := filepath.Join(x.dir, filepath.FromSlash(p))
	if x.match != nil {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
	}
	st, _ := fi.Sys().(*godwarfs.Stat)
	switch {
	case fi.IsDir():
		if err := os.Mkdir(dst, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		x.dirs = append(x.dirs, dirAttr{dst, fi.Mode().Perm(), fi.ModTime()})
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := x.im.ReadLink(p)
		if err != nil {
			return err
		}
		if err := replace(dst); err != nil {
			return err
		}
		if err := os.Symlink(target, dst); err != nil {
			return err
		}
	case fi.Mode().IsRegular():
		if err := replace(dst); err != nil {
			return err
		}
		if st != nil && st.Nlink > 1 {
			if first, ok := x.links[st.Ino]; ok {
				return os.Link(first, dst)
			}
			x.links[st.Ino] = dst
		}
		if err := x.file(p, dst, fi); err != nil {
			return err
		}
	default:
		return nil // devices, fifos, sockets
	}
	if x.list != nil {
		fmt.Fprintln(x.list, filepath.Join(filepath.Base(x.dir), filepath.FromSlash(p)))
	}
	return nil
}

// file writes the regular file p to dst.
func (x *extractor) file(p, dst string, fi fs.FileInfo) error {
	src, err := x.im.Open(p)
	if err != nil {
		return err
	}
	defer src.Close()
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.CopyBuffer(f, src, x.buf); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(fi.Mode().Perm()); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	_ = os.Chtimes(dst, fi.ModTime(), fi.ModTime())
	return nil
}

// replace removes a non-directory at dst, so that extracting over an
// earlier extraction replaces its files.
func replace(dst string) error {
	fi, err := os.Lstat(dst)
	if err != nil {
		return nil
	}
	if fi.IsDir() {
		return fmt.Errorf("%s: %w", dst, fs.ErrExist)
	}
	return os.Remove(dst)
}

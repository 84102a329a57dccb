package mkimage

import (
	"bytes"
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/godwarfs/godwarfs"
)

// TestRootReader reads an image back through the public reader package
// (godwarfs.Open) instead of block+metadata.
func TestRootReader(t *testing.T) {
	src := makeTree(t)
	want := expected(t, src)
	img := filepath.Join(t.TempDir(), "r.dwarfs")
	mk(t, "-i", src, "-o", img, "-l", "5", "-S", "16", "--time-resolution", "ns", "--log-level", "warn")
	im, err := godwarfs.Open(img, nil)
	if err != nil {
		t.Fatalf("godwarfs.Open: %v", err)
	}
	defer im.Close()
	got := map[string]node{}
	err = fs.WalkDir(im, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := im.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*godwarfs.Stat)
		rel := p
		if rel == "." {
			rel = ""
		}
		n := node{mode: st.Mode, uid: st.Uid, gid: st.Gid, size: st.Size, mtime: st.Mtime, nlink: st.Nlink,
			inoKey: string(rune(st.Ino)), rdev: st.Rdev}
		switch {
		case fi.Mode().IsRegular():
			b, err := im.ReadFile(p)
			if err != nil {
				return err
			}
			n.content = sha256.Sum256(b)
			if wb, _ := os.ReadFile(filepath.Join(src, p)); !bytes.Equal(wb, b) {
				t.Errorf("%s: content differs", p)
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			if n.target, err = im.ReadLink(p); err != nil {
				return err
			}
		}
		got[rel] = n
		return nil
	})
	if err != nil {
		t.Fatalf("walk: %v", err)
	}
	compareTrees(t, want, got, cmpOpts{subsec: true})
}

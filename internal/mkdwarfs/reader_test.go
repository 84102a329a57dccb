//go:build unix

package mkdwarfs

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"syscall"
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
	got := map[string]node{}
	walkImage(t, img, func(p string, st *godwarfs.Stat, data []byte, target string) {
		rel := p
		if rel == "." {
			rel = ""
		}
		n := node{mode: st.Mode, uid: st.Uid, gid: st.Gid, size: st.Size, mtime: st.Mtime, nlink: st.Nlink,
			inoKey: string(rune(st.Ino)), rdev: st.Rdev, target: target}
		if st.Mode&syscall.S_IFMT == syscall.S_IFREG {
			n.content = sha256.Sum256(data)
			if wb, _ := os.ReadFile(filepath.Join(src, p)); !bytes.Equal(wb, data) {
				t.Errorf("%s: content differs", p)
			}
		}
		got[rel] = n
	})
	compareTrees(t, want, got, cmpOpts{subsec: true})
}

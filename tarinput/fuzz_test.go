package tarinput

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/dedup"
)

// FuzzReadTree reads arbitrary bytes as an archive, from a pipe and in
// place: it must fail cleanly or give a tree whose names are local and
// whose file data lies within what was read.
func FuzzReadTree(f *testing.F) {
	t0 := time.Unix(1700000000, 5)
	for _, ms := range [][]member{
		{reg("a/b", "hello"), {h: tar.Header{Name: "a/c", Typeflag: tar.TypeLink, Linkname: "a/b"}}},
		{dir("d/", 0o755, t0), {h: tar.Header{Name: "s", Typeflag: tar.TypeSymlink, Linkname: "/x", ModTime: t0}}, reg("d", "over")},
		{{h: tar.Header{Name: "f", Typeflag: tar.TypeFifo, ModTime: t0, PAXRecords: map[string]string{"SCHILY.xattr.user.x": "1"}}}},
	} {
		f.Add(makeTar(f, tar.FormatPAX, ms))
	}
	f.Add(makeTar(f, tar.FormatGNU, []member{reg("/g/h", "gnu"), dir("g", 0o700, t0)}))
	f.Add(bytes.Repeat([]byte{0}, 1024))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(how string, root *dedup.TreeNode, err error) {
			if err != nil {
				if !strings.Contains(err.Error(), "in.tar") {
					t.Fatalf("%s: the error does not name the archive: %v", how, err)
				}
				return
			}
			var walk func(n *dedup.TreeNode)
			walk = func(n *dedup.TreeNode) {
				if n.Name == "." || n.Name == ".." || strings.Contains(n.Name, "/") {
					t.Fatalf("%s: bad name %q", how, n.Name)
				}
				if n.Mode&syscall.S_IFMT == syscall.S_IFREG && n.Link == nil {
					b := make([]byte, n.Size)
					if k, err := n.Data.R.ReadAt(b, n.Data.Off); int64(k) != n.Size {
						t.Fatalf("%s: %s: %d of %d bytes: %v", how, n.Name, k, n.Size, err)
					}
				}
				for _, c := range n.Children {
					walk(c)
				}
			}
			walk(root)
		}
		s := New("in.tar", bytes.NewReader(data), Options{MemoryLimit: 4096, TempDir: dir})
		root, err := s.ReadTree(context.Background(), nil, nil)
		check("pipe", root, err)
		s.Close()
		p := filepath.Join(dir, "in.tar")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		s = New("in.tar", fh, Options{MemoryLimit: 4096, TempDir: dir})
		root, err = s.ReadTree(context.Background(), nil, func(string, ...any) {})
		check("in place", root, err)
		s.Close()
	})
}

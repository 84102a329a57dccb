//go:build linux

package ociinput

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/tarinput"
)

// randomLayers makes layers of random changes over a few paths: files,
// directories, symlinks, hard links, whiteouts and opaque directories,
// each layer naming the parents of what it adds, as image builders do.
func randomLayers(t testing.TB, seed uint64, n int) [][]byte {
	rnd := rand.New(rand.NewPCG(seed, 1))
	paths := []string{"a", "a/b", "a/b/c", "a/d", "e", "e/f", "e/f/g", "h"}
	var out [][]byte
	for l := range n {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		t0 := time.Unix(1700000000+int64(l)*100, 0)
		files := map[string]bool{} // regular files of this layer, for hard links
		dirs := map[string]bool{}
		kinds := map[string]byte{}
		parents := func(p string) bool {
			d := filepath.Dir(p)
			if d == "." || dirs[d] {
				return true
			}
			if k, ok := kinds[d]; ok && k != tar.TypeDir {
				return false
			}
			if !parentsOK(kinds, d) {
				return false
			}
			var rec func(string)
			rec = func(q string) {
				if q == "." || dirs[q] {
					return
				}
				rec(filepath.Dir(q))
				dirs[q], kinds[q] = true, tar.TypeDir
				tw.WriteHeader(&tar.Header{Name: q + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: t0})
			}
			rec(d)
			return true
		}
		for range 4 + rnd.IntN(10) {
			p := paths[rnd.IntN(len(paths))]
			if !parents(p) {
				continue
			}
			if k, ok := kinds[p]; ok && k == tar.TypeDir {
				continue // keep each layer a plain tree: no replacements within it
			}
			if _, ok := kinds[p]; ok {
				continue
			}
			h := &tar.Header{Name: p, Mode: int64(0o600 | rnd.IntN(0o200)), ModTime: t0.Add(time.Duration(rnd.IntN(50)) * time.Second)}
			switch r := rnd.IntN(10); {
			case r < 3:
				data := strings.Repeat(fmt.Sprint(l, p), 1+rnd.IntN(3))
				h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
				tw.WriteHeader(h)
				io.WriteString(tw, data)
				files[p] = true
			case r < 5:
				h.Typeflag, h.Mode = tar.TypeDir, 0o755
				h.Name += "/"
				tw.WriteHeader(h)
				dirs[p] = true
			case r < 6:
				h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, paths[rnd.IntN(len(paths))], 0o777
				tw.WriteHeader(h)
			case r < 7 && len(files) > 0:
				var fl []string
				for f := range files {
					fl = append(fl, f)
				}
				sort.Strings(fl)
				h.Typeflag, h.Linkname = tar.TypeLink, fl[rnd.IntN(len(fl))]
				tw.WriteHeader(h)
			case r < 9:
				tw.WriteHeader(&tar.Header{Name: filepath.Join(filepath.Dir(p), ".wh."+filepath.Base(p)), Typeflag: tar.TypeReg, ModTime: t0})
			default:
				if !dirs[p] {
					h.Typeflag, h.Mode = tar.TypeDir, 0o755
					h.Name += "/"
					tw.WriteHeader(h)
					dirs[p] = true
				}
				tw.WriteHeader(&tar.Header{Name: p + "/.wh..wh..opq", Typeflag: tar.TypeReg, ModTime: t0})
			}
			if _, ok := kinds[p]; !ok {
				kinds[p] = h.Typeflag
			}
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		out = append(out, buf.Bytes())
	}
	return out
}

func parentsOK(kinds map[string]byte, d string) bool {
	for q := d; q != "."; q = filepath.Dir(q) {
		if k, ok := kinds[q]; ok && k != tar.TypeDir {
			return false
		}
	}
	return true
}

// listTree renders a tree read by Layers; listDir the same of a
// directory on disk. Directory times are left out: umoci sets a
// directory's time to the time of unpacking when a whiteout removes
// something from it.
func listTree(t testing.TB, root *dedup.TreeNode) string {
	var lines []string
	first := map[*dedup.TreeNode]string{}
	var walk func(n *dedup.TreeNode, p string)
	walk = func(n *dedup.TreeNode, p string) {
		src := n
		if n.Link != nil {
			src = n.Link
		}
		l := fmt.Sprintf("%s %o", p, src.Mode)
		switch src.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			b := make([]byte, src.Size)
			if src.Size > 0 {
				if _, err := src.Data.R.ReadAt(b, src.Data.Off); err != nil && err != io.EOF {
					t.Fatal(err)
				}
			}
			l += fmt.Sprintf(" m=%d %q", src.Mtime.Unix(), b)
			if f, ok := first[src]; ok {
				l += " =" + f
			} else {
				first[src] = p
			}
		case syscall.S_IFLNK:
			l += fmt.Sprintf(" m=%d -> %s", src.Mtime.Unix(), src.Target)
		}
		lines = append(lines, l)
		for _, c := range n.Children {
			walk(c, p+"/"+c.Name)
		}
	}
	walk(root, "")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func listDir(t testing.TB, dir string) string {
	var lines []string
	first := map[uint64]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(path, dir)
		var st syscall.Stat_t
		if err := syscall.Lstat(path, &st); err != nil {
			return err
		}
		l := fmt.Sprintf("%s %o", rel, st.Mode)
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			l += fmt.Sprintf(" m=%d %q", st.Mtim.Sec, b)
			if f, ok := first[st.Ino]; ok {
				l += " =" + f
			} else {
				first[st.Ino] = rel
			}
		case syscall.S_IFLNK:
			target, _ := os.Readlink(path)
			l += fmt.Sprintf(" m=%d -> %s", st.Mtim.Sec, target)
		}
		lines = append(lines, l)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestAgainstUmoci stacks random layers and compares the tree with what
// umoci unpack makes of the same image.
func TestAgainstUmoci(t *testing.T) {
	bin, err := exec.LookPath("umoci")
	if err != nil {
		if os.Getenv("GODWARFS_REQUIRE_NO_SKIP") == "1" {
			t.Fatal("umoci (Debian's umoci) is not installed")
		}
		t.Skip("skipped: umoci (Debian's umoci) is not installed")
	}
	// 40 stacks of 2 to 6 layers, then 3 deep ones (21, 25 and 29
	// layers), where each path is replaced, whited out and brought back
	// many times over.
	for seed := range uint64(43) {
		layers := 2 + int(seed%5)
		if seed >= 40 {
			layers = 21 + 4*int(seed-40)
		}
		t.Run(fmt.Sprintf("%d-%dlayers", seed, layers), func(t *testing.T) {
			img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
			for _, b := range randomLayers(t, seed, layers) {
				l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, tarball.WithMediaType(types.OCILayer))
				if err != nil {
					t.Fatal(err)
				}
				if img, err = mutate.AppendLayers(img, l); err != nil {
					t.Fatal(err)
				}
			}
			cf, _ := img.ConfigFile()
			cf = cf.DeepCopy()
			cf.OS, cf.Architecture = "linux", runtime.GOARCH
			img, err = mutate.ConfigFile(img, cf)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			p, err := layout.Write(filepath.Join(dir, "layout"), empty.Index)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{refName: "t"})); err != nil {
				t.Fatal(err)
			}
			bundle := filepath.Join(dir, "bundle")
			if out, err := exec.Command(bin, "unpack", "--rootless", "--image", filepath.Join(dir, "layout")+":t", bundle).CombinedOutput(); err != nil {
				t.Fatalf("umoci unpack: %v\n%s", err, out)
			}
			im, err := Open(context.Background(), "oci:"+filepath.Join(dir, "layout")+":t", Options{Tar: tarinput.Options{TempDir: dir}})
			if err != nil {
				t.Fatal(err)
			}
			defer im.Close()
			root, err := im.Source().ReadTree(context.Background(), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, want := listTree(t, root), listDir(t, filepath.Join(bundle, "rootfs"))
			if os.Getenv("SHOWTREE") != "" {
				t.Logf("%s", got)
			}
			if got != want {
				t.Fatalf("got\n%s\numoci unpack made\n%s", got, want)
			}
		})
	}
}

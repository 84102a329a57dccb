package tarinput

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/dedup"
)

// refEntry is a path of the reference model of layer application.
type refEntry struct {
	typ      byte // tar type flag
	mode     int64
	uid, gid int
	mtime    time.Time
	target   string
	data     *string // shared by hard links
	layer    int
}

// refApply applies layers from the bottom up, the plain way the OCI
// image spec describes it, independently of Layers: first a layer's
// whiteouts remove lower content, then its members apply in order.
func refApply(layers [][]member) (map[string]*refEntry, error) {
	fs := map[string]*refEntry{"": {typ: tar.TypeDir, mode: 0o755}}
	removeTree := func(p string, keep bool) {
		for q := range fs {
			if (q == p && !keep) || (p == "" && q != "") || strings.HasPrefix(q, p+"/") {
				delete(fs, q)
			}
		}
	}
	clean := func(n string) string { return strings.Trim(path.Clean("/"+n), "/") }
	for j, ms := range layers {
		for _, m := range ms {
			p := clean(m.h.Name)
			dir, base := path.Split(p)
			dir = strings.TrimSuffix(dir, "/")
			if !strings.HasPrefix(base, ".wh.") {
				continue
			}
			if base == ".wh..wh..opq" {
				if e := fs[dir]; e != nil && e.typ == tar.TypeDir {
					removeTree(dir, true)
				}
			} else if !strings.HasPrefix(base, ".wh..wh.") && base != ".wh." {
				removeTree(path.Join(dir, base[4:]), false)
			}
		}
		own := map[string]*refEntry{}
		for _, m := range ms {
			p := clean(m.h.Name)
			if strings.HasPrefix(path.Base(p), ".wh.") {
				continue
			}
			e := &refEntry{typ: m.h.Typeflag, mode: m.h.Mode & 0o7777, uid: m.h.Uid, gid: m.h.Gid, mtime: m.h.ModTime, target: m.h.Linkname, layer: j}
			switch m.h.Typeflag {
			case tar.TypeReg:
				d := m.data
				e.data = &d
			case tar.TypeLink:
				t := own[clean(m.h.Linkname)]
				if t == nil {
					return nil, fmt.Errorf("layer %d: %s: no link target", j, p)
				}
				c := *t
				e = &c
				e.layer = j
			}
			parts := strings.Split(p, "/")
			for i := range parts[:len(parts)-1] {
				q := strings.Join(parts[:i+1], "/")
				par := fs[q]
				if par != nil && par.typ == tar.TypeDir {
					continue
				}
				if par != nil && par.layer == j {
					return nil, fmt.Errorf("layer %d: %s: not a directory", j, q)
				}
				fs[q] = &refEntry{typ: tar.TypeDir, mode: 0o755, uid: e.uid, gid: e.gid, mtime: e.mtime, layer: j}
			}
			if old := fs[p]; old != nil && old.typ == tar.TypeDir && e.typ == tar.TypeDir {
				old.mode, old.uid, old.gid, old.mtime, old.layer = e.mode, e.uid, e.gid, e.mtime, j
				delete(own, p)
				continue
			}
			removeTree(p, false)
			fs[p] = e
			if e.typ == tar.TypeDir {
				delete(own, p)
			} else {
				own[p] = e
			}
		}
	}
	return fs, nil
}

func secs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

func renderRef(fs map[string]*refEntry) string {
	var paths []string
	for p := range fs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	first := map[*string]string{}
	var lines []string
	for _, p := range paths {
		e := fs[p]
		l := fmt.Sprintf("/%s %c %o %d:%d m=%d", p, e.typ, e.mode, e.uid, e.gid, secs(e.mtime))
		switch e.typ {
		case tar.TypeReg, tar.TypeLink:
			l = fmt.Sprintf("/%s 0 %o %d:%d m=%d %q", p, e.mode, e.uid, e.gid, secs(e.mtime), *e.data)
			if f, ok := first[e.data]; ok {
				l += " =" + f
			} else {
				first[e.data] = "/" + p
			}
		case tar.TypeSymlink:
			l += " -> " + e.target
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

func renderTree(t testing.TB, root *dedup.TreeNode) string {
	t.Helper()
	var lines []string
	first := map[*dedup.TreeNode]string{}
	var walk func(n *dedup.TreeNode, p string)
	walk = func(n *dedup.TreeNode, p string) {
		src := n
		if n.Link != nil {
			src = n.Link
		}
		typ := map[uint32]byte{syscall.S_IFDIR: tar.TypeDir, syscall.S_IFREG: '0', syscall.S_IFLNK: tar.TypeSymlink,
			syscall.S_IFIFO: tar.TypeFifo, syscall.S_IFCHR: tar.TypeChar, syscall.S_IFBLK: tar.TypeBlock}[src.Mode&syscall.S_IFMT]
		l := fmt.Sprintf("/%s %c %o %d:%d m=%d", p, typ, src.Mode&0o7777, src.UID, src.GID, secs(src.Mtime))
		switch typ {
		case '0':
			b := make([]byte, src.Size)
			if _, err := src.Data.R.ReadAt(b, src.Data.Off); err != nil && !(err == io.EOF && src.Size == 0) {
				t.Fatalf("%s: %v", p, err)
			}
			l += fmt.Sprintf(" %q", b)
			if f, ok := first[src]; ok {
				l += " =" + f
			} else {
				first[src] = "/" + p
			}
		case tar.TypeSymlink:
			l += " -> " + src.Target
		}
		if strings.HasPrefix(n.Name, ".wh.") {
			t.Fatalf("whiteout %s in the tree", p)
		}
		lines = append(lines, l)
		for _, c := range n.Children {
			q := c.Name
			if p != "" {
				q = p + "/" + c.Name
			}
			walk(c, q)
		}
	}
	walk(root, "")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// memLayers makes Layers of in-memory archives; inPlace puts each in a
// file read in place.
func memLayers(t testing.TB, archives [][]byte, inPlace bool) []Layer {
	t.Helper()
	var out []Layer
	for i, a := range archives {
		a := a
		l := Layer{Name: fmt.Sprintf("sha256:layer%d", i), Open: func(context.Context) (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(a)), nil
		}}
		if inPlace {
			p := filepath.Join(t.TempDir(), "layer")
			if err := os.WriteFile(p, append(bytes.Repeat([]byte{'x'}, 100), a...), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			l.File, l.Offset, l.Size = f, 100, int64(len(a))
		}
		out = append(out, l)
	}
	return out
}

func readLayers(t testing.TB, layers [][]member, inPlace bool) (string, error) {
	t.Helper()
	var archives [][]byte
	for _, ms := range layers {
		archives = append(archives, makeTar(t, tar.FormatPAX, ms))
	}
	src := NewLayers(memLayers(t, archives, inPlace), Options{MemoryLimit: 64, TempDir: t.TempDir()})
	defer src.Close()
	root, err := src.ReadTree(context.Background(), nil, nil)
	if err != nil {
		return "", err
	}
	return renderTree(t, root), nil
}

func at(name string, typ byte, mode int64, uid int, sec int64) tar.Header {
	return tar.Header{Name: name, Typeflag: typ, Mode: mode, Uid: uid, Gid: uid, ModTime: time.Unix(sec, 0)}
}

func TestLayers(t *testing.T) {
	f := func(name, data string, sec int64) member {
		return member{h: at(name, tar.TypeReg, 0o644, 1, sec), data: data}
	}
	d := func(name string, sec int64) member { return member{h: at(name, tar.TypeDir, 0o750, 2, sec)} }
	wh := func(name string) member { return member{h: at(name, tar.TypeReg, 0, 0, 0)} }
	ln := func(name, target string) member {
		h := at(name, tar.TypeLink, 0, 0, 0)
		h.Linkname = target
		return member{h: h}
	}
	sl := func(name, target string) member {
		h := at(name, tar.TypeSymlink, 0o777, 3, 5)
		h.Linkname = target
		return member{h: h}
	}
	for _, tc := range []struct {
		name   string
		layers [][]member
		want   string
	}{
		{"whiteout", [][]member{
			{d("etc/", 1), f("etc/a", "A", 1), f("etc/b", "B", 1)},
			{d("etc/", 2), wh("etc/.wh.a")},
		}, "/ 5 755 0:0 m=0\n/etc 5 750 2:2 m=2\n/etc/b 0 644 1:1 m=1 \"B\""},
		{"opaque", [][]member{
			{d("d/", 1), f("d/x", "X", 1), d("d/sub/", 1), f("d/sub/y", "Y", 1)},
			{d("d/", 2), wh("d/.wh..wh..opq"), f("d/z", "Z", 2)},
		}, "/ 5 755 0:0 m=0\n/d 5 750 2:2 m=2\n/d/z 0 644 1:1 m=2 \"Z\""},
		{"file replaces dir", [][]member{
			{d("p/", 1), f("p/x", "X", 1)},
			{f("p", "file", 2)},
		}, "/ 5 755 0:0 m=0\n/p 0 644 1:1 m=2 \"file\""},
		{"dir replaces file", [][]member{
			{f("p", "file", 1)},
			{d("p/", 2), f("p/y", "Y", 2)},
		}, "/ 5 755 0:0 m=0\n/p 5 750 2:2 m=2\n/p/y 0 644 1:1 m=2 \"Y\""},
		{"hidden link target", [][]member{
			{f("t", "data", 1), ln("l", "t"), ln("l2", "l")},
			{wh(".wh.t")},
		}, "/ 5 755 0:0 m=0\n/l 0 644 1:1 m=1 \"data\"\n/l2 0 644 1:1 m=1 \"data\" =/l"},
		{"whiteout and entry in one layer", [][]member{
			{d("d/", 1), f("d/old", "O", 1)},
			{wh(".wh.d"), d("d/", 2), f("d/new", "N", 2), sl("s", "d/new")},
		}, "/ 5 755 0:0 m=0\n/d 5 750 2:2 m=2\n/d/new 0 644 1:1 m=2 \"N\"\n/s 2 777 3:3 m=5 -> d/new"},
		{"lower dir attributes under implicit", [][]member{
			{d("a/", 7)},
			{f("a/b", "B", 9)},
		}, "/ 5 755 0:0 m=0\n/a 5 750 2:2 m=7\n/a/b 0 644 1:1 m=9 \"B\""},
	} {
		for _, inPlace := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/inplace=%v", tc.name, inPlace), func(t *testing.T) {
				got, err := readLayers(t, tc.layers, inPlace)
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
				}
				ref, err := refApply(tc.layers)
				if err != nil {
					t.Fatal(err)
				}
				if r := renderRef(ref); r != got {
					t.Fatalf("the reference model gives\n%s\nlayers gave\n%s", r, got)
				}
			})
		}
	}
}

func TestLayersErrors(t *testing.T) {
	good := makeTar(t, tar.FormatPAX, []member{{h: at("a", tar.TypeReg, 0o644, 0, 1), data: "abc"}})
	linkOut := makeTar(t, tar.FormatPAX, []member{{h: tar.Header{Name: "l", Typeflag: tar.TypeLink, Linkname: "a"}}})
	bad := append([]byte(nil), good[:514]...)
	for _, tc := range []struct {
		name string
		l    []Layer
		want string
	}{
		{"link into another layer", memLayers(t, [][]byte{good, linkOut}, false), "layer sha256:layer1: member l at offset 0: hard link to a, which is not a file of the layer before it"},
		{"truncated", memLayers(t, [][]byte{bad}, false), "layer sha256:layer0: member a at offset 0: data ends early"},
		{"open fails", []Layer{{Name: "sha256:gone", Open: func(context.Context) (io.ReadCloser, error) {
			return nil, errors.New("blob missing")
		}}}, "layer sha256:gone: blob missing"},
		{"digest", []Layer{{Name: "sha256:d", Open: func(context.Context) (io.ReadCloser, error) {
			return io.NopCloser(io.MultiReader(bytes.NewReader(good), &errReader{errors.New("digest mismatch")})), nil
		}}}, "layer sha256:d: digest mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := NewLayers(tc.l, Options{TempDir: t.TempDir()})
			defer src.Close()
			_, err := src.ReadTree(context.Background(), nil, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

type errReader struct{ err error }

func (e *errReader) Read([]byte) (int, error) { return 0, e.err }

// fuzzLayers turns bytes into layers over a few paths.
func fuzzLayers(data []byte) [][]member {
	paths := []string{"a", "a/b", "a/b/c", "a/d", "e", "e/f"}
	layers := [][]member{{}}
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	for len(data) > 0 && len(layers) <= 6 {
		op, p, x := next(), paths[int(next())%len(paths)], next()
		h := at(p, tar.TypeReg, 0o600|int64(x&0o77), int(x%3), int64(x%5))
		var m member
		switch op % 9 {
		case 0:
			layers = append(layers, nil)
			continue
		case 1:
			m = member{h: h, data: strings.Repeat(string('A'+rune(x%26)), int(x%7))}
		case 2:
			h.Typeflag = tar.TypeDir
			m = member{h: h}
		case 3:
			h.Typeflag, h.Linkname = tar.TypeSymlink, paths[int(x)%len(paths)]
			m = member{h: h}
		case 4:
			m = member{h: at(path.Join(path.Dir(p), ".wh."+path.Base(p)), tar.TypeReg, 0, 0, 0)}
		case 5:
			m = member{h: at(p+"/.wh..wh..opq", tar.TypeReg, 0, 0, 0)}
		case 6:
			h.Typeflag, h.Linkname = tar.TypeLink, paths[int(x)%len(paths)]
			m = member{h: h}
		case 7:
			h.Typeflag = tar.TypeFifo
			m = member{h: h}
		case 8:
			m = member{h: h, data: strings.Repeat("z", int(x))}
		}
		layers[len(layers)-1] = append(layers[len(layers)-1], m)
	}
	return layers
}

// FuzzLayers applies fuzzed layer stacks with whiteouts, opaque
// directories, replacements and hard links: the tree must be what the
// bottom-up reference model gives (no whiteout in it), or both fail.
func FuzzLayers(f *testing.F) {
	f.Add([]byte{1, 0, 3, 2, 1, 0, 0, 4, 1, 1, 2, 2, 5})
	f.Add([]byte{2, 0, 1, 1, 2, 9, 0, 6, 1, 0, 4, 0, 0})
	f.Add([]byte{1, 2, 1, 6, 3, 2, 0, 4, 2, 1, 1, 5, 0, 5, 0, 2, 0, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		layers := fuzzLayers(data)
		ref, rerr := refApply(layers)
		for _, inPlace := range []bool{false, true} {
			got, err := readLayers(t, layers, inPlace)
			if (err != nil) != (rerr != nil) {
				t.Fatalf("layers: %v, reference: %v\n%+v", err, rerr, layers)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "layer sha256:layer") {
					t.Fatalf("the error does not name the layer: %v", err)
				}
				continue
			}
			if want := renderRef(ref); got != want {
				t.Fatalf("inPlace=%v: got\n%s\nreference\n%s\nlayers %+v", inPlace, got, want, layers)
			}
		}
	})
}

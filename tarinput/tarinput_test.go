package tarinput

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/godwarfs/godwarfs/internal/mmap"

	"github.com/godwarfs/godwarfs/dedup"
)

// member is one archive member to write.
type member struct {
	h    tar.Header
	data string
}

func makeTar(t testing.TB, format tar.Format, ms []member) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range ms {
		h := m.h
		h.Format = format
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(m.data))
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(m.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// listing renders a tree, one line an entry, with the file contents.
func listing(t testing.TB, root *dedup.TreeNode) string {
	t.Helper()
	var lines []string
	var walk func(n *dedup.TreeNode, p string)
	walk = func(n *dedup.TreeNode, p string) {
		src := n
		link := ""
		if n.Link != nil {
			src, link = n.Link, " link"
		}
		l := fmt.Sprintf("%s %o %d:%d m=%d.%09d%s", p, src.Mode, src.UID, src.GID, src.Mtime.Unix(), src.Mtime.Nanosecond(), link)
		switch src.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			b := make([]byte, src.Size)
			if _, err := src.Data.R.ReadAt(b, src.Data.Off); err != nil && !(err == io.EOF && src.Size == 0) {
				t.Fatalf("%s: %v", p, err)
			}
			l += fmt.Sprintf(" %q", b)
			if src.Data.Extents != nil {
				l += fmt.Sprintf(" extents=%v", src.Data.Extents)
			}
		case syscall.S_IFLNK:
			l += " -> " + src.Target
		case syscall.S_IFCHR, syscall.S_IFBLK:
			l += fmt.Sprintf(" rdev=%d", src.Rdev)
		}
		lines = append(lines, l)
		if !sort.SliceIsSorted(n.Children, func(i, j int) bool { return n.Children[i].Name < n.Children[j].Name }) {
			t.Errorf("%s: children not sorted", p)
		}
		for _, c := range n.Children {
			walk(c, p+"/"+c.Name)
		}
	}
	walk(root, "")
	return strings.Join(lines, "\n")
}

func readTree(t testing.TB, r io.Reader, opt Options) (string, []string, error) {
	t.Helper()
	s := New("test.tar", r, opt)
	defer s.Close()
	var warns []string
	root, err := s.ReadTree(context.Background(), nil, func(f string, a ...any) { warns = append(warns, fmt.Sprintf(f, a...)) })
	if err != nil {
		return "", warns, err
	}
	return listing(t, root), warns, nil
}

var t0 = time.Unix(1700000000, 123456789)

func reg(name, data string) member {
	return member{tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Uid: 1, Gid: 2, ModTime: t0}, data}
}

func dir(name string, mode int64, mt time.Time) member {
	return member{h: tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: mode, Uid: 3, Gid: 4, ModTime: mt}}
}

func TestReadTree(t *testing.T) {
	later := t0.Add(90 * time.Second)
	for _, tc := range []struct {
		name    string
		format  tar.Format
		members []member
		want    string
		err     string
		warn    string
	}{
		{
			name:   "all types, implicit parents, sub-second times",
			format: tar.FormatPAX,
			members: []member{
				reg("a/b/f", "data"),
				{h: tar.Header{Name: "a/b/g", Typeflag: tar.TypeLink, Linkname: "a/b/f"}},
				{h: tar.Header{Name: "sym", Typeflag: tar.TypeSymlink, Linkname: "../x", Mode: 0o777, ModTime: t0}},
				{h: tar.Header{Name: "dev/null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3, Mode: 0o666, ModTime: t0}},
				{h: tar.Header{Name: "dev/sda", Typeflag: tar.TypeBlock, Devmajor: 8, Devminor: 0, Mode: 0o660, ModTime: t0}},
				{h: tar.Header{Name: "fifo", Typeflag: tar.TypeFifo, Mode: 0o4600, ModTime: t0}},
				dir("e/", 0o700, later),
			},
			want: `` + " 40755 1:2 m=1700000000.123456789\n" +
				"/a 40755 1:2 m=1700000000.123456789\n" +
				"/a/b 40755 1:2 m=1700000000.123456789\n" +
				"/a/b/f 100644 1:2 m=1700000000.123456789 \"data\"\n" +
				"/a/b/g 100644 1:2 m=1700000000.123456789 link \"data\"\n" +
				"/dev 40755 0:0 m=1700000000.123456789\n" +
				"/dev/null 20666 0:0 m=1700000000.123456789 rdev=259\n" +
				"/dev/sda 60660 0:0 m=1700000000.123456789 rdev=2048\n" +
				"/e 40700 3:4 m=1700000090.123456789\n" +
				"/fifo 14600 0:0 m=1700000000.123456789\n" +
				"/sym 120777 0:0 m=1700000000.123456789 -> ../x",
		},
		{
			name:   "GNU format, root member, leading slashes",
			format: tar.FormatGNU,
			members: []member{
				dir("./", 0o750, t0.Truncate(time.Second)),
				reg("/abs/f", "x"),
				reg("./rel//./g", "y"),
			},
			want: " 40750 3:4 m=1700000000.000000000\n" +
				"/abs 40755 1:2 m=1700000000.000000000\n" +
				"/abs/f 100644 1:2 m=1700000000.000000000 \"x\"\n" +
				"/rel 40755 1:2 m=1700000000.000000000\n" +
				"/rel/g 100644 1:2 m=1700000000.000000000 \"y\"",
			warn: "removing leading '/'",
		},
		{
			name:   "later members replace earlier ones",
			format: tar.FormatPAX,
			members: []member{
				reg("d/keep", "k"),
				reg("f", "old"),
				{h: tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "f"}},
				reg("f", "new"),
				dir("d", 0o711, later),
				reg("x/y", "gone"),
				reg("x", "file over a directory"),
			},
			want: " 40755 1:2 m=1700000000.123456789\n" +
				"/d 40711 3:4 m=1700000090.123456789\n" +
				"/d/keep 100644 1:2 m=1700000000.123456789 \"k\"\n" +
				"/f 100644 1:2 m=1700000000.123456789 \"new\"\n" +
				"/h 100644 1:2 m=1700000000.123456789 link \"old\"\n" +
				"/x 100644 1:2 m=1700000000.123456789 \"file over a directory\"",
		},
		{
			name:   "xattrs and ACLs dropped with a count",
			format: tar.FormatPAX,
			members: []member{{h: tar.Header{Name: "f", Typeflag: tar.TypeReg, Mode: 0o600, ModTime: t0,
				PAXRecords: map[string]string{"SCHILY.xattr.user.a": "1", "SCHILY.xattr.user.b": "2", "SCHILY.acl.access": "u::rw-"}}}},
			want: " 40755 0:0 m=1700000000.123456789\n/f 100600 0:0 m=1700000000.123456789 \"\"",
			warn: "dropped 3 extended attributes and ACLs",
		},
		{name: "dot-dot", format: tar.FormatPAX, members: []member{reg("ok", ""), reg("a/../../etc/passwd", "x")},
			err: "member a/../../etc/passwd at offset 1536: name contains '..'"},
		{name: "hard link to a missing member", format: tar.FormatPAX,
			members: []member{{h: tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "nowhere"}}},
			err:     "member h at offset 0: hard link to nowhere, which is not in the archive"},
		{name: "hard link to a directory", format: tar.FormatPAX,
			members: []member{dir("d", 0o755, t0), {h: tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "d"}}},
			err:     "hard link to the directory d"},
		{name: "parent not a directory", format: tar.FormatPAX, members: []member{reg("f", "x"), reg("f/g", "y")},
			err: "member f/g at offset 2048: f is not a directory"},
		{name: "root not a directory", format: tar.FormatPAX, members: []member{reg(".", "x")},
			err: "the archive root is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			arch := makeTar(t, tc.format, tc.members)
			got, warns, err := readTree(t, bytes.NewReader(arch), Options{})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("tree:\n%s\nwant:\n%s", got, tc.want)
			}
			if w := strings.Join(warns, "\n"); tc.warn != "" && !strings.Contains(w, tc.warn) || tc.warn == "" && w != "" {
				t.Errorf("warnings %q, want %q", w, tc.warn)
			}
		})
	}
}

// TestSources reads one archive in place, from a pipe, compressed four
// ways and through a spill file, and gets the same tree each time.
func TestSources(t *testing.T) {
	var ms []member
	for i := range 40 {
		ms = append(ms, reg(fmt.Sprintf("d%d/f%d", i%3, i), strings.Repeat(fmt.Sprint(i), 997*i)))
	}
	arch := makeTar(t, tar.FormatPAX, ms)
	dir := t.TempDir()
	plain := filepath.Join(dir, "a.tar")
	if err := os.WriteFile(plain, arch, 0o644); err != nil {
		t.Fatal(err)
	}
	want, _, err := readTree(t, bytes.NewReader(arch), Options{})
	if err != nil {
		t.Fatal(err)
	}
	compress := map[string]func(io.Writer) io.WriteCloser{
		"gzip": func(w io.Writer) io.WriteCloser { return gzip.NewWriter(w) },
		"zstd": func(w io.Writer) io.WriteCloser { z, _ := zstd.NewWriter(w); return z },
		"xz":   func(w io.Writer) io.WriteCloser { z, _ := xz.NewWriter(w); return z },
	}
	inputs := map[string][]byte{}
	for name, c := range compress {
		var buf bytes.Buffer
		w := c(&buf)
		w.Write(arch)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		inputs[name] = buf.Bytes()
	}
	if bz, err := exec.LookPath("bzip2"); err == nil {
		out, err := exec.Command(bz, "-c", plain).Output()
		if err != nil {
			t.Fatal(err)
		}
		inputs["bzip2"] = out
	} else {
		t.Log("bzip2 not tested: no bzip2 command to compress with")
	}
	for name, data := range inputs {
		p := filepath.Join(dir, "a.tar."+name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if ok, err := Detect(p); !ok || err != nil {
			t.Errorf("Detect(%s) = %v, %v", name, ok, err)
		}
		got, _, err := readTree(t, bytes.NewReader(data), Options{})
		if err != nil || got != want {
			t.Errorf("%s: error %v, tree:\n%s", name, err, got)
		}
	}
	f, err := os.Open(plain)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := New(plain, f, Options{})
	root, err := s.ReadTree(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := listing(t, root); got != want {
		t.Errorf("in place: tree:\n%s", got)
	}
	f0 := root.Children[0].Children[0]
	if _, ok := f0.Data.R.(archiveFile); !ok || s.spill.size != 0 {
		t.Errorf("a plain archive file was copied (data in %T, %d bytes spilled)", f0.Data.R, s.spill.size)
	}
	s.Close()
	// Standard input redirected from a file, read past a prefix: in
	// place from there.
	prefixed := filepath.Join(dir, "prefixed")
	if err := os.WriteFile(prefixed, append(bytes.Repeat([]byte("p"), 1000), arch...), 0o644); err != nil {
		t.Fatal(err)
	}
	pf, err := os.Open(prefixed)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	pf.Seek(1000, io.SeekStart)
	if got, _, err := readTree(t, pf, Options{}); err != nil || got != want {
		t.Errorf("in place after a prefix: %v, tree:\n%s", err, got)
	}
	// A tiny memory limit: the data moves to a file in TempDir.
	spillDir := t.TempDir()
	s = New("pipe", bytes.NewReader(arch), Options{TempDir: spillDir, MemoryLimit: 5000})
	root, err = s.ReadTree(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.spill.f == nil {
		t.Error("no spill file beyond the memory limit")
	}
	if got := listing(t, root); got != want {
		t.Errorf("spilled: tree:\n%s", got)
	}
	// Windows cannot remove an open file: there it goes at Close
	// (TestSpillLeavesNothing).
	if ents, _ := os.ReadDir(spillDir); len(ents) != 0 && runtime.GOOS != "windows" {
		t.Errorf("the spill file is visible in its directory: %v", ents)
	}
	f12 := root.Children[0].Children[1]
	data, release, err := s.spill.Map(f12.Data.Off, f12.Size)
	if errors.Is(err, mmap.ErrUnsupported) {
		t.Logf("Map not tested: %v", err)
	} else {
		if err != nil || string(data) != strings.Repeat("12", 997*12) {
			t.Errorf("Map %s: %v, %.20q...", f12.Name, err, data)
		}
		release()
	}
	s.Close()
	for _, bad := range [][]byte{bytes.Repeat([]byte("x"), 2000), nil} {
		p := filepath.Join(dir, "bad")
		os.WriteFile(p, bad, 0o644)
		if ok, _ := Detect(p); ok {
			t.Errorf("Detect took %q... for a tar", bad[:min(len(bad), 8)])
		}
	}
}

// TestSparse reads sparse members written by tar(1) in the GNU and pax
// formats: their zero pages become holes.
func TestSparse(t *testing.T) {
	tarBin, err := exec.LookPath("tar")
	if err != nil {
		t.Skip("no tar command to write sparse archives with")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "sparse")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("data"), 2048) // 8 KiB
	f.WriteAt(data, 1<<20)
	f.Truncate(3 << 20)
	f.Close()
	for _, format := range []string{"gnu", "pax"} {
		arch := filepath.Join(dir, format+".tar")
		if out, err := exec.Command(tarBin, "--sparse", "--format="+format, "-C", dir, "-cf", arch, "sparse").CombinedOutput(); err != nil {
			t.Fatalf("tar: %v: %s", err, out)
		}
		a, _ := os.Open(arch)
		s := New(arch, a, Options{})
		root, err := s.ReadTree(context.Background(), nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		n := root.Children[0]
		want := []dedup.Extent{{Off: 1 << 20, Len: 8192}}
		if n.Size != 3<<20 || fmt.Sprint(n.Data.Extents) != fmt.Sprint(want) {
			t.Errorf("%s: size %d, extents %v, want %v", format, n.Size, n.Data.Extents, want)
		}
		got := make([]byte, n.Size)
		if _, err := n.Data.R.ReadAt(got, n.Data.Off); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[1<<20:1<<20+8192], data) || bytes.Count(got, []byte{0}) != 3<<20-8192 {
			t.Errorf("%s: the sparse file reads wrong", format)
		}
		s.Close()
		a.Close()
	}
}

//go:build unix

package dwarfsextract

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/godwarfs/godwarfs/internal/manifest"
)

// member is an archive entry as the checks see it.
type member struct {
	typ          byte // as in a manifest: '-', 'd', 'l', 'c', 'b', 'p', 's'
	perm         uint32
	uid, gid     uint32
	mtime        int64
	sum          string // sha256 of a file's content
	target       string
	major, minor uint32
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func readZip(t *testing.T, path string) map[string]member {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	out := map[string]member{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		m := member{perm: uint32(f.Mode().Perm()), mtime: f.Modified.Unix()}
		for _, b := range []struct {
			mode fs.FileMode
			bit  uint32
		}{{fs.ModeSetuid, 0o4000}, {fs.ModeSetgid, 0o2000}, {fs.ModeSticky, 0o1000}} {
			if f.Mode()&b.mode != 0 {
				m.perm |= b.bit
			}
		}
		switch mode := f.Mode(); {
		case mode.IsDir():
			m.typ = 'd'
		case mode&fs.ModeSymlink != 0:
			m.typ, m.target = 'l', string(data)
		case mode.IsRegular():
			m.typ, m.sum = '-', sum(data)
		default:
			t.Errorf("%s: unexpected mode %v", f.Name, mode)
		}
		out[strings.TrimSuffix(f.Name, "/")] = m
	}
	return out
}

// readCpio parses a newc archive, checking its framing, and gives hard
// links (whose data comes with the last link) their content.
func readCpio(t *testing.T, data []byte) map[string]member {
	t.Helper()
	out := map[string]member{}
	inodeSum := map[uint64]string{}
	inodeOf := map[string]uint64{}
	pos := 0
	align := func() { pos = (pos + 3) &^ 3 }
	for {
		if pos+110 > len(data) {
			t.Fatalf("truncated header at %d", pos)
		}
		h := data[pos : pos+110]
		if string(h[:6]) != "070701" {
			t.Fatalf("bad magic %q at %d", h[:6], pos)
		}
		f := func(i int) uint64 {
			v, err := strconv.ParseUint(string(h[6+8*i:14+8*i]), 16, 32)
			if err != nil {
				t.Fatalf("field %d at %d: %v", i, pos, err)
			}
			return v
		}
		ino, mode, uid, gid, nlink, mtime, size := f(0), f(1), f(2), f(3), f(4), f(5), f(6)
		rmaj, rmin, namesize, check := f(9), f(10), f(11), f(12)
		pos += 110
		name := string(data[pos : pos+int(namesize)-1])
		if data[pos+int(namesize)-1] != 0 || check != 0 {
			t.Fatalf("%s: name not NUL-terminated or checksum set", name)
		}
		pos += int(namesize)
		align()
		body := data[pos : pos+int(size)]
		pos += int(size)
		align()
		if name == "TRAILER!!!" {
			if pos != len(data) {
				t.Errorf("%d bytes after the trailer", len(data)-pos)
			}
			break
		}
		m := member{perm: uint32(mode & 0o7777), uid: uint32(uid), gid: uint32(gid), mtime: int64(mtime)}
		switch mode & 0o170000 {
		case 0o040000:
			m.typ = 'd'
		case 0o100000:
			m.typ = '-'
			if size > 0 || nlink == 1 {
				inodeSum[ino] = sum(body)
			}
			inodeOf[name] = ino
		case 0o120000:
			m.typ, m.target = 'l', string(body)
		case 0o020000:
			m.typ, m.major, m.minor = 'c', uint32(rmaj), uint32(rmin)
		case 0o060000:
			m.typ, m.major, m.minor = 'b', uint32(rmaj), uint32(rmin)
		case 0o010000:
			m.typ = 'p'
		case 0o140000:
			m.typ = 's'
		}
		out[name] = m
	}
	for name, ino := range inodeOf {
		m := out[name]
		m.sum = inodeSum[ino]
		out[name] = m
	}
	return out
}

func readTar(t *testing.T, r io.Reader) map[string]member {
	t.Helper()
	tr := tar.NewReader(r)
	out := map[string]member{}
	sums := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(h.Name, "/")
		m := member{perm: uint32(h.Mode) & 0o7777, uid: uint32(h.Uid), gid: uint32(h.Gid), mtime: h.ModTime.Unix()}
		switch h.Typeflag {
		case tar.TypeDir:
			m.typ = 'd'
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			m.typ, m.sum = '-', sum(b)
			sums[name] = m.sum
		case tar.TypeLink:
			m.typ, m.sum = '-', sums[h.Linkname]
		case tar.TypeSymlink:
			m.typ, m.target = 'l', h.Linkname
		case tar.TypeChar, tar.TypeBlock:
			m.typ, m.major, m.minor = 'c', uint32(h.Devmajor), uint32(h.Devminor)
			if h.Typeflag == tar.TypeBlock {
				m.typ = 'b'
			}
		case tar.TypeFifo:
			m.typ = 'p'
		}
		out[name] = m
	}
	return out
}

// checkMembers compares an archive with the image's manifest. The
// reference manifest lists the socket as the empty file the reference
// leaves on disk.
func checkMembers(t *testing.T, got map[string]member, want []manifest.Entry, owners, specials bool) {
	t.Helper()
	n := 0
	for _, w := range want {
		special := strings.ContainsRune("cbp", rune(w.Type)) || w.Path == "data/socket"
		if special && !specials {
			if _, ok := got[w.Path]; ok {
				t.Errorf("%s: stored, but the format cannot hold it", w.Path)
			}
			continue
		}
		n++
		g, ok := got[w.Path]
		switch {
		case !ok:
			t.Errorf("%s: missing", w.Path)
			continue
		case g.typ == 's' && w.Path == "data/socket":
		case g.typ != w.Type:
			t.Errorf("%s: type %c, want %c", w.Path, g.typ, w.Type)
		case w.Type != 'l' && g.perm != w.Perm && g.typ != 's':
			t.Errorf("%s: mode %o, want %o", w.Path, g.perm, w.Perm)
		case owners && (g.uid != w.Uid || g.gid != w.Gid):
			t.Errorf("%s: owner %d:%d, want %d:%d", w.Path, g.uid, g.gid, w.Uid, w.Gid)
		case w.Type != 'd' && g.mtime != w.Sec:
			t.Errorf("%s: mtime %d, want %d", w.Path, g.mtime, w.Sec)
		case w.Type == '-' && g.sum != w.SHA256:
			t.Errorf("%s: sha256 %s, want %s", w.Path, g.sum, w.SHA256)
		case w.Type == 'l' && g.target != w.Target:
			t.Errorf("%s: target %q, want %q", w.Path, g.target, w.Target)
		case w.HasRdev && (g.major != w.Major || g.minor != w.Minor):
			t.Errorf("%s: device %d:%d, want %d:%d", w.Path, g.major, g.minor, w.Major, w.Minor)
		}
	}
	if len(got) != n {
		t.Errorf("%d members, want %d", len(got), n)
	}
}

// Every archive format, chosen by name or by -f auto from the output
// name, holds the image's tree: contents, links, modes, times, and what
// else the format can hold.
func TestArchiveFormats(t *testing.T) {
	fx := fixturesFor(t)[0]
	want, err := manifest.ParseFile(fx.manifest)
	if err != nil {
		t.Fatal(err)
	}
	unzstd := func(r io.Reader) (io.Reader, error) { d, err := zstd.NewReader(r); return d, err }
	ungz := func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }
	unxz := func(r io.Reader) (io.Reader, error) { return xz.NewReader(r) }
	for _, tc := range []struct {
		format, name string
		kind         string // zip, cpio, tar
		decompress   func(io.Reader) (io.Reader, error)
	}{
		{"zip", "x.out", "zip", nil},
		{"auto", "x.zip", "zip", nil},
		{"auto", "X.JAR", "zip", nil},
		{"cpio", "x.out", "cpio", nil},
		{"newc", "x.out", "cpio", nil},
		{"auto", "x.cpio", "cpio", nil},
		{"auto", "x.tar", "tar", nil},
		{"auto", "x.tar.gz", "tar", ungz},
		{"auto", "x.tgz", "tar", ungz},
		{"auto", "x.tar.xz", "tar", unxz},
		{"auto", "x.tar.zst", "tar", unzstd},
	} {
		t.Run(tc.format+"/"+tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, tc.name)
			rc, _, errs := runx("-i", fx.image, "-f", tc.format, "-o", out)
			if rc != 0 {
				t.Fatalf("rc %d: %s", rc, errs)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Errorf("output directory holds %d entries, want just the archive", len(ents))
			}
			switch tc.kind {
			case "zip":
				checkMembers(t, readZip(t, out), want, false, false)
				for _, p := range []string{"data/blockdev", "data/chardev", "data/fifo", "data/socket"} {
					if !strings.Contains(errs, "warning: "+p+": a zip archive cannot hold") {
						t.Errorf("no warning for %s: %q", p, errs)
					}
				}
			case "cpio":
				data, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				checkMembers(t, readCpio(t, data), want, true, true)
			case "tar":
				f, err := os.Open(out)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				var r io.Reader = f
				if tc.decompress != nil {
					if r, err = tc.decompress(f); err != nil {
						t.Fatal(err)
					}
				}
				checkMembers(t, readTar(t, r), want, true, true)
			}
		})
	}
}

// A cpio archive to standard output, and a selection with hard links:
// only the last link carries the data.
func TestCpioStdoutAndHardLinks(t *testing.T) {
	img := fixturesFor(t)[0].image
	rc, out, errs := runx("-i", img, "-f", "newc", "-o", "-", "a/hello.txt", "a/b/c/hardlink-to-hello")
	if rc != 0 {
		t.Fatalf("rc %d: %s", rc, errs)
	}
	got := readCpio(t, []byte(out))
	names := fmt.Sprint(len(got))
	for _, p := range []string{"a", "a/b", "a/b/c", "a/hello.txt", "a/b/c/hardlink-to-hello"} {
		if _, ok := got[p]; !ok {
			t.Errorf("%s missing (%s members)", p, names)
		}
	}
	if a, b := got["a/hello.txt"], got["a/b/c/hardlink-to-hello"]; a.sum != b.sum || a.sum != sum([]byte("hello\n")) {
		t.Errorf("hard links: %s and %s", a.sum, b.sum)
	}
	// The data is stored once.
	if n := bytes.Count([]byte(out), []byte("hello\n")); n != 1 {
		t.Errorf("content stored %d times", n)
	}
}

func TestFormatErrors(t *testing.T) {
	img := fixturesFor(t)[0].image
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"-f", "rar", "-o", filepath.Join(dir, "x")}, "unsupported format \"rar\""},
		{[]string{"-f", "auto", "-o", filepath.Join(dir, "x.rar")}, "cannot tell the format from the name"},
		{[]string{"-f", "auto"}, "-f auto needs an output file name"},
		{[]string{"-f", "zip", "-o", dir}, "is a directory"},
	} {
		rc, _, errs := runx(append([]string{"-i", img}, tc.args...)...)
		if rc != 1 || !strings.Contains(errs, tc.err) {
			t.Errorf("%q: rc %d %q, want %q", tc.args, rc, errs, tc.err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}

// An archive written to an existing FIFO or device (-o /dev/null) goes
// into it; renaming a file over it would replace the device.
func TestArchiveToFIFO(t *testing.T) {
	img := fixturesFor(t)[0].image
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("skipped: cannot make a FIFO: %v", err)
	}
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// The archive is small enough for the pipe's buffer.
	rc, _, errs := runx("-i", img, "-f", "newc", "-o", fifo, "a/hello.txt")
	if rc != 0 {
		t.Fatalf("rc %d: %s", rc, errs)
	}
	r.Fd() // blocking reads from here on
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	arch := readCpio(t, b)
	if e, ok := arch["a/hello.txt"]; !ok || e.sum != sum([]byte("hello\n")) {
		t.Errorf("a/hello.txt missing or wrong in what the FIFO received (%d members)", len(arch))
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode().Type() != fs.ModeNamedPipe {
		t.Errorf("output is now %v, %v; want the FIFO", st.Mode(), err)
	}
}

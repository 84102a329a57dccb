//go:build unix

package mkdwarfs

import (
	"bytes"
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
)

// entry is one file system entry as seen through godwarfs.Open.
type entry struct {
	mode, uid, gid, nlink uint32
	size                  int64
	mtime                 time.Time
	target                string
	content               [32]byte
}

// walkImage opens img with the public API, checks its metadata and calls
// visit for every entry with its stat and its content (regular files) or
// target (symlinks).
func walkImage(t testing.TB, img string, visit func(p string, st *godwarfs.Stat, data []byte, target string)) {
	t.Helper()
	im, err := godwarfs.Open(img, nil)
	if err != nil {
		t.Fatalf("open %s: %v", img, err)
	}
	defer im.Close()
	if err := imageaccess.Of(im).FS.Check(); err != nil {
		t.Fatalf("%s: metadata check: %v", img, err)
	}
	err = fs.WalkDir(im, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := im.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*godwarfs.Stat)
		var data []byte
		var target string
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			if data, err = im.ReadFile(p); err != nil {
				return err
			}
		case syscall.S_IFLNK:
			if target, err = im.ReadLink(p); err != nil {
				return err
			}
		}
		visit(p, st, data, target)
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", img, err)
	}
}

// snapshot returns every entry of img.
func snapshot(t testing.TB, img string) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	walkImage(t, img, func(p string, st *godwarfs.Stat, data []byte, target string) {
		e := entry{mode: st.Mode, uid: st.Uid, gid: st.Gid, nlink: st.Nlink, size: st.Size, mtime: st.Mtime, target: target}
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			e.content = sha256.Sum256(data)
		case syscall.S_IFDIR:
			e.size, e.nlink = 0, 0 // layout dependent
		}
		out[p] = e
	})
	return out
}

func compareSnapshots(t testing.TB, want, got map[string]entry) {
	t.Helper()
	if len(want) != len(got) {
		t.Errorf("%d entries, want %d", len(got), len(want))
	}
	for p, w := range want {
		g, ok := got[p]
		if !ok {
			t.Errorf("missing %q", p)
			continue
		}
		if g != w {
			t.Errorf("%q: got %+v, want %+v", p, g, w)
		}
	}
}

func openBlocks(t testing.TB, img string) *block.Image {
	t.Helper()
	im, err := godwarfs.Open(img, nil)
	if err != nil {
		t.Fatalf("open %s: %v", img, err)
	}
	t.Cleanup(func() { im.Close() })
	return imageaccess.Of(im).Blocks
}

func fileHash(t testing.TB, p string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func sectionComp(bi *block.Image, typ block.SectionType) block.Compression {
	s := bi.Find(typ)
	if len(s) == 0 {
		return 255
	}
	return s[0].Compression
}

func TestRecompressCLI(t *testing.T) {
	src := makeTree(t)
	dir := t.TempDir()
	base := filepath.Join(dir, "base.dwarfs")
	mk(t, "-i", src, "-o", base, "-l", "3", "-S", "18", "--log-level", "warn")
	null := filepath.Join(dir, "null.dwarfs")
	mk(t, "-i", src, "-o", null, "-l", "0", "--log-level", "warn")
	want := snapshot(t, base)
	baseBI := openBlocks(t, base)

	for _, tc := range []struct {
		name  string
		in    string
		args  []string
		check func(t *testing.T, bi *block.Image)
	}{
		{"lzma", base, []string{"--recompress", "-C", "lzma"}, func(t *testing.T, bi *block.Image) {
			for _, s := range bi.Blocks() {
				if s.Compression != block.CompLZMA {
					t.Errorf("block %d: %v, want LZMA", s.Index, s.Compression)
				}
			}
		}},
		{"level-default", null, []string{"--recompress"}, func(t *testing.T, bi *block.Image) {
			// Level 7: zstd level 22 for blocks and metadata.
			for _, s := range bi.Blocks() {
				if s.Compression != block.CompZSTD {
					t.Errorf("block %d: %v, want ZSTD", s.Index, s.Compression)
				}
			}
			if c := sectionComp(bi, block.SectionMetadata); c != block.CompZSTD {
				t.Errorf("metadata: %v, want ZSTD", c)
			}
		}},
		{"level-1", null, []string{"--recompress=all", "-l", "1"}, func(t *testing.T, bi *block.Image) {
			for _, s := range bi.Blocks() {
				if s.Compression != block.CompLZ4 {
					t.Errorf("block %d: %v, want LZ4", s.Index, s.Compression)
				}
			}
		}},
		{"metadata-only", base, []string{"--recompress=metadata", "--metadata-compression", "null"}, func(t *testing.T, bi *block.Image) {
			ob, nb := baseBI.Blocks(), bi.Blocks()
			if len(ob) != len(nb) {
				t.Fatalf("%d blocks, want %d", len(nb), len(ob))
			}
			for i := range ob {
				a, err := baseBI.ReadRaw(ob[i])
				if err != nil {
					t.Fatal(err)
				}
				b, err := bi.ReadRaw(nb[i])
				if err != nil {
					t.Fatal(err)
				}
				if ob[i].Compression != nb[i].Compression || !bytes.Equal(a, b) {
					t.Errorf("block %d changed", i)
				}
			}
			if c := sectionComp(bi, block.SectionMetadata); c != block.CompNone {
				t.Errorf("metadata: %v, want NONE", c)
			}
		}},
		{"block-size-lzma", base, []string{"--change-block-size", "-S", "17", "-C", "lzma:level=1"}, func(t *testing.T, bi *block.Image) {
			n := 0
			for _, s := range bi.Blocks() {
				switch s.Compression {
				case block.CompLZMA:
					n++
				case block.CompNone: // incompressible block stored plain
				default:
					t.Errorf("block %d: %v, want LZMA", s.Index, s.Compression)
				}
			}
			if n == 0 {
				t.Error("no LZMA block")
			}
		}},
		{"pack-all", base, []string{"--rebuild-metadata", "-P", "all"}, nil},
		{"pack-none", base, []string{"--rebuild-metadata", "-P", "none", "--recompress=none"}, nil},
		{"block-size", base, []string{"--change-block-size", "-S", "16"}, func(t *testing.T, bi *block.Image) {
			if len(bi.Blocks()) <= len(baseBI.Blocks()) {
				t.Errorf("%d blocks after -S 16, had %d with -S 18", len(bi.Blocks()), len(baseBI.Blocks()))
			}
			for _, s := range bi.Blocks() {
				d, err := bi.ReadDecompressed(s)
				if err != nil {
					t.Fatal(err)
				}
				if len(d) > 1<<16 {
					t.Errorf("block %d: %d bytes > 64 KiB", s.Index, len(d))
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(dir, tc.name+".dwarfs")
			inHash := fileHash(t, tc.in)
			mk(t, append([]string{"-i", tc.in, "-o", out, "--log-level", "warn"}, tc.args...)...)
			if fileHash(t, tc.in) != inHash {
				t.Error("input modified")
			}
			compareSnapshots(t, want, snapshot(t, out))
			bi := openBlocks(t, out)
			if bi.Major() != 2 || bi.Minor() != 5 || !bi.HasSectionIndex() {
				t.Errorf("format %d.%d index %v", bi.Major(), bi.Minor(), bi.HasSectionIndex())
			}
			if tc.check != nil {
				tc.check(t, bi)
			}
		})
	}
	t.Cleanup(func() { noTemps(t, dir) }) // after the parallel subtests
}

func TestRecompressPackFlags(t *testing.T) {
	src := makeTree(t)
	dir := t.TempDir()
	base := filepath.Join(dir, "base.dwarfs")
	mk(t, "-i", src, "-o", base, "-l", "1", "--log-level", "warn")
	for _, tc := range []struct {
		pack   string
		packed bool
	}{{"all", true}, {"none", false}} {
		out := filepath.Join(dir, tc.pack+".dwarfs")
		mk(t, "-i", base, "-o", out, "--rebuild-metadata", "-P", tc.pack)
		_, md := readBack(t, out)
		o := md.Options
		got := o != nil && o.PackedChunkTable && o.PackedDirectories
		if got != tc.packed {
			t.Errorf("-P %s: packed chunk table/directories %v, want %v (%+v)", tc.pack, got, tc.packed, o)
		}
	}
}

func TestRecompressFixture(t *testing.T) {
	in := fixtures.File(t, "upstream", "compat-v0.4.1.dwarfs")
	out := filepath.Join(t.TempDir(), "new.dwarfs")
	h := fileHash(t, in)
	mk(t, "-i", in, "-o", out, "--recompress", "-l", "1", "--log-level", "warn")
	if fileHash(t, in) != h {
		t.Error("input modified")
	}
	bi := openBlocks(t, out)
	if bi.Major() != 2 || bi.Minor() != 5 {
		t.Errorf("format %d.%d, want 2.5", bi.Major(), bi.Minor())
	}
	compareSnapshots(t, snapshot(t, in), snapshot(t, out))
}

// TestRecompressToStdout: -o - writes the rewritten image to standard
// output, as the reference does.
func TestRecompressToStdout(t *testing.T) {
	src := makeTree(t)
	dir := t.TempDir()
	base := filepath.Join(dir, "base.dwarfs")
	mk(t, "-i", src, "-o", base, "-l", "3", "--log-level", "warn")
	for _, args := range [][]string{
		{"--recompress", "-C", "lzma:level=1"},
		{"--rebuild-metadata", "-P", "all"},
		{"--change-block-size", "-S", "14"},
	} {
		code, stdout, stderr := run(append([]string{"-i", base, "-o", "-", "--log-level", "warn"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		out := filepath.Join(dir, "out.dwarfs")
		if err := os.WriteFile(out, []byte(stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		compareSnapshots(t, snapshot(t, base), snapshot(t, out))
		if args[0] == "--recompress" {
			for _, s := range openBlocks(t, out).Blocks() {
				if s.Compression != block.CompLZMA {
					t.Errorf("block %d: %v, want LZMA", s.Index, s.Compression)
				}
			}
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 2 {
			t.Errorf("files left beside the images: %v", entries)
		}
		os.Remove(out)
	}
}

func TestRecompressRefusals(t *testing.T) {
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "f"), []byte("data"), 0o644)
	dir := t.TempDir()
	img := filepath.Join(dir, "a.dwarfs")
	mk(t, "-i", src, "-o", img, "-l", "1", "--log-level", "warn")
	existing := filepath.Join(dir, "exists.dwarfs")
	os.WriteFile(existing, []byte("keep me"), 0o644)
	imgHash := fileHash(t, img)

	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-i", img, "-o", existing, "--recompress"}, 1, "already exists"},
		{[]string{"-i", img, "-o", img, "--recompress"}, 1, "same as the input"},
		{[]string{"-i", img, "-o", img, "--recompress", "-f"}, 1, "same as the input"},
		{[]string{"-i", src, "-o", filepath.Join(dir, "x"), "--recompress"}, 1, "is a directory"},
		{[]string{"-i", img, "-o", filepath.Join(dir, "x"), "--recompress=bogus"}, 1, "invalid --recompress mode"},
		{[]string{"-i", img, "-o", filepath.Join(dir, "x"), "--recompress", "--set-owner", "0"}, 1, "needs --rebuild-metadata"},
		{[]string{"-i", img, "-o", filepath.Join(dir, "x"), "--recompress", "--recompress-categories", "pcmaudio"}, 1, "category"},
		{[]string{"-i", img, "-o", filepath.Join(dir, "x"), "--rebuild-metadata", "--time-resolution", "ns"}, 1, "mkdwarfs:"},
		{[]string{"-i", img, "-o", filepath.Join(dir, "x"), "--change-block-size", "-S", "9"}, 1, "block-size-bits"},
		{[]string{"-i", img, "-o", filepath.Join(dir, "x"), "--recompress=metadata", "-C", "lz4"}, 1, "no effect"},
		{[]string{"-i", img, "-o", filepath.Join(dir, "x"), "--rebuild-metadata", "--metadata-compression", "lz4"}, 1, "no effect"},
		{[]string{"-i", img, "-o", filepath.Join(dir, "x"), "--recompress=block", "--history-compression", "lz4"}, 1, "no effect"},
		{[]string{"-i", filepath.Join(dir, "missing"), "-o", filepath.Join(dir, "x"), "--recompress"}, 1, "mkdwarfs: error:"},
		{[]string{"-i", existing, "-o", filepath.Join(dir, "x"), "--recompress"}, 1, "mkdwarfs: error:"},
	} {
		code, _, stderr := run(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: exit %d %q, want %d with %q", tc.args, code, stderr, tc.code, tc.msg)
		}
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me" {
		t.Errorf("existing output modified: %q", b)
	}
	if fileHash(t, img) != imgHash {
		t.Error("input modified")
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("output written by a refused run")
	}
	noTemps(t, dir)
	// -f overwrites.
	mk(t, "-i", img, "-o", existing, "--recompress", "-f", "--log-level", "warn")
	compareSnapshots(t, snapshot(t, img), snapshot(t, existing))
}

func TestRecompressHelp(t *testing.T) {
	code, stdout, _ := run("--help")
	for _, s := range []string{"--recompress[=MODE]", "--rebuild-metadata", "--change-block-size", "--recompress-categories", "--remove-header", "--no-metadata-version-history", "--no-check"} {
		if code != 0 || !strings.Contains(stdout, s) {
			t.Errorf("--help lacks %s", s)
		}
	}
}

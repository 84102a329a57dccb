//go:build unix

package dwarfsextract

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/manifest"
)

func runx(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	rc := Main(context.Background(), append([]string{"dwarfsextract"}, args...), cli.Stdio{Out: &out, Err: &errb})
	return rc, out.String(), errb.String()
}

type fixture struct{ image, manifest string }

func fixturesFor(t *testing.T) []fixture {
	return []fixture{
		{fixtures.File(t, "reference", "images", "default.dwarfs"), fixtures.File(t, "reference", "expected", "default.manifest.tsv")},
		{fixtures.File(t, "upstream", "compat-v0.9.10.dwarfs"), fixtures.File(t, "upstream", "expected", "compat-v0.9.10.manifest.tsv")},
		{fixtures.File(t, "reference", "images", "nanosecond-times.dwarfs"), fixtures.File(t, "reference", "expected", "nanosecond-times.manifest.tsv")},
	}
}

func TestExtractToDisk(t *testing.T) {
	root := os.Geteuid() == 0
	for _, fx := range fixturesFor(t) {
		t.Run(filepath.Base(fx.image), func(t *testing.T) {
			if strings.Contains(fx.image, "nanosecond") {
				fixtures.SkipUnlessStatNanoseconds(t)
			}
			want, err := manifest.ParseFile(fx.manifest)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			args := []string{"-i", fx.image, "-o", dir, "-n", "3", "--stdout-progress"}
			if !root {
				args = append(args, "--continue-on-error") // devices need root
			}
			rc, out, errs := runx(args...)
			if rc != 0 {
				t.Fatalf("rc %d: %s", rc, errs)
			}
			if !strings.Contains(out, "100% extracted") {
				t.Errorf("no final progress line in %q", out)
			}
			got, err := manifest.FromDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			compare(t, got, want, root)
			// Holes stay holes on disk.
			if fi, err := os.Stat(filepath.Join(dir, "data", "sparse.bin")); err == nil {
				if blocks := fi.Sys().(*syscall.Stat_t).Blocks * 512; blocks >= fi.Size() {
					t.Errorf("sparse.bin allocates %d bytes of %d", blocks, fi.Size())
				}
			}
		})
	}
}

func compare(t *testing.T, got, want []manifest.Entry, owners bool) {
	t.Helper()
	byPath := map[string]manifest.Entry{}
	for _, g := range got {
		byPath[g.Path] = g
	}
	if len(got) != len(want) {
		t.Errorf("%d entries, want %d", len(got), len(want))
	}
	for _, w := range want {
		g, ok := byPath[w.Path]
		if !ok {
			t.Errorf("%s: missing", w.Path)
			continue
		}
		if g.Type != w.Type {
			t.Errorf("%s: type %c, want %c", w.Path, g.Type, w.Type)
			continue
		}
		if g.Perm != w.Perm {
			t.Errorf("%s: perm %o, want %o", w.Path, g.Perm, w.Perm)
		}
		if owners && (g.Uid != w.Uid || g.Gid != w.Gid) {
			t.Errorf("%s: owner %d:%d, want %d:%d", w.Path, g.Uid, g.Gid, w.Uid, w.Gid)
		}
		if g.Sec != w.Sec || g.Nsec != w.Nsec {
			t.Errorf("%s: mtime %d.%09d, want %d.%09d", w.Path, g.Sec, g.Nsec, w.Sec, w.Nsec)
		}
		if w.Type == 'd' {
			continue
		}
		if g.Size != w.Size || g.SHA256 != w.SHA256 || g.Target != w.Target || g.Nlink != w.Nlink ||
			g.Major != w.Major || g.Minor != w.Minor {
			t.Errorf("%s:\n got %+v\nwant %+v", w.Path, g, w)
		}
	}
}

func TestExtractTar(t *testing.T) {
	for _, fx := range fixturesFor(t)[:2] {
		for _, format := range []string{"pax", "gnutar"} {
			t.Run(filepath.Base(fx.image)+"/"+format, func(t *testing.T) {
				want, err := manifest.ParseFile(fx.manifest)
				if err != nil {
					t.Fatal(err)
				}
				rc, out, errs := runx("-i", fx.image, "-f", format, "-o", "-")
				if rc != 0 {
					t.Fatalf("rc %d: %s", rc, errs)
				}
				checkTar(t, bytes.NewReader([]byte(out)), want)
			})
		}
	}
}

func checkTar(t *testing.T, r io.Reader, want []manifest.Entry) {
	tr := tar.NewReader(r)
	hdrs := map[string]*tar.Header{}
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
		hdrs[name] = h
		if h.Typeflag == tar.TypeReg {
			s := sha256.New()
			if _, err := io.Copy(s, tr); err != nil {
				t.Fatal(err)
			}
			sums[name] = hex.EncodeToString(s.Sum(nil))
		}
	}
	if len(hdrs) != len(want) {
		t.Errorf("%d tar entries, want %d", len(hdrs), len(want))
	}
	types := map[byte]byte{'-': tar.TypeReg, 'd': tar.TypeDir, 'l': tar.TypeSymlink, 'c': tar.TypeChar, 'b': tar.TypeBlock, 'p': tar.TypeFifo}
	for _, w := range want {
		h := hdrs[w.Path]
		if h == nil {
			t.Errorf("%s: missing", w.Path)
			continue
		}
		if w.Type != 'l' && uint32(h.Mode)&0o7777 != w.Perm {
			t.Errorf("%s: mode %o, want %o", w.Path, h.Mode, w.Perm)
		}
		if h.Uid != int(w.Uid) || h.Gid != int(w.Gid) {
			t.Errorf("%s: owner %d:%d", w.Path, h.Uid, h.Gid)
		}
		if w.Type != 'd' && h.ModTime.Unix() != w.Sec {
			t.Errorf("%s: mtime %v, want %d", w.Path, h.ModTime, w.Sec)
		}
		switch {
		case h.Typeflag == tar.TypeLink:
			// A hard link must point at an earlier member with the same content.
			if w.Type != '-' || w.Nlink < 2 || sums[h.Linkname] != w.SHA256 {
				t.Errorf("%s: unexpected hard link to %s", w.Path, h.Linkname)
			}
		case h.Typeflag != types[w.Type]:
			t.Errorf("%s: typeflag %c, want %c", w.Path, h.Typeflag, types[w.Type])
		case w.Type == '-' && sums[w.Path] != w.SHA256:
			t.Errorf("%s: sha256 %s, want %s", w.Path, sums[w.Path], w.SHA256)
		case w.Type == 'l' && h.Linkname != w.Target:
			t.Errorf("%s: target %q, want %q", w.Path, h.Linkname, w.Target)
		case w.HasRdev && (h.Devmajor != int64(w.Major) || h.Devminor != int64(w.Minor)):
			t.Errorf("%s: dev %d:%d", w.Path, h.Devmajor, h.Devminor)
		}
	}
}

func TestPatterns(t *testing.T) {
	img := fixturesFor(t)[0].image
	dir := t.TempDir()
	rc, _, errs := runx("-i", img, "-o", dir, "--pattern", "**/*.txt", "--pattern=bin/*")
	if rc != 0 {
		t.Fatalf("rc %d: %s", rc, errs)
	}
	got, err := manifest.FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range got {
		paths = append(paths, e.Path)
	}
	want := "a a/b a/b/hello-copy.txt a/hello.txt bin bin/vet docs docs/doc-v1.txt docs/doc-v2.txt docs/doc-v3.txt docs/doc-v4.txt docs/doc-v5.txt unicode-ü-日本 unicode-ü-日本/файл.txt"
	if strings.Join(paths, " ") != want {
		t.Errorf("extracted %q\nwant      %q", strings.Join(paths, " "), want)
	}
	// A directory pattern takes the whole subtree.
	dir2 := t.TempDir()
	if rc, _, errs := runx("-i", img, "-o", dir2, "--pattern", "a/b"); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errs)
	}
	if _, err := os.Lstat(filepath.Join(dir2, "a/b/c/d/e")); err != nil {
		t.Error(err)
	}
	if _, err := os.Lstat(filepath.Join(dir2, "a/hello.txt")); err == nil {
		t.Error("a/hello.txt should not be extracted")
	}
}

func TestTarFileAndUsage(t *testing.T) {
	img := fixturesFor(t)[0].image
	out := filepath.Join(t.TempDir(), "x.tar")
	if rc, _, errs := runx("-i", img, "-f", "ustar", "-o", out, "--pattern", "a/**"); rc != 0 {
		t.Fatalf("ustar: rc %d %s", rc, errs)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	n := 0
	for {
		if _, err := tr.Next(); err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
		n++
	}
	if n != 12 {
		t.Errorf("ustar archive has %d members, want 12", n)
	}
	for _, args := range [][]string{{"-i", img, "-o", "-"}, {"-i", img, "-o", "x", "-f", "rar"}, {"-i", img, "-o", "x", "--pattern", "[a"}, {"-i", img, "-o", "x", "-n", "0"}} {
		if rc, _, errs := runx(args...); rc != 1 || !strings.Contains(errs, "Try 'dwarfsextract --help'") {
			t.Errorf("%v: rc %d, want 1 and a pointer to --help: %q", args, rc, errs)
		}
	}
	if rc, _, errs := runx("-i", fixtures.File(t, "upstream", "future-features.dwarfs"), "-o", t.TempDir()); rc != 1 || !strings.Contains(errs, "this-feature-will-never-exist") {
		t.Errorf("future-features: rc %d %q", rc, errs)
	}
	// Extracting into a tree that already has the files replaces them, as
	// the reference does.
	dir := t.TempDir()
	if rc, _, errs := runx("-i", img, "-o", dir, "--pattern", "a/*.txt"); rc != 0 {
		t.Fatalf("first extraction failed: %s", errs)
	}
	var victim string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && victim == "" {
			victim = p
		}
		return nil
	})
	want, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(victim, []byte("stale"), 0o600); err != nil {
		t.Fatal(err)
	}
	if rc, _, errs := runx("-i", img, "-o", dir, "--pattern", "a/*.txt"); rc != 0 {
		t.Errorf("second extraction: rc %d, want 0: %s", rc, errs)
	}
	if got, err := os.ReadFile(victim); err != nil || !bytes.Equal(got, want) {
		t.Errorf("second extraction did not restore %s: %v", victim, err)
	}
}

func TestParseSize(t *testing.T) {
	for s, want := range map[string]int64{"0": 0, "10": 10, "4k": 4096, "512m": 512 << 20, "2G": 2 << 30} {
		if got, err := cli.ParseSize(s); err != nil || got != want {
			t.Errorf("cli.ParseSize(%q) = %d, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "x", "-1", "1q"} {
		if _, err := cli.ParseSize(s); err == nil {
			t.Errorf("cli.ParseSize(%q): no error", s)
		}
	}
}

//go:build linux && wintest

// Package wintest runs the Windows builds of the tools under Wine: a
// round trip of the fixture tree (mkdwarfs, dwarfsck --check-integrity,
// dwarfsextract to a directory and to a tar, compared with the manifest)
// and the extraction of names Windows cannot hold. `make test-windows`
// builds the binaries and sets GODWARFS_WINDOWS_BIN and GODWARFS_WINE.
package wintest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/dwarfsextract"
	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/manifest"
	"github.com/godwarfs/godwarfs/internal/mkdwarfs"
)

// tools returns the directory of the .exe files and the Wine command, or
// skips saying what is missing.
func tools(t *testing.T) (bin, wine string) {
	bin, wine = os.Getenv("GODWARFS_WINDOWS_BIN"), os.Getenv("GODWARFS_WINE")
	if bin == "" || wine == "" {
		t.Skip("GODWARFS_WINDOWS_BIN and GODWARFS_WINE unset: the Windows tools run under Wine in make test-windows")
	}
	return bin, wine
}

// winTool runs a Windows tool under Wine and returns its exit status and
// output. Paths are given as Unix paths: Wine maps / to drive Z:.
func winTool(t *testing.T, bin, wine, tool string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(wine, append([]string{filepath.Join(bin, tool+".exe")}, args...)...)
	cmd.Env = append(os.Environ(), "WINEDEBUG=-all")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%s: %v", tool, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

func winPath(p string) string { return "Z:" + strings.ReplaceAll(p, "/", `\`) }

// windowsSubset is the part of a manifest a Windows filesystem holds:
// directories and regular files.
func windowsSubset(es []manifest.Entry) map[string]manifest.Entry {
	out := map[string]manifest.Entry{}
	for _, e := range es {
		if e.Type == 'd' || e.Type == '-' {
			out[e.Path] = e
		}
	}
	return out
}

func TestWindowsRoundTrip(t *testing.T) {
	bin, wine := tools(t)
	img := fixtures.File(t, "reference", "images", "default.dwarfs")
	man, err := manifest.ParseFile(fixtures.File(t, "reference", "expected", "default.manifest.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	want := windowsSubset(man)

	// The input tree: the fixture image extracted here, without what
	// Windows has no files for (links, devices, fifos, sockets).
	tmp := t.TempDir()
	tree := filepath.Join(tmp, "tree")
	var errb bytes.Buffer
	if code := dwarfsextract.Main(context.Background(), []string{"dwarfsextract", "-i", img, "-o", tree}, cli.Stdio{Out: io.Discard, Err: &errb}); code != 0 {
		t.Fatalf("extracting the fixture: exit %d: %s", code, errb.String())
	}
	for _, e := range man {
		if _, ok := want[e.Path]; !ok {
			if err := os.Remove(filepath.Join(tree, filepath.FromSlash(e.Path))); err != nil {
				t.Fatal(err)
			}
		}
	}

	out := filepath.Join(tmp, "w.dwarfs")
	if code, _, stderr := winTool(t, bin, wine, "mkdwarfs", "-i", winPath(tree), "-o", winPath(out), "-l", "3", "--log-level", "warn"); code != 0 {
		t.Fatalf("mkdwarfs.exe: exit %d: %s", code, stderr)
	}
	if code, _, stderr := winTool(t, bin, wine, "dwarfsck", "--check-integrity", winPath(out)); code != 0 {
		t.Fatalf("dwarfsck.exe --check-integrity: exit %d: %s", code, stderr)
	}

	dir := filepath.Join(tmp, "out")
	if code, _, stderr := winTool(t, bin, wine, "dwarfsextract", "-i", winPath(out), "-o", winPath(dir)); code != 0 {
		t.Fatalf("dwarfsextract.exe: exit %d: %s", code, stderr)
	}
	got, err := manifest.FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, g := range got {
		w, ok := want[g.Path]
		if !ok {
			t.Errorf("extracted %q, which the manifest does not list", g.Path)
			continue
		}
		seen[g.Path] = true
		if g.Type != w.Type || g.SHA256 != w.SHA256 || (w.Type == '-' && g.Size != w.Size) {
			t.Errorf("%s: got type %c size %d sha256 %.12s, want %c %d %.12s", g.Path, g.Type, g.Size, g.SHA256, w.Type, w.Size, w.SHA256)
		}
		if w.Type == '-' && g.Sec != w.Sec {
			t.Errorf("%s: mtime %d, want %d", g.Path, g.Sec, w.Sec)
		}
	}
	for p := range want {
		if !seen[p] {
			t.Errorf("%s missing from the extraction", p)
		}
	}

	tarFile := filepath.Join(tmp, "out.tar")
	if code, _, stderr := winTool(t, bin, wine, "dwarfsextract", "-i", winPath(out), "-o", winPath(tarFile), "-f", "tar"); code != 0 {
		t.Fatalf("dwarfsextract.exe -f tar: exit %d: %s", code, stderr)
	}
	f, err := os.Open(tarFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	inTar := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading the tar: %v", err)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
		w, ok := want[name]
		if !ok {
			t.Errorf("tar holds %q, which the manifest does not list", h.Name)
			continue
		}
		inTar[name] = true
		if w.Type == '-' {
			sum := sha256.New()
			n, err := io.Copy(sum, tr)
			if err != nil || n != w.Size || hex.EncodeToString(sum.Sum(nil)) != w.SHA256 || h.ModTime.Unix() != w.Sec {
				t.Errorf("tar %s: %d bytes, mtime %d, err %v; want %d bytes, mtime %d, sha256 %.12s", name, n, h.ModTime.Unix(), err, w.Size, w.Sec, w.SHA256)
			}
		}
	}
	for p := range want {
		if !inTar[p] {
			t.Errorf("%s missing from the tar", p)
		}
	}
}

// Names Windows cannot hold are reported by name and left out (exit 2),
// nothing is written under another name; a symbolic link is made where
// Wine may, else left out with a warning; a file nobody may write
// becomes read-only.
func TestWindowsExtractRules(t *testing.T) {
	bin, wine := tools(t)
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	bad := []string{"a:b", "CON", "nul.txt", "dot.", "what?"}
	for _, n := range append([]string{"ok.txt", "ro.txt", "sub/inner.txt"}, bad...) {
		p := filepath.Join(src, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("content of "+n+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(src, "ro.txt"), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("ok.txt", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(tmp, "rules.dwarfs")
	var errb bytes.Buffer
	if code := mkdwarfs.Main(context.Background(), []string{"mkdwarfs", "-i", src, "-o", img, "-l", "1", "--log-level", "warn"}, cli.Stdio{Out: io.Discard, Err: &errb}); code != 0 {
		t.Fatalf("mkdwarfs: exit %d: %s", code, errb.String())
	}
	dir := filepath.Join(tmp, "out")
	code, _, stderr := winTool(t, bin, wine, "dwarfsextract", "-i", winPath(img), "-o", winPath(dir))
	if code != 2 {
		t.Fatalf("dwarfsextract.exe: exit %d, want 2: %s", code, stderr)
	}
	for _, n := range bad {
		if !strings.Contains(stderr, n) {
			t.Errorf("stderr does not name %q: %s", n, stderr)
		}
	}
	if !strings.Contains(stderr, "5 entries could not be extracted") {
		t.Errorf("stderr does not count the 5 refused names: %s", stderr)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	link := false
	for _, n := range names {
		switch n {
		case "ok.txt", "ro.txt", "sub":
		case "link":
			link = true
		default:
			t.Errorf("unexpected entry %q in the extraction (all: %q)", n, names)
		}
	}
	if link {
		if target, err := os.Readlink(filepath.Join(dir, "link")); err != nil || filepath.Base(filepath.FromSlash(strings.ReplaceAll(target, `\`, "/"))) != "ok.txt" {
			t.Errorf("link: target %q, %v; want ok.txt", target, err)
		}
	} else if !strings.Contains(stderr, "link") || !strings.Contains(stderr, "skipped") {
		t.Errorf("the symbolic link was neither made nor reported as skipped: %s", stderr)
	} else {
		t.Logf("Wine refused the symbolic link, reported: %s", stderr)
	}
	for _, n := range []string{"ok.txt", "ro.txt", "sub/inner.txt"} {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil || string(b) != "content of "+n+"\n" {
			t.Errorf("%s: %q, %v", n, b, err)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, "ro.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o222 != 0 {
		t.Errorf("ro.txt: mode %v, want read-only", fi.Mode())
	}
	if fi, err := os.Stat(filepath.Join(dir, "ok.txt")); err != nil || fi.Mode().Perm()&0o200 == 0 {
		t.Errorf("ok.txt: %v, %v; want writable", fi, err)
	}
}

// TestWindowsCaseCollisions: Wine, like Windows, folds letter case, which
// dwarfsextract.exe finds out by its probe. Of Case and case the first
// keeps its name and its own bytes; the other is reported and counted
// (exit status 2), or renamed with --case-collision=rename.
func TestWindowsCaseCollisions(t *testing.T) {
	bin, wine := tools(t)
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"Case", "case", "other.txt"} {
		if err := os.WriteFile(filepath.Join(src, n), []byte("content of "+n+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	img := filepath.Join(tmp, "case.dwarfs")
	var errb bytes.Buffer
	if code := mkdwarfs.Main(context.Background(), []string{"mkdwarfs", "-i", src, "-o", img, "-l", "1", "--log-level", "warn"}, cli.Stdio{Out: io.Discard, Err: &errb}); code != 0 {
		t.Fatalf("mkdwarfs: exit %d: %s", code, errb.String())
	}
	// contents lists what the extraction left on the (case-sensitive)
	// Linux directory under Wine's drive.
	contents := func(dir string) map[string]string {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			m[e.Name()] = string(b)
		}
		return m
	}
	dir := filepath.Join(tmp, "skip")
	code, _, stderr := winTool(t, bin, wine, "dwarfsextract", "-i", winPath(img), "-o", winPath(dir))
	if code != 2 {
		t.Fatalf("dwarfsextract.exe: exit %d, want 2: %s", code, stderr)
	}
	for _, w := range []string{"case: differs only in letter case from Case", "1 entries could not be extracted"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q: %s", w, stderr)
		}
	}
	want := map[string]string{"Case": "content of Case\n", "other.txt": "content of other.txt\n"}
	if got := contents(dir); !maps.Equal(got, want) {
		t.Errorf("extracted %q, want %q", got, want)
	}
	dir = filepath.Join(tmp, "rename")
	if code, _, stderr := winTool(t, bin, wine, "dwarfsextract", "-i", winPath(img), "-o", winPath(dir), "--case-collision=rename"); code != 0 {
		t.Fatalf("dwarfsextract.exe --case-collision=rename: exit %d: %s", code, stderr)
	}
	want["case~2"] = "content of case\n"
	if got := contents(dir); !maps.Equal(got, want) {
		t.Errorf("renamed: extracted %q, want %q", got, want)
	}
}

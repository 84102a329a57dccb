//go:build unix

package mkdwarfs

import (
	"crypto/sha256"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestHollow: --hollow keeps the tree (names, sizes, attributes, links,
// shared duplicates) but stores no data: no blocks, and every file reads
// as zeros.
func TestHollow(t *testing.T) {
	src := makeTree(t)
	want := expected(t, src)
	dir := t.TempDir()
	for _, extra := range [][]string{nil, {"--file-hash", "none", "--order", "none"}} {
		img := filepath.Join(dir, "h.dwarfs")
		args := append([]string{"-i", src, "-o", img, "-f", "--log-level", "warn", "--hollow"}, extra...)
		code, _, stderr := run(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", extra, code, stderr)
		}
		if !strings.Contains(stderr, "hollow") {
			t.Errorf("no warning about the hollow image: %q", stderr)
		}
		got, md := readBack(t, img)
		if n := openBlocks(t, img).NumBlocks(); n != 0 {
			t.Errorf("%v: %d blocks, want none", extra, n)
		}
		if len(md.Features) != 1 || md.Features[0] != "sparsefiles" {
			t.Errorf("%v: features %v", extra, md.Features)
		}
		for p, w := range want {
			if w.mode&syscall.S_IFMT == syscall.S_IFREG {
				w.content = sha256.Sum256(make([]byte, w.size))
				want[p] = w
			}
		}
		compareTrees(t, want, got, cmpOpts{})
		// Whole-file dedup still shares the copies' data (unless the
		// hash is off).
		if extra == nil && len(md.SharedFilesTable) == 0 {
			t.Errorf("duplicates not shared")
		}
	}
	code, _, stderr := run("-i", src, "-o", filepath.Join(dir, "x"), "--hollow", "--no-sparse-files")
	if code != 1 || !strings.Contains(stderr, "--hollow cannot be combined with --no-sparse-files") {
		t.Errorf("--hollow --no-sparse-files: exit %d %q", code, stderr)
	}
}

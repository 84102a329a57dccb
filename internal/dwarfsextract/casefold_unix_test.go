//go:build unix

package dwarfsextract

import (
	"path/filepath"
	"strings"
	"testing"
)

// A case-sensitive target extracts every name, whatever the mode.
func TestNoCaseFoldingNoCollision(t *testing.T) {
	img := collidingImage(t)
	out := filepath.Join(t.TempDir(), "out")
	rc, _, errs := runx("-i", img, "-o", out, "--case-collision=error")
	if rc != 0 {
		t.Fatalf("rc %d: %s", rc, errs)
	}
	if got := listTree(t, out); len(got) != 13 {
		t.Errorf("extracted %d entries, want all 13: %q", len(got), got)
	}
	if rc, _, errs := runx("-i", img, "-o", out, "--case-collision=fold"); rc != 1 || !strings.Contains(errs, `invalid --case-collision "fold"`) {
		t.Errorf("bad mode: rc %d %q", rc, errs)
	}
}

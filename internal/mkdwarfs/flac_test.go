//go:build unix

package mkdwarfs

import (
	"path/filepath"
	"strings"
	"testing"
)

// flac encodes audio only; without the layout a categorizer finds it is
// refused up front, as the reference refuses it.
func TestFLACNeedsCategory(t *testing.T) {
	src := t.TempDir()
	for _, args := range [][]string{
		{"-C", "flac"},
		{"-C", "flac:level=8:exhaustive"},
		{"--metadata-compression", "flac:level=3"},
	} {
		code, _, stderr := run(append([]string{"-i", src, "-o", filepath.Join(t.TempDir(), "x")}, args...)...)
		if code != 1 || !strings.Contains(stderr, "needs the sample layout of a category") {
			t.Errorf("%q: exit %d, %q", args, code, stderr)
		}
	}
	for _, args := range [][]string{{"-C", "ricepp"}, {"-C", "ricepp:block_size=32"}} {
		code, _, stderr := run(append([]string{"-i", src, "-o", filepath.Join(t.TempDir(), "x")}, args...)...)
		if code != 1 || !strings.Contains(stderr, "needs the pixel layout of a category (fits/image::") {
			t.Errorf("%q: exit %d, %q", args, code, stderr)
		}
	}
}

package godwarfs_test

import (
	"path/filepath"
	"testing"
)

// TestReferenceRiceppImages reads the images the reference mkdwarfs wrote
// with --categorize=fits (FITS image data in RICEPP blocks, see
// block/testdata/ricepp/README) and compares every file with the SHA-256
// sums of the source tree.
func TestReferenceRiceppImages(t *testing.T) {
	dir := filepath.Join("block", "testdata", "ricepp")
	want := readSums(t, filepath.Join(dir, "SHA256SUMS"), "tree/")
	images, _ := filepath.Glob(filepath.Join(dir, "*.dwarfs"))
	if len(want) == 0 || len(images) == 0 {
		t.Fatalf("%d sums, %d images", len(want), len(images))
	}
	for _, path := range images {
		t.Run(filepath.Base(path), func(t *testing.T) {
			checkSums(t, path, want)
		})
	}
}

package godwarfs_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs"
)

// TestReferenceRiceppImages reads the images the reference mkdwarfs wrote
// with --categorize=fits (FITS image data in RICEPP blocks, see
// block/testdata/ricepp/README) and compares every file with the SHA-256
// sums of the source tree.
func TestReferenceRiceppImages(t *testing.T) {
	dir := filepath.Join("block", "testdata", "ricepp")
	sums, err := os.Open(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer sums.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(sums)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && len(f[0]) == 64 {
			want[strings.TrimPrefix(f[1], "tree/")] = f[0]
		}
	}
	images, _ := filepath.Glob(filepath.Join(dir, "*.dwarfs"))
	if len(want) == 0 || len(images) == 0 {
		t.Fatalf("%d sums, %d images", len(want), len(images))
	}
	for _, path := range images {
		t.Run(filepath.Base(path), func(t *testing.T) {
			im, err := godwarfs.Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer im.Close()
			seen := 0
			err = fs.WalkDir(im, ".", func(p string, d fs.DirEntry, err error) error {
				if err != nil || !d.Type().IsRegular() {
					return err
				}
				data, err := fs.ReadFile(im, p)
				if err != nil {
					return err
				}
				sum := sha256.Sum256(data)
				if got := hex.EncodeToString(sum[:]); got != want[p] {
					t.Errorf("%s: sha256 %s, want %s", p, got, want[p])
				}
				seen++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if seen != len(want) {
				t.Errorf("%d files in the image, want %d", seen, len(want))
			}
		})
	}
}

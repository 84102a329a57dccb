package godwarfs_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/block"
)

// TestReferenceFLACImages reads images the reference mkdwarfs wrote with
// --categorize=pcmaudio at levels 1, 7 and 9 (FLAC levels 3, 5, 8) and
// compares every file with the SHA-256 sums in testdata/ref-flac.txt.
func TestReferenceFLACImages(t *testing.T) {
	want := map[string]string{}
	desc, err := os.Open("testdata/ref-flac.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer desc.Close()
	sc := bufio.NewScanner(desc)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && len(f[0]) == 64 {
			want[f[1]] = f[0]
		}
	}
	if len(want) != 36 {
		t.Fatalf("%d sums in ref-flac.txt, want 36", len(want))
	}
	for _, level := range []string{"1", "7", "9"} {
		t.Run("l"+level, func(t *testing.T) {
			path := "testdata/ref-flac-l" + level + ".dwarfs"
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			bi, err := block.OpenImage(bytes.NewReader(data), int64(len(data)), block.Options{ImageOffset: -1})
			if err != nil {
				t.Fatal(err)
			}
			flacBlocks := 0
			for _, s := range bi.Blocks() {
				if s.Compression == block.CompFLAC {
					flacBlocks++
				}
			}
			if flacBlocks < 10 {
				t.Errorf("%d FLAC blocks, want at least 10", flacBlocks)
			}
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
	gen, err := os.ReadFile("testdata/ref-flac.gen.py")
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(gen); hex.EncodeToString(sum[:]) != want["gen.py"] {
		t.Errorf("testdata/ref-flac.gen.py differs from the gen.py in the images")
	}
}

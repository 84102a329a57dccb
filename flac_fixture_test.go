package godwarfs_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"

	"github.com/godwarfs/godwarfs/block"
)

// TestReferenceFLACImages reads images the reference mkdwarfs wrote with
// --categorize=pcmaudio at levels 1, 7 and 9 (FLAC levels 3, 5, 8) and
// compares every file with the SHA-256 sums in testdata/ref-flac.txt.
func TestReferenceFLACImages(t *testing.T) {
	want := readSums(t, "testdata/ref-flac.txt", "")
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
			checkSums(t, path, want)
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

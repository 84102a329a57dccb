package godwarfs_test

import (
	"bytes"
	"io/fs"
	"os"
	"testing"
)

// TestReferenceLZMABinaryImage reads an image the reference mkdwarfs wrote
// with -C lzma:binary=x86 (an x86 BCJ filter before LZMA2 in its data
// block) and compares every file with the SHA-256 sums recorded beside it.
func TestReferenceLZMABinaryImage(t *testing.T) {
	want := readSums(t, "testdata/ref-lzma-x86.txt", "")
	if len(want) != 2 {
		t.Fatalf("%d sums in ref-lzma-x86.txt, want 2", len(want))
	}
	im := checkSums(t, "testdata/ref-lzma-x86.dwarfs", want)
	gen, err := os.ReadFile("testdata/ref-lzma-x86.gen.py")
	if err != nil {
		t.Fatal(err)
	}
	if inImage, err := fs.ReadFile(im, "gen.py"); err != nil || !bytes.Equal(inImage, gen) {
		t.Errorf("gen.py in the image differs from testdata/ref-lzma-x86.gen.py: %v", err)
	}
}

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
)

// TestReferenceLZMABinaryImage reads an image the reference mkdwarfs wrote
// with -C lzma:binary=x86 (an x86 BCJ filter before LZMA2 in its data
// block) and compares every file with the SHA-256 sums recorded beside it.
func TestReferenceLZMABinaryImage(t *testing.T) {
	want := map[string]string{}
	desc, err := os.Open("testdata/ref-lzma-x86.txt")
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
	if len(want) != 2 {
		t.Fatalf("%d sums in ref-lzma-x86.txt, want 2", len(want))
	}
	im, err := godwarfs.Open("testdata/ref-lzma-x86.dwarfs", nil)
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
	gen, err := os.ReadFile("testdata/ref-lzma-x86.gen.py")
	if err != nil {
		t.Fatal(err)
	}
	if inImage, err := fs.ReadFile(im, "gen.py"); err != nil || !bytes.Equal(inImage, gen) {
		t.Errorf("gen.py in the image differs from testdata/ref-lzma-x86.gen.py: %v", err)
	}
}

package imagetest

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/writer"
)

// Tree writes a directory of n regular files in a few subdirectories,
// with contents (part text, part random, from 1 to about 150 KiB) that
// depend on seed, and returns its path.
func Tree(tb testing.TB, seed uint64, n int) string {
	tb.Helper()
	dir := tb.TempDir()
	rng := rand.New(rand.NewPCG(seed, 77))
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%d", i%3), fmt.Sprintf("f%03d.dat", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		size := 1 + rng.IntN(150<<10)
		b := make([]byte, size)
		for j := range b {
			if j%4096 < 2048 {
				b[j] = byte(rng.Uint32())
			} else {
				b[j] = "seed text line\n"[j%15]
			}
		}
		copy(b, fmt.Sprintf("seed %d file %d\n", seed, i))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// Build packs dir into an image of 2^blockBits-byte blocks (zstd level 1)
// at path.
func Build(tb testing.TB, dir, path string, blockBits int) {
	tb.Helper()
	scan := dedup.DefaultOptions()
	scan.Input = dir
	scan.BlockSizeBits = blockBits
	_, err := writer.Build(context.Background(), writer.BuildOptions{
		Target: writer.Target{Output: path, BlockCompression: "zstd:level=1"},
		Scan:   scan,
	})
	if err != nil {
		tb.Fatalf("building an image of %s: %v", dir, err)
	}
}

// SameTree checks that every file of tree reads the same under dir, byte
// for byte, and that dir lists nothing else (a mount or an extraction of
// an image of tree).
func SameTree(tb testing.TB, tree, dir string) {
	tb.Helper()
	var want, got []string
	err := filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(tree, p)
		want = append(want, rel)
		if !d.Type().IsRegular() {
			return nil
		}
		a, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			return err
		}
		if !bytes.Equal(a, b) {
			tb.Errorf("%s: %d bytes differ from the source's %d", filepath.Join(dir, rel), len(b), len(a))
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		got = append(got, rel)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	if !slices.Equal(got, want) {
		tb.Errorf("%s lists %q, want %q", dir, got, want)
	}
}

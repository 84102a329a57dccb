package godwarfs_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/fixtures"
)

// TestReferenceCodecImages reads the images the reference mkdwarfs wrote
// with the codecs the default build does not use (the fixtures' codecs/,
// see the README or .txt beside each set) and compares every file with the
// SHA-256 sums recorded beside them. Each image must hold blocks of the
// codec it was written for, so a set that silently fell back to zstd would
// not pass.
func TestReferenceCodecImages(t *testing.T) {
	for _, set := range []struct {
		name   string
		sums   string // sha256sum output, relative to the fixtures
		prefix string // taken off the paths in sums
		nSums  int    // how many sums the list holds; 0: at least one
		images string // glob, relative to the fixtures
		gen    string // generator kept beside the images, whose sum is gen.py's; "" if none
		codec  block.Compression
		blocks int // at least this many blocks of codec in each image
	}{
		// -C lzma:binary=x86: an x86 BCJ filter before LZMA2 in the
		// one data block.
		{"lzma-x86", "codecs/ref-lzma-x86.txt", "", 2, "codecs/ref-lzma-x86.dwarfs", "codecs/ref-lzma-x86.gen.py", block.CompLZMA, 1},
		// --categorize=pcmaudio at -l1, -l7 and -l9 (FLAC levels 3, 5, 8).
		{"flac", "codecs/ref-flac.txt", "", 36, "codecs/ref-flac-l*.dwarfs", "codecs/ref-flac.gen.py", block.CompFLAC, 10},
		// --categorize=fits: FITS image data in RICEPP blocks of several
		// block sizes.
		{"ricepp", "codecs/ricepp/SHA256SUMS", "tree/", 0, "codecs/ricepp/*.dwarfs", "", block.CompRICEPP, 1},
	} {
		t.Run(set.name, func(t *testing.T) {
			want := readSums(t, fixtures.File(t, set.sums), set.prefix)
			if len(want) == 0 || set.nSums > 0 && len(want) != set.nSums {
				t.Fatalf("%d sums in %s, want %d (0: at least one)", len(want), set.sums, set.nSums)
			}
			if set.gen != "" {
				gen, err := os.ReadFile(fixtures.File(t, set.gen))
				if err != nil {
					t.Fatal(err)
				}
				if sum := sha256.Sum256(gen); hex.EncodeToString(sum[:]) != want["gen.py"] {
					t.Errorf("%s differs from the gen.py in the images", set.gen)
				}
			}
			for _, path := range fixtures.Glob(t, set.images) {
				t.Run(filepath.Base(path), func(t *testing.T) {
					if n := countBlocks(t, path, set.codec); n < set.blocks {
						t.Errorf("%d %v blocks, want at least %d", n, set.codec, set.blocks)
					}
					checkSums(t, path, want)
				})
			}
		})
	}
}

// countBlocks returns how many blocks of the image at path are compressed
// with c.
func countBlocks(t *testing.T, path string, c block.Compression) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bi, err := block.OpenImage(bytes.NewReader(data), int64(len(data)), block.Options{ImageOffset: -1, Name: path})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range bi.Blocks() {
		if s.Compression == c {
			n++
		}
	}
	return n
}

// readSums reads a "SHA256  path" list (sha256sum's output) into a map by
// path, with prefix taken off the paths.
func readSums(t *testing.T, file, prefix string) map[string]string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if w := strings.Fields(sc.Text()); len(w) == 2 && len(w[0]) == 64 {
			want[strings.TrimPrefix(w[1], prefix)] = w[0]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return want
}

// checkSums opens the image at path and requires its regular files to be
// exactly those of want, each with its SHA-256.
func checkSums(t *testing.T, path string, want map[string]string) {
	t.Helper()
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
			t.Errorf("%s: %s: sha256 %s, want %s", path, p, got, want[p])
		}
		seen++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != len(want) {
		t.Errorf("%s: %d files, want %d", path, seen, len(want))
	}
}

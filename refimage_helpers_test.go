package godwarfs_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs"
)

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
// exactly those of want, each with its SHA-256. It returns the image,
// closed when t ends.
func checkSums(t *testing.T, path string, want map[string]string) *godwarfs.Image {
	t.Helper()
	im, err := godwarfs.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { im.Close() })
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
	return im
}

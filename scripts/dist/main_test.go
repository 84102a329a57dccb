package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Two runs at different times give the same bytes; every entry carries
// the given time and owner 0, and the documents are there.
func TestReproducible(t *testing.T) {
	bins := filepath.Join(t.TempDir(), "linux-amd64")
	if err := os.MkdirAll(bins, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bins, "mkdwarfs"), []byte("binary"), 0o700); err != nil {
		t.Fatal(err)
	}
	out1, out2 := t.TempDir(), t.TempDir()
	t.Chdir("../..") // README.md, LICENSE, man/ and completions/ are read from the module root
	epoch := time.Unix(1700000000, 0).UTC()
	if err := run("v1", epoch, out1, []string{bins}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if err := os.Chtimes(filepath.Join(bins, "mkdwarfs"), time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := run("v1", epoch, out2, []string{bins}); err != nil {
		t.Fatal(err)
	}
	name := "godwarfs-v1-linux-amd64.tar.gz"
	a, err := os.ReadFile(filepath.Join(out1, name))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out2, name))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two runs gave different archives")
	}
	sums, err := os.ReadFile(filepath.Join(out1, "SHA256SUMS"))
	if err != nil || !strings.HasSuffix(string(sums), "  "+name+"\n") {
		t.Fatalf("SHA256SUMS %q, %v", sums, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	seen := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seen[h.Name] = true
		if !h.ModTime.Equal(epoch) || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: time %v owner %d:%d", h.Name, h.ModTime, h.Uid, h.Gid)
		}
		if h.Name == "godwarfs-v1-linux-amd64/mkdwarfs" && h.Mode != 0o755 {
			t.Errorf("mkdwarfs: mode %o", h.Mode)
		}
	}
	for _, n := range []string{"mkdwarfs", "README.md", "LICENSE", "man/man1/mkdwarfs.1", "man/man1/dwarfsextract.1",
		"share/bash-completion/completions/dwarfs", "share/zsh/site-functions/_mkdwarfs", "share/fish/vendor_completions.d/dwarfsck.fish"} {
		if !seen["godwarfs-v1-linux-amd64/"+n] {
			t.Errorf("%s missing from the archive", n)
		}
	}
}

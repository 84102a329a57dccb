//go:build unix

package dedup

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestDataExtentsAllocated: a file with holes is probed when the
// filesystem reports fewer bytes allocated than its size, and a file as
// large as what is allocated for it is taken as having none.
func TestDataExtentsAllocated(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "sparse")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("data"), 1<<20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	in, _, err := statPath(name, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if in.dense {
		t.Skipf("skipped: the filesystem allocated as many bytes as the size %d for a file with a 1 MiB hole", in.size)
	}
	f, err = openRead(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ext, err := dataExtents(f, in.size, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ext) != 1 || ext[0].off > 1<<20 || ext[0].off+ext[0].len != in.size {
		t.Fatalf("extents %v of a file with data at 1 MiB, size %d", ext, in.size)
	}
	// Probing moved the offset; reading must start at 0 again.
	var b [1]byte
	if n, err := f.Read(b[:]); n != 1 || err != nil || b[0] != 0 {
		t.Fatalf("read after probing: %d %v %q", n, err, b[:n])
	}
	if ext, err := dataExtents(f, in.size, in.size); err != nil || ext != nil {
		t.Fatalf("fully allocated: extents %v, err %v; want none", ext, err)
	}
}

// TestOpenRead: errors read like os.Open's.
func TestOpenRead(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	if err := os.WriteFile(name, []byte("content"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := openRead(name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f)
	if err != nil || string(b) != "content" {
		t.Fatalf("read %q, %v", b, err)
	}
	if f.Name() != name {
		t.Errorf("name %q", f.Name())
	}
	f.Close()
	missing := filepath.Join(dir, "missing")
	_, err = openRead(missing)
	_, want := os.Open(missing)
	var pe *fs.PathError
	if !errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) || err.Error() != want.Error() {
		t.Fatalf("got %v, want %v", err, want)
	}
}

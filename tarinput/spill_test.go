package tarinput

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSpillLeavesNothing: an archive read from a pipe beyond the memory
// limit spills to a file in TempDir, which is gone once the Source is
// closed, on every system: Windows cannot remove a file while it is open.
func TestSpillLeavesNothing(t *testing.T) {
	var arch bytes.Buffer
	tw := tar.NewWriter(&arch)
	for i, name := range []string{"a", "b", "c"} {
		data := strings.Repeat(name, 4000*(i+1))
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: its RemoveAll fails under Wine 8 (no POSIX delete
	// semantics), and the test runs there; its files go by name.
	dir, err := os.MkdirTemp("", "tarinput-spill-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			os.Remove(filepath.Join(dir, e.Name()))
		}
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing the temporary directory: %v", err)
		}
	})
	s := New("pipe", bytes.NewReader(arch.Bytes()), Options{TempDir: dir, MemoryLimit: 5000})
	root, err := s.ReadTree(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.spill.f == nil {
		t.Fatal("no spill file beyond the memory limit")
	}
	for _, c := range root.Children {
		buf := make([]byte, c.Size)
		if _, err := s.spill.ReadAt(buf, c.Data.Off); err != nil || string(buf) != strings.Repeat(c.Name, len(buf)) {
			t.Errorf("%s: %v, %.20q...", c.Name, err, buf)
		}
		data, release, err := s.spill.Map(c.Data.Off, c.Size)
		if err == nil {
			if string(data) != strings.Repeat(c.Name, len(data)) {
				t.Errorf("Map %s: %.20q...", c.Name, data)
			}
			release()
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("left in TempDir after Close: %v (%v)", names, err)
	}
}

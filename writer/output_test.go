//go:build unix

package writer

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// entries lists a directory, so a test can see that no temporary file is
// left behind.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestOutputCommit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "img.dwarfs")
	o, err := createOutput(path, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("output visible before commit: %v", err)
	}
	if _, err := o.Write([]byte("image")); err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	o.Abort() // after a commit: no effect
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "image" {
		t.Fatalf("read %q, %v", got, err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode())
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("directory holds %v, want only the image", names)
	}
}

func TestOutputErrors(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "old.dwarfs")
	if err := os.WriteFile(existing, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		overwrite  bool
		want       string
	}{
		{"exists", existing, false, "output file " + existing + " already exists"},
		{"directory", sub, true, "output " + sub + " is a directory"},
		{"no-parent", filepath.Join(dir, "missing", "x.dwarfs"), true,
			"creating output " + filepath.Join(dir, "missing", "x.dwarfs") + ": no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := createOutput(tc.path, tc.overwrite, nil)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if tc.name == "exists" && !errors.Is(err, fs.ErrExist) {
				t.Errorf("%v is not fs.ErrExist", err)
			}
		})
	}
	if got, _ := os.ReadFile(existing); string(got) != "keep me" {
		t.Error("existing output modified")
	}

	// A cancelled run is not committed, and the existing image stays.
	o, err := createOutput(existing, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	o.Write([]byte("new"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := o.Commit(ctx); err != context.Canceled {
		t.Fatalf("commit after cancel: %v", err)
	}
	if got, _ := os.ReadFile(existing); string(got) != "keep me" {
		t.Error("existing output replaced by a cancelled run")
	}
	names := entries(t, dir)
	if strings.Join(names, " ") != "old.dwarfs sub" {
		t.Errorf("left behind: %v", names)
	}
}

func TestOutputErrorNamesOutput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "img.dwarfs")
	o, err := createOutput(path, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Abort()
	o.tmp.Close() // make the flush fail
	o.Write(bytes.Repeat([]byte{1}, 2<<20))
	err = o.Commit(context.Background())
	if err == nil || !strings.Contains(err.Error(), path+":") || strings.Contains(err.Error(), ".tmp") {
		t.Fatalf("error %v should name %s and not the temporary file", err, path)
	}
	if names := entries(t, dir); len(names) != 0 {
		t.Errorf("left behind: %v", names)
	}
}

func TestOutputStream(t *testing.T) {
	var buf bytes.Buffer
	o, err := createOutput("-", false, &buf)
	if err != nil {
		t.Fatal(err)
	}
	o.Write([]byte("image"))
	if err := o.Commit(context.Background()); err != nil || buf.String() != "image" || o.Size() != 5 {
		t.Fatalf("stream got %q (size %d), %v", buf.String(), o.Size(), err)
	}
}

// An existing FIFO or device (-o /dev/null) is written in place, never
// replaced by a file, and only with overwrite, like any existing output.
func TestOutputDevice(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("skipped: cannot make a FIFO: %v", err)
	}
	if _, err := createOutput(fifo, false, nil); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("without overwrite: %v, want ErrExist", err)
	}
	// A reader is there before the writer; a file renamed over the FIFO
	// would leave it reading nothing.
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	o, err := createOutput(fifo, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Write([]byte("image")); err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	o.Abort()
	r.Fd() // back to blocking reads
	if b, err := io.ReadAll(r); string(b) != "image" {
		t.Errorf("read %q, %v from the FIFO, want %q", b, err, "image")
	}
	st, err := os.Lstat(fifo)
	if err != nil || st.Mode().Type() != fs.ModeNamedPipe {
		t.Errorf("output is now %v, %v; want the FIFO", st.Mode(), err)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("directory holds %v, want only the FIFO", names)
	}
}

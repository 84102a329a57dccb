package dedup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/metadata"
)

// TestContinueAfterReadError: with ContinueOnErr a file that fails while
// its data is being segmented (here: it shrinks after the scan) is kept as
// an empty file and counted, as the reference does; the other files and a
// hard link to it stay consistent, and the sink's errors still end the
// build.
func TestContinueAfterReadError(t *testing.T) {
	root := writeTree(t, map[string]string{"grow": "0123456789", "other": strings.Repeat("x", 3000), "same": "0123456789"})
	p := filepath.Join(root, "grow")
	if err := os.Link(p, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	o := testOpts(root)
	o.FileHash = nil
	o.Order = OrderPath // no similarity read: the change happens before segmenting
	o.ContinueOnErr = true
	var log strings.Builder
	o.Log = &log
	shrunk := false
	o.OpenFile = func(name string) (*os.File, error) {
		if name == p && !shrunk {
			shrunk = true
			os.WriteFile(p, []byte("0123"), 0o644)
		}
		return os.Open(name)
	}
	var col collect
	md, st, err := Build(context.Background(), o, col.sink)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if st.Errors != 1 || !strings.Contains(log.String(), p) || !strings.Contains(log.String(), "storing it as an empty file") {
		t.Errorf("errors %d, log %q", st.Errors, log.String())
	}
	fsys, err := metadata.NewFS(md)
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.Check(); err != nil {
		t.Fatalf("metadata check: %v", err)
	}
	for name, size := range map[string]int64{"grow": 0, "link": 0, "other": 3000, "same": 10} {
		ino, err := fsys.LookupPath(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		in, err := fsys.Inode(ino)
		if err != nil || in.Size != size {
			t.Errorf("%s: size %d (%v), want %d", name, in.Size, err, size)
		}
	}
	if md.TotalFsSize != 3010 {
		t.Errorf("total size %d, want 3010", md.TotalFsSize)
	}

	// A failing sink is not the input's fault: it ends the build.
	o.OpenFile = os.Open
	o.BlockSizeBits = 10 // "other" fills blocks while it is segmented
	log.Reset()
	sinkErr := errors.New("disk full")
	_, _, err = Build(context.Background(), o, func(context.Context, []byte) error { return sinkErr })
	if !errors.Is(err, sinkErr) || log.Len() > 0 {
		t.Errorf("sink failure: %v, log %q", err, log.String())
	}
}

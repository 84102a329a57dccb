package dwarfsck

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/internal/testimage"
	"github.com/godwarfs/godwarfs/metadata"
)

// badImage writes an image of two files, a and b (10 bytes each of one
// 100-byte block), whose metadata mut has changed, and returns its path.
func badImage(t *testing.T, mut func(md *metadata.Metadata)) string {
	t.Helper()
	chunks := [][]metadata.Chunk{{{Block: 0, Offset: 0, Size: 10}}, {{Block: 0, Offset: 10, Size: 10}}}
	md := testimage.Files(1024, []string{"a", "b"}, chunks)
	mut(md)
	img, err := testimage.Build(md, [][]byte{bytes.Repeat([]byte("x"), 100)}, "zstd")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "bad.dwarfs")
	if err := os.WriteFile(p, img, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMetadataConsistency: dwarfsck refuses structurally inconsistent
// metadata with a message naming the table, the index and the bad value.
func TestMetadataConsistency(t *testing.T) {
	cases := []struct {
		name string
		mut  func(md *metadata.Metadata)
		args []string
		want string
	}{
		{"unsorted names", func(md *metadata.Metadata) { md.Names = []string{"b", "a"} }, nil, `directory 0: entries "b" and "a" not strictly sorted`},
		{"mode index", func(md *metadata.Metadata) { md.Inodes[1].ModeIndex = 7 }, nil, "inodes[1].mode_index 7 out of range (2 modes)"},
		{"extra name", func(md *metadata.Metadata) { md.Names = append(md.Names, "c") }, nil, "names: 3 strings, indexes need 2"},
		{"compact symlink buffer", func(md *metadata.Metadata) {
			md.CompactSymlinks = &metadata.StringTable{Buffer: []byte("junk"), Index: []uint32{0}}
		}, nil, "compact_symlinks: index describes 0 bytes, buffer has 4"},
		{"chunk past block", func(md *metadata.Metadata) { md.Chunks[1].Offset = 95 }, []string{"--checksum=sha256"}, "chunks[1] ends at 105, beyond block 0 of 100 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := badImage(t, c.mut)
			rc, _, errs := runck(append(c.args, p)...)
			if rc != ExitImage || !strings.Contains(errs, c.want) || !strings.Contains(errs, p) {
				t.Errorf("rc %d, stderr %q\nwant exit %d naming the image and %q", rc, errs, ExitImage, c.want)
			}
		})
	}
}

// TestNoCheckMetadata: --no-check leaves out the full consistency check
// of the metadata, as the reference's does: a fault only that check
// finds passes, a directory's fault fails whatever reads the directory,
// and what opening needs is still refused.
func TestNoCheckMetadata(t *testing.T) {
	cases := []struct {
		name string
		mut  func(md *metadata.Metadata)
		args []string
		want string // "" for exit 0
	}{
		{"unsorted names", func(md *metadata.Metadata) { md.Names = []string{"b", "a"} }, []string{"-q"}, ""},
		{"unsorted names listed", func(md *metadata.Metadata) { md.Names = []string{"b", "a"} }, []string{"--list"}, `directory 0: entries "b" and "a" not strictly sorted`},
		{"nlink", func(md *metadata.Metadata) {
			md.Options.InodesHaveNlink = true
			md.Inodes[1].NlinkMinusOne = 2
		}, []string{"--list"}, ""},
		{"mode index", func(md *metadata.Metadata) { md.Inodes[1].ModeIndex = 7 }, []string{"-q"}, "inodes[1].mode_index 7 out of range (2 modes)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := badImage(t, func(md *metadata.Metadata) {
				if md.Options == nil {
					md.Options = &metadata.FsOptions{}
				}
				c.mut(md)
			})
			// Without --no-check, each is refused.
			if rc, _, errs := runck("-q", p); rc != ExitImage {
				t.Errorf("without --no-check: rc %d, stderr %q", rc, errs)
			}
			rc, _, errs := runck(append([]string{"--no-check"}, append(c.args, p)...)...)
			switch {
			case c.want == "" && rc != 0:
				t.Errorf("--no-check: rc %d, stderr %q, want exit 0", rc, errs)
			case c.want != "" && (rc != ExitImage || !strings.Contains(errs, c.want) || !strings.Contains(errs, p)):
				t.Errorf("--no-check: rc %d, stderr %q\nwant exit %d naming the image and %q", rc, errs, ExitImage, c.want)
			}
		})
	}
}

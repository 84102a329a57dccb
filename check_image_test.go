package godwarfs_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/testimage"
	"github.com/godwarfs/godwarfs/metadata"

	"github.com/godwarfs/godwarfs/internal/fixtures"
)

func writeImage(t *testing.T, img []byte) string {
	t.Helper()
	p := fixtures.TempFile(t, "img.dwarfs")
	if err := os.WriteFile(p, img, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestChunkBlockChecks: a chunk naming a block the image lacks is refused
// at open; a chunk reaching past its block's uncompressed size is refused
// at open for stored blocks and when the block is first loaded otherwise,
// failing only the files that need that block.
func TestChunkBlockChecks(t *testing.T) {
	b0, b1 := bytes.Repeat([]byte("a"), 100), bytes.Repeat([]byte("b"), 100)
	names := []string{"a", "b"}
	build := func(comp string, c0 metadata.Chunk) string {
		md := testimage.Files(1024, names, [][]metadata.Chunk{{c0}, {{Block: 1, Offset: 0, Size: 100}}})
		img, err := testimage.Build(md, [][]byte{b0, b1}, comp)
		if err != nil {
			t.Fatal(err)
		}
		return writeImage(t, img)
	}
	p := build("zstd", metadata.Chunk{Block: 5, Offset: 0, Size: 10})
	if _, err := godwarfs.Open(p, nil); err == nil || !strings.Contains(err.Error(), "chunks[0]: block 5 out of range (2 blocks)") {
		t.Errorf("Open: %v", err)
	}
	p = build("null", metadata.Chunk{Block: 0, Offset: 90, Size: 20})
	if _, err := godwarfs.Open(p, nil); err == nil || !strings.Contains(err.Error(), "chunks[0] ends at 110, beyond block 0 of 100 bytes") {
		t.Errorf("Open (stored block): %v", err)
	}
	p = build("zstd", metadata.Chunk{Block: 0, Offset: 90, Size: 20})
	im, err := godwarfs.Open(p, nil)
	if err != nil {
		t.Fatalf("Open (compressed block, size not yet known): %v", err)
	}
	defer im.Close()
	if _, err := im.ReadFile("a"); err == nil || !strings.Contains(err.Error(), "chunks[0] ends at 110, beyond block 0 of 100 bytes") {
		t.Errorf("ReadFile a: %v", err)
	}
	if got, err := im.ReadFile("b"); err != nil || !bytes.Equal(got, b1) {
		t.Errorf("ReadFile b: %v", err)
	}
}

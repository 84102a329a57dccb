//go:build unix

package mkdwarfs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/metadata"
)

// With SOURCE_DATE_EPOCH, two builds of one tree a second apart are
// byte-identical, and the creation time and the history entry carry the
// given time (the history still records the arguments).
func TestSourceDateEpoch(t *testing.T) {
	const epoch = 1700000000
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	src := makeTree(t)
	img := filepath.Join(t.TempDir(), "r.dwarfs")
	args := []string{"-i", src, "-o", img, "--force", "-l", "3", "--log-level", "warn"}
	mk(t, args...)
	first, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	mk(t, args...)
	second, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Fatalf("two builds differ (%d and %d bytes)", len(first), len(second))
	}

	im, err := godwarfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	parts := imageaccess.Of(im)
	if c := parts.Metadata.CreateTimestamp; c == nil || *c != epoch {
		t.Errorf("create timestamp %v, want %d", c, epoch)
	}
	hs := parts.Blocks.Find(block.SectionHistory)
	if len(hs) != 1 {
		t.Fatalf("%d history sections", len(hs))
	}
	b, err := parts.Blocks.ReadDecompressed(hs[0])
	if err != nil {
		t.Fatal(err)
	}
	h, err := metadata.DecodeHistory(b)
	if err != nil {
		t.Fatal(err)
	}
	last := h.Entries[len(h.Entries)-1]
	if last.Timestamp == nil || *last.Timestamp != epoch {
		t.Errorf("history timestamp %v, want %d", last.Timestamp, epoch)
	}
	if !strings.Contains(strings.Join(last.Arguments, " "), "--force") {
		t.Errorf("history arguments %q lack the command line", last.Arguments)
	}
}

func TestSourceDateEpochInvalid(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "yesterday")
	code, _, stderr := run("-i", t.TempDir(), "-o", filepath.Join(t.TempDir(), "x.dwarfs"))
	if code == 0 || !strings.Contains(stderr, `SOURCE_DATE_EPOCH="yesterday"`) {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

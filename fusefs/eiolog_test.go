//go:build linux && !386 && !arm

package fusefs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/testimage"
)

// A read that fails with EIO leaves the reason in the driver's log,
// naming the image and the damaged section, once however often it is read.
func TestEIOReasonLogged(t *testing.T) {
	sp, err := testimage.NewSpread("zstd", 3<<10)
	if err != nil {
		t.Fatal(err)
	}
	img := bytes.Clone(sp.Image)
	probe, err := godwarfs.OpenReaderAt(bytes.NewReader(img), int64(len(img)), "probe", nil)
	if err != nil {
		t.Fatal(err)
	}
	off, n := blockSpan(probe, 1)
	probe.Close()
	img[off+n/2] ^= 0xff // the payload no longer matches its checksum
	im, err := godwarfs.OpenReaderAt(bytes.NewReader(img), int64(len(img)), "damaged.dwarfs", nil)
	if err != nil {
		t.Fatal(err)
	}
	src := fusefs.NewImageSource(im)
	t.Cleanup(func() { src.Close(); im.Close() })
	srv, stderr := mountWith(t, src, "", nil)

	var bad string
	for name := range sp.Files {
		if sp.NeedsBlock(name, 1) {
			bad = name
			break
		}
	}
	for range 3 {
		if _, err := os.ReadFile(filepath.Join(srv.Dir(), bad)); err == nil || !strings.Contains(err.Error(), syscall.EIO.Error()) {
			t.Fatalf("%s needs the damaged block: err %v, want EIO", bad, err)
		}
	}
	stderr.mu.Lock()
	log := stderr.b.String()
	stderr.mu.Unlock()
	if c := strings.Count(log, "dwarfs: I/O error: damaged.dwarfs"); c != 1 || !strings.Contains(log, "section 1 (BLOCK): checksum mismatch") {
		t.Errorf("the log has %d messages naming the image (want 1, naming the checksum of section 1):\n%s", c, log)
	}
}

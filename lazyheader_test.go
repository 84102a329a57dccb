package godwarfs_test

import (
	"bytes"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/faultio"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
)

// blockHeader is where block n's header lies in the image.
func blockHeader(t *testing.T, image []byte, n int) int64 {
	t.Helper()
	probe, err := godwarfs.OpenReaderAt(bytes.NewReader(image), int64(len(image)), "fault.dwarfs", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	bi := imageaccess.Of(probe).Blocks
	s := bi.Blocks()[n]
	return bi.Offset() + s.HeaderOffset
}

// TestLazyHeaderFaults opens images as the driver does (block headers
// read on first use): a header unreadable at first use fails the files
// needing that block until the storage recovers, a damaged header fails
// them for good with an error naming the image and section, and a
// caller asking for every header (EagerHeaders, dwarfsck) gets the damage
// at open.
func TestLazyHeaderFaults(t *testing.T) {
	for _, comp := range []string{"zstd", "null"} {
		t.Run(comp, func(t *testing.T) {
			fi := newFaultImage(t, comp)
			hdr := blockHeader(t, fi.Image, 1)
			lazy := &godwarfs.Options{LazyBlockCheck: true, ExactOffset: true}

			fr := faultio.New(bytes.NewReader(fi.Image))
			fr.Fail(hdr, 64, syscall.EIO)
			im, err := godwarfs.OpenReaderAt(fr, int64(len(fi.Image)), "fault.dwarfs", lazy)
			if err != nil {
				t.Fatalf("open read a block header: %v", err)
			}
			defer im.Close()
			if fr.Failed() != 0 {
				t.Fatal("open read block 1's header")
			}
			if b, _ := imageaccess.Of(im).Blocks.Block(1); !b.Pending() {
				t.Fatal("block 1 not pending after the open")
			}
			fi.expectFaults(t, fi.readAll(t, im), 1, syscall.EIO)
			fr.Clear()
			fi.expectFaults(t, fi.readAll(t, im), -1, nil)

			damaged := bytes.Clone(fi.Image)
			damaged[hdr] = 'X' // the section magic
			im2, err := godwarfs.OpenReaderAt(bytes.NewReader(damaged), int64(len(damaged)), "fault.dwarfs", lazy)
			if err != nil {
				t.Fatalf("a damaged block header must not fail a lazy open: %v", err)
			}
			defer im2.Close()
			res := fi.readAll(t, im2)
			fi.expectFaults(t, res, 1, block.ErrCorrupt)
			for name, err := range res {
				if err != nil && !strings.Contains(err.Error(), "fault.dwarfs: section ") {
					t.Errorf("%s: %v does not name the section", name, err)
				}
			}
			_, err = godwarfs.OpenReaderAt(bytes.NewReader(damaged), int64(len(damaged)), "fault.dwarfs", &godwarfs.Options{LazyBlockCheck: true, EagerHeaders: true})
			if !errors.Is(err, block.ErrCorrupt) || !strings.Contains(err.Error(), "bad section magic") {
				t.Errorf("EagerHeaders open = %v, want the damaged header", err)
			}
		})
	}
}

package godwarfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/faultio"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/internal/testimage"
)

// faultImage is a testimage.Spread with the test's helpers.
type faultImage struct{ *testimage.Spread }

func newFaultImage(t testing.TB, compression string) *faultImage {
	sp, err := testimage.NewSpread(compression, 150)
	if err != nil {
		t.Fatal(err)
	}
	return &faultImage{sp}
}

// blockRange is where block n's payload lies in the image.
func blockRange(im *godwarfs.Image, n int) (off, length int64) {
	bi := imageaccess.Of(im).Blocks
	s := bi.Blocks()[n]
	return bi.Offset() + s.DataOffset, s.Length
}

// readAll reads every file from several goroutines at once and returns
// the outcome per file (the first error any reader saw, or nil when all
// readers got the exact content).
func (fi *faultImage) readAll(t *testing.T, im *godwarfs.Image) map[string]error {
	var mu sync.Mutex
	res := map[string]error{}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range len(fi.Files) * 2 {
				name := string(rune('a' + (g+i)%len(fi.Files)))
				got, err := im.ReadFile(name)
				if err == nil && !bytes.Equal(got, fi.Files[name]) {
					err = fmt.Errorf("%s: content differs", name)
				}
				mu.Lock()
				if _, seen := res[name]; !seen || err != nil {
					res[name] = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return res
}

// expectFaults checks that exactly the files needing block bad failed,
// with an error that names the image and matches want, and that every
// other file read byte-exact.
func (fi *faultImage) expectFaults(t *testing.T, res map[string]error, bad int, want error) {
	t.Helper()
	for name, err := range res {
		switch {
		case bad >= 0 && fi.NeedsBlock(name, bad):
			if err == nil {
				t.Errorf("%s needs faulty block %d but read fine", name, bad)
			} else if !errors.Is(err, want) || !strings.Contains(err.Error(), "fault.dwarfs") {
				t.Errorf("%s: error %q, want %v naming the image", name, err, want)
			}
		case err != nil:
			t.Errorf("%s does not need block %d: %v", name, bad, err)
		}
	}
	if len(res) != len(fi.Files) {
		t.Errorf("read %d of %d files", len(res), len(fi.Files))
	}
}

// TestFaultReadError: a storage read error inside one block fails exactly
// the files that need the block, every other file reads byte-exact, and
// once the storage recovers the block reads again (no error is cached).
func TestFaultReadError(t *testing.T) {
	for _, comp := range []string{"zstd", "null"} {
		t.Run(comp, func(t *testing.T) {
			fi := newFaultImage(t, comp)
			fr := faultio.New(bytes.NewReader(fi.Image))
			im, err := godwarfs.OpenReaderAt(fr, int64(len(fi.Image)), "fault.dwarfs", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer im.Close()
			off, n := blockRange(im, 1)
			fr.Fail(off, n, syscall.EIO)
			fi.expectFaults(t, fi.readAll(t, im), 1, syscall.EIO)
			if fr.Failed() == 0 {
				t.Fatal("the fault was never hit")
			}
			fr.Clear()
			fi.expectFaults(t, fi.readAll(t, im), -1, nil)

			// Slow storage: same results, just later.
			fr.SetDelay(time.Millisecond)
			fi.expectFaults(t, fi.readAll(t, im), -1, nil)
		})
	}
}

// TestFaultAtOpen: a block unreadable while the image is opened is only a
// warning; reads needing it fail until the storage recovers.
func TestFaultAtOpen(t *testing.T) {
	fi := newFaultImage(t, "zstd")
	probe, err := godwarfs.OpenReaderAt(bytes.NewReader(fi.Image), int64(len(fi.Image)), "fault.dwarfs", nil)
	if err != nil {
		t.Fatal(err)
	}
	off, n := blockRange(probe, 2)
	probe.Close()
	fr := faultio.New(bytes.NewReader(fi.Image))
	fr.Fail(off, n, syscall.EIO)
	im, err := godwarfs.OpenReaderAt(fr, int64(len(fi.Image)), "fault.dwarfs", nil)
	if err != nil {
		t.Fatalf("a data block read error must not fail the open: %v", err)
	}
	defer im.Close()
	if w := im.Warnings(); len(w) != 1 || !errors.Is(w[0], syscall.EIO) {
		t.Errorf("warnings %v, want the read error of block 2", w)
	}
	fi.expectFaults(t, fi.readAll(t, im), 2, syscall.EIO)
	fr.Clear()
	fi.expectFaults(t, fi.readAll(t, im), -1, nil)
}

// TestFaultTruncated: storage that shrinks under an open image gives read
// errors for the files past the new end, never a crash, and the files
// before it keep reading. Both through a ReaderAt and with the image file
// itself truncated on disk.
func TestFaultTruncated(t *testing.T) {
	fi := newFaultImage(t, "zstd")
	fr := faultio.New(bytes.NewReader(fi.Image))
	im, err := godwarfs.OpenReaderAt(fr, int64(len(fi.Image)), "fault.dwarfs", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	off1, _ := blockRange(im, 1)
	fr.Truncate(off1 + 10)
	res := fi.readAll(t, im)
	for name, err := range res {
		if fi.NeedsBlock(name, 1) || fi.NeedsBlock(name, 2) {
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("%s: %v, want unexpected EOF", name, err)
			}
		} else if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	fr.Clear()
	fi.expectFaults(t, fi.readAll(t, im), -1, nil)

	p := writeImage(t, fi.Image)
	dm, err := godwarfs.Open(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Close()
	if err := os.Truncate(p, off1+10); err != nil {
		t.Fatal(err)
	}
	if got, err := dm.ReadFile("a"); err != nil || !bytes.Equal(got, fi.Files["a"]) {
		t.Errorf("a (before the cut): %v", err)
	}
	if _, err := dm.ReadFile("b"); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("b (past the cut): %v, want an error naming the image", err)
	}
	if err := os.WriteFile(p, fi.Image, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := dm.ReadFile("b"); err != nil || !bytes.Equal(got, fi.Files["b"]) {
		t.Errorf("b after the file is whole again: %v", err)
	}
}

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

// panicReader panics on every read past its first n.
type panicReader struct {
	r io.ReaderAt
	n atomic.Int64
}

func (p *panicReader) ReadAt(b []byte, off int64) (int, error) {
	if p.n.Add(-1) < 0 {
		panic("storage exploded")
	}
	return p.r.ReadAt(b, off)
}

// TestFaultPanicAtOpen: a panic while opening (here from the reader,
// standing in for a decoder bug on hostile input) is an error naming the
// image, at every stage of opening, and never takes the process down.
func TestFaultPanicAtOpen(t *testing.T) {
	fi := newFaultImage(t, "zstd")
	count := &panicReader{r: bytes.NewReader(fi.Image)}
	count.n.Store(1 << 30)
	im, err := godwarfs.OpenReaderAt(count, int64(len(fi.Image)), "fault.dwarfs", nil)
	if err != nil {
		t.Fatal(err)
	}
	im.Close()
	reads := int(1<<30 - count.n.Load())
	t.Logf("opening reads %d times", reads)
	if reads < 2 {
		t.Fatalf("opening read %d times, want several", reads)
	}
	for n := range reads {
		pr := &panicReader{r: bytes.NewReader(fi.Image)}
		pr.n.Store(int64(n))
		im, err := godwarfs.OpenReaderAt(pr, int64(len(fi.Image)), "fault.dwarfs", nil)
		if err == nil {
			im.Close()
			t.Fatalf("read %d panicked, yet the image opened", n)
		}
		if want := "fault.dwarfs: internal error (panic) while opening: storage exploded"; err.Error() != want {
			t.Errorf("panic at read %d: %q, want %q", n, err, want)
		}
	}
}

package block

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sharedfixtures "github.com/godwarfs/godwarfs/internal/fixtures"
)

// countingReader counts the reads made through it and the header-sized
// reads of each offset.
type countingReader struct {
	r     *bytes.Reader
	calls atomic.Int64
	bytes atomic.Int64
	mu    sync.Mutex
	at    map[int64]int
}

func newCountingReader(data []byte) *countingReader {
	return &countingReader{r: bytes.NewReader(data), at: map[int64]int{}}
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.calls.Add(1)
	c.bytes.Add(int64(len(p)))
	if len(p) == v2HeaderSize {
		c.mu.Lock()
		c.at[off]++
		c.mu.Unlock()
	}
	return c.r.ReadAt(p, off)
}

func (c *countingReader) readsAt(off int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at[off]
}

// manyBlocks is a reference fixture with a section index and several
// blocks (catdata: 51).
func manyBlocks(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(sharedfixtures.File(t, "upstream/catdata.dwarfs"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestLazyHeadersOpen opens an indexed image with and without LazyHeaders:
// the lazy open reads no block header, yet every section reads back the
// same, with the same header fields.
func TestLazyHeadersOpen(t *testing.T) {
	data := manyBlocks(t)
	eagerR, lazyR := newCountingReader(data), newCountingReader(data)
	eager, err := OpenImage(eagerR, int64(len(data)), Options{Name: "eager.dwarfs"})
	if err != nil {
		t.Fatal(err)
	}
	lazy, err := OpenImage(lazyR, int64(len(data)), Options{Name: "lazy.dwarfs", LazyHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	if !lazy.HasSectionIndex() || lazy.NumBlocks() != eager.NumBlocks() || lazy.NumBlocks() < 10 {
		t.Fatalf("index %v, %d blocks lazy, %d eager", lazy.HasSectionIndex(), lazy.NumBlocks(), eager.NumBlocks())
	}
	t.Logf("open: eager %d reads %d bytes, lazy %d reads %d bytes", eagerR.calls.Load(), eagerR.bytes.Load(), lazyR.calls.Load(), lazyR.bytes.Load())
	if got, limit := lazyR.calls.Load(), eagerR.calls.Load()-int64(eager.NumBlocks()); got > limit {
		t.Errorf("lazy open made %d reads, want at most %d (eager %d minus one per block)", got, limit, eagerR.calls.Load())
	}
	for _, b := range lazy.Blocks() {
		if !b.Pending() {
			t.Fatalf("block section %d not pending after a lazy open", b.Index)
		}
		if n := lazyR.readsAt(lazy.Offset() + b.HeaderOffset); n != 0 {
			t.Errorf("block section %d: header read %d times at open", b.Index, n)
		}
	}
	for _, s := range lazy.Sections() {
		if s.Type != SectionBlock && s.Pending() {
			t.Errorf("%s section %d pending", s.Type, s.Index)
		}
	}
	es := eager.Sections()
	for i, s := range lazy.Sections() {
		want, err := eager.ReadDecompressed(es[i])
		if err != nil {
			t.Fatal(err)
		}
		got, err := lazy.ReadDecompressed(s)
		if err != nil {
			t.Fatalf("section %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("section %d reads differently with lazy headers", i)
		}
		h, err := lazy.Header(s)
		if err != nil {
			t.Fatal(err)
		}
		if h != es[i] {
			t.Errorf("section %d: header %+v, eager %+v", i, h, es[i])
		}
		if err := lazy.VerifyFull(s); err != nil {
			t.Errorf("section %d: %v", i, err)
		}
	}
	// Each block header was read once, however often the block was used.
	for _, b := range lazy.Blocks() {
		if n := lazyR.readsAt(lazy.Offset() + b.HeaderOffset); n != 1 {
			t.Errorf("block section %d: header read %d times, want 1", b.Index, n)
		}
	}
	if err := lazy.LoadHeaders(); err != nil {
		t.Error(err)
	}
}

// lazyBlock opens data lazily and returns it with its block n.
func lazyBlock(t *testing.T, data []byte, n int, opts Options) (*Image, Section) {
	t.Helper()
	opts.LazyHeaders, opts.ImageOffset = true, -1
	im, err := OpenImage(bytes.NewReader(data), int64(len(data)), opts)
	if err != nil {
		t.Fatalf("a damaged block header must not fail a lazy open: %v", err)
	}
	if !im.HasSectionIndex() {
		t.Fatalf("index not used: %v", im.IndexError())
	}
	s, _ := im.Block(n)
	return im, s
}

// TestLazyHeaderDamage damages the header of one block of an indexed
// image: a lazy open succeeds, and the first use of that block (and every
// later one) fails with an error naming the image, the section and the
// fault, while the other blocks read as usual.
func TestLazyHeaderDamage(t *testing.T) {
	orig := manyBlocks(t)
	eager, err := OpenImage(bytes.NewReader(orig), int64(len(orig)), Options{ImageOffset: -1})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	b, _ := eager.Block(n)
	hdr := eager.Offset() + b.HeaderOffset
	for _, tc := range []struct {
		name   string
		mutate func(h []byte)
		is     error
		want   string
	}{
		{"magic", func(h []byte) { h[0] = 'X' }, ErrCorrupt, "bad section magic"},
		{"major version", func(h []byte) { h[6] = 3 }, ErrUnsupported, "major version 3"},
		{"length past end", func(h []byte) { binary.LittleEndian.PutUint64(h[0x38:], 1<<40) }, ErrCorrupt, "runs past end of image"},
		{"length disagrees with index", func(h []byte) { binary.LittleEndian.PutUint64(h[0x38:], uint64(b.Length-1)) }, ErrCorrupt, "disagrees with the section index"},
		{"type disagrees with index", func(h []byte) { binary.LittleEndian.PutUint16(h[0x34:], uint16(SectionHistory)) }, ErrCorrupt, "disagrees with the section index"},
		{"compression (checksum)", func(h []byte) { binary.LittleEndian.PutUint16(h[0x36:], uint16(CompLZ4)) }, ErrChecksum, "checksum mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := bytes.Clone(orig)
			tc.mutate(data[hdr : hdr+v2HeaderSize])
			im, s := lazyBlock(t, data, n, Options{Name: "damaged.dwarfs"})
			prefix := "damaged.dwarfs: section " + strconv.Itoa(b.Index) + " ("
			for range 2 { // the second use reports the same
				_, err := im.ReadDecompressed(s)
				if !errors.Is(err, tc.is) || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("ReadDecompressed = %v, want %v starting %q and saying %q", err, tc.is, prefix, tc.want)
				}
			}
			if err := im.VerifyFast(s); !errors.Is(err, tc.is) {
				t.Errorf("VerifyFast = %v", err)
			}
			// The header is checked alone; its checksum covers the payload.
			if tc.is != ErrChecksum {
				if _, err := im.BlockHeader(n); !errors.Is(err, tc.is) {
					t.Errorf("BlockHeader = %v", err)
				}
				if err := im.LoadHeaders(); !errors.Is(err, tc.is) {
					t.Errorf("LoadHeaders = %v", err)
				}
			}
			other, _ := im.Block(n + 1)
			if _, err := im.ReadDecompressed(other); err != nil {
				t.Errorf("undamaged block: %v", err)
			}
		})
	}
}

// TestLazyCheckStored checks that CheckStored verifies a stored block on
// its header's first read: the data.dwarfs fixture stores its block.
func TestLazyCheckStored(t *testing.T) {
	orig, err := os.ReadFile(sharedfixtures.File(t, "upstream/data.dwarfs"))
	if err != nil {
		t.Fatal(err)
	}
	im0, s := lazyBlock(t, orig, 0, Options{})
	data := bytes.Clone(orig)
	data[im0.Offset()+s.DataOffset+s.Length/2] ^= 1
	for _, check := range []bool{false, true} {
		im, s := lazyBlock(t, data, 0, Options{Name: "flip.dwarfs", CheckStored: check})
		h, err := im.Header(s)
		if check {
			if !errors.Is(err, ErrChecksum) || !strings.HasPrefix(err.Error(), "flip.dwarfs: section 0 (BLOCK): checksum mismatch") {
				t.Errorf("CheckStored: Header = %v", err)
			}
			continue
		}
		if err != nil || h.Compression != CompNone {
			t.Fatalf("Header = %+v, %v (want a stored block, no check)", h, err)
		}
		if _, err := im.ReadRaw(s); !errors.Is(err, ErrChecksum) {
			t.Errorf("ReadRaw = %v", err)
		}
	}
}

// TestLazyHeaderConcurrent has many goroutines use the same pending block
// at once: the header is read once and all of them read the block.
func TestLazyHeaderConcurrent(t *testing.T) {
	data := manyBlocks(t)
	r := newCountingReader(data)
	im, err := OpenImage(r, int64(len(data)), Options{LazyHeaders: true, CheckStored: true})
	if err != nil {
		t.Fatal(err)
	}
	blocks := im.Blocks()
	want := make([][]byte, len(blocks))
	var wg sync.WaitGroup
	errs := make(chan error, 8*len(blocks))
	results := make([][][]byte, 8)
	for g := range 8 {
		results[g] = make([][]byte, len(blocks))
		wg.Go(func() {
			for i, s := range blocks {
				d, err := im.ReadDecompressed(s)
				if err != nil {
					errs <- err
					return
				}
				results[g][i] = d
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	eager, err := OpenImage(bytes.NewReader(data), int64(len(data)), Options{ImageOffset: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range eager.Blocks() {
		if want[i], err = eager.ReadDecompressed(s); err != nil {
			t.Fatal(err)
		}
		for g := range results {
			if !bytes.Equal(results[g][i], want[i]) {
				t.Fatalf("goroutine %d read block %d wrongly", g, i)
			}
		}
		if n := r.readsAt(im.Offset() + s.HeaderOffset); n != 1 {
			t.Errorf("block %d: header read %d times, want 1", i, n)
		}
	}
}

// TestLazyHeaderForged checks that a pending Section not from this image
// is refused, not looked up out of range.
func TestLazyHeaderForged(t *testing.T) {
	data := manyBlocks(t)
	im, s := lazyBlock(t, data, 0, Options{})
	for _, idx := range []int{-1, len(im.Sections()), im.Find(SectionMetadata)[0].Index} {
		f := s
		f.Index = idx
		if _, err := im.ReadRaw(f); !errors.Is(err, ErrCorrupt) {
			t.Errorf("index %d: ReadRaw = %v", idx, err)
		}
	}
}

// TestExpectHeaders: the check ExpectHeaders installs runs on each pending
// header when it is read, and on those read before it was installed; its
// error is that section's, remembered, and the other sections read on.
func TestExpectHeaders(t *testing.T) {
	data := manyBlocks(t)
	im, s0 := lazyBlock(t, data, 0, Options{})
	if _, err := im.Header(s0); err != nil { // read before the check
		t.Fatal(err)
	}
	errOdd := errors.New("odd section")
	var calls atomic.Int64
	im.ExpectHeaders(func(s Section) error {
		calls.Add(1)
		if s.Index%2 == 1 {
			return errOdd
		}
		return nil
	})
	if _, err := im.Header(s0); err != nil {
		t.Fatalf("block 0: %v", err)
	}
	for n := 1; n < 4; n++ {
		s, _ := im.Block(n)
		for range 2 {
			_, err := im.Header(s)
			if (s.Index%2 == 1) != errors.Is(err, errOdd) {
				t.Fatalf("section %d: %v", s.Index, err)
			}
		}
	}
	if c := calls.Load(); c != 4 {
		t.Fatalf("check ran %d times, want once for each of 4 headers", c)
	}
}

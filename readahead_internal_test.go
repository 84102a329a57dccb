package godwarfs

import (
	"bytes"
	"context"
	"io"
	"os"
	"sync/atomic"
	"testing"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/testimage"
	"github.com/godwarfs/godwarfs/metadata"
)

// gatedImage opens an image of one file made of nblocks zstd blocks of bs
// bytes, whose block loads wait for gate and are counted.
type gatedImage struct {
	im        *Image
	content   []byte
	gate      chan struct{}
	cur, peak atomic.Int64
}

// blockedFile makes an image of one file "f" whose content fills nblocks
// zstd blocks of bs bytes, one chunk each.
func blockedFile(t *testing.T, nblocks, bs int) (img, content []byte) {
	t.Helper()
	content = make([]byte, nblocks*bs)
	for i := range content {
		content[i] = byte(i/7 + i/bs)
	}
	var blocks [][]byte
	var chunks []metadata.Chunk
	for i := range nblocks {
		blocks = append(blocks, content[i*bs:(i+1)*bs])
		chunks = append(chunks, metadata.Chunk{Block: uint32(i), Size: uint32(bs)})
	}
	img, err := testimage.Build(testimage.Files(uint32(bs), []string{"f"}, [][]metadata.Chunk{chunks}), blocks, "zstd")
	if err != nil {
		t.Fatal(err)
	}
	return img, content
}

func newGatedImage(t *testing.T, nblocks, bs, workers int) *gatedImage {
	t.Helper()
	img, content := blockedFile(t, nblocks, bs)
	im, err := OpenReaderAt(bytes.NewReader(img), int64(len(img)), "gated", &Options{Workers: workers, CacheSize: int64(nblocks * bs)})
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedImage{im: im, content: content, gate: make(chan struct{})}
	im.cache.Close()
	im.cache = block.NewCache(func(ctx context.Context, n int, alloc block.AllocFunc) ([]byte, error) {
		c := g.cur.Add(1)
		defer g.cur.Add(-1)
		for p := g.peak.Load(); c > p && !g.peak.CompareAndSwap(p, c); p = g.peak.Load() {
		}
		select {
		case <-g.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return im.loadBlock(ctx, n, alloc)
	}, block.CacheOptions{Capacity: int64(nblocks * bs), Workers: workers})
	t.Cleanup(func() { im.Close() })
	return g
}

// Read-ahead over a whole file starts at most twice as many loads as
// there are workers, and at most workers of them decode at once.
func TestPrefetchBounded(t *testing.T) {
	const workers = 2
	g := newGatedImage(t, 40, 4<<10, workers)
	f, err := g.im.OpenInode(1)
	if err != nil {
		t.Fatal(err)
	}
	f.Prefetch(0, f.Size())
	if st := g.im.cache.Stats(); st.Prefetches != 2*workers {
		t.Errorf("prefetch of 40 blocks started %d loads, want %d", st.Prefetches, 2*workers)
	}
	close(g.gate)
	got, err := io.ReadAll(io.NewSectionReader(f, 0, f.Size()))
	if err != nil || !bytes.Equal(got, g.content) {
		t.Fatalf("read back %d bytes (%v), differs from the content", len(got), err)
	}
	if p := g.peak.Load(); p > workers || p < 1 {
		t.Errorf("%d blocks decoded at once, want 1..%d", p, workers)
	}
}

// A sequential reader has the blocks after the one it reads decoded on
// the pool: after reading the first block, loads of the next blocks have
// started, as many as the workers, and no more than the file holds.
func TestSequentialReadAhead(t *testing.T) {
	const workers, nblocks, bs = 2, 12, 4 << 10
	g := newGatedImage(t, nblocks, bs, workers)
	close(g.gate)
	f, err := g.im.OpenInode(1)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, bs)
	if _, err := io.ReadFull(f, buf); err != nil {
		t.Fatal(err)
	}
	if st := g.im.cache.Stats(); st.Prefetches < workers {
		t.Errorf("after the first block: %d blocks prefetched, want %d", st.Prefetches, workers)
	}
	var got bytes.Buffer
	got.Write(buf)
	if _, err := io.CopyBuffer(&got, struct{ io.Reader }{f}, buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), g.content) {
		t.Fatal("sequential read differs from the content")
	}
	st := g.im.cache.Stats()
	if st.Decoded != nblocks || st.Prefetches == 0 {
		t.Errorf("%d blocks decoded (%d by read-ahead), want each of the %d once", st.Decoded, st.Prefetches, nblocks)
	}
	if p := g.peak.Load(); p > workers {
		t.Errorf("%d blocks decoded at once, want at most %d", p, workers)
	}
}

// Prefetching blocks of a local image file also hints their compressed
// bytes to the kernel, once per block, and only those blocks.
func TestPrefetchAdvisesFile(t *testing.T) {
	const nblocks, bs = 6, 4 << 10
	img, content := blockedFile(t, nblocks, bs)
	path := fixtures.TempFile(t, "img.dwarfs") // not t.TempDir: Wine cannot remove it
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
	im, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	f, err := im.OpenInode(1)
	if err != nil {
		t.Fatal(err)
	}
	f.Prefetch(bs, 2*bs) // blocks 1 and 2
	f.Prefetch(bs, 2*bs) // again: no new hints
	if got := im.advised[0].Load(); got != 0b110 {
		t.Errorf("advised blocks %b, want 110", got)
	}
	got, err := io.ReadAll(io.NewSectionReader(f, 0, f.Size()))
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("read back %d bytes (%v), differs from the content", len(got), err)
	}
}

package source

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/testimage"
	"github.com/godwarfs/godwarfs/metadata"
)

// gatedFetcher serves an in-memory object and records how many header
// requests (64 bytes) were in flight at once. Header requests wait until
// want of them are in flight, so the maximum seen is the concurrency the
// source allows, not an accident of scheduling; the wait gives up after a
// while so that a source allowing fewer fails quickly instead of hanging.
type gatedFetcher struct {
	data              []byte
	want              int32
	inflight, maxSeen atomic.Int32
	once              sync.Once
	release           chan struct{}
}

func (m *gatedFetcher) Name() string { return "mem://image" }
func (m *gatedFetcher) Key() string  { return "mem://image" }
func (m *gatedFetcher) Close()       {}
func (m *gatedFetcher) Stat(context.Context) (Version, error) {
	return Version{Size: int64(len(m.data)), ETag: `"1"`}, nil
}

func (m *gatedFetcher) Get(ctx context.Context, p []byte, off int64, _ Version, got *atomic.Int64) error {
	if len(p) == 64 {
		n := m.inflight.Add(1)
		defer m.inflight.Add(-1)
		for {
			cur := m.maxSeen.Load()
			if n <= cur || m.maxSeen.CompareAndSwap(cur, n) {
				break
			}
		}
		if n >= m.want {
			m.once.Do(func() { close(m.release) })
		}
		select {
		case <-m.release:
		case <-time.After(2 * time.Second):
			m.once.Do(func() { close(m.release) }) // give up once, for all
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	copy(p, m.data[off:])
	got.Add(int64(len(p)))
	return nil
}

// TestHeaderFetchConcurrency opens an image whose section headers lie far
// apart (one request each) and checks that they are fetched with more
// requests in flight than the data workers: at open the requests are
// tiny and their round trips, not bandwidth, decide how long mounting
// takes.
func TestHeaderFetchConcurrency(t *testing.T) {
	const nBlocks = 64
	img, _ := storedImage(t, nBlocks, 32<<10)
	f := &gatedFetcher{data: img, want: 8, release: make(chan struct{})}
	const workers = 2
	src, err := openRemote(context.Background(), f, Options{Workers: workers, TailSize: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	r := src.(*remote)
	if len(r.hdrs) < nBlocks {
		t.Fatalf("open fetched %d section headers, want at least %d", len(r.hdrs), nBlocks)
	}
	if got := f.maxSeen.Load(); got < f.want {
		t.Errorf("at most %d header requests in flight at open, want %d (more than the %d data workers)", got, f.want, workers)
	}
	// The headers it holds are the image's.
	bi, err := block.OpenImage(src, src.Size(), block.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(bi.Blocks()); n != nBlocks {
		t.Errorf("image has %d blocks, want %d", n, nBlocks)
	}
}

// storedImage is an image of n stored (uncompressed) blocks of random
// bytes, file i holding block i, farther apart than the header
// coalescing gap.
func storedImage(t *testing.T, n, blockLen int) ([]byte, map[string][]byte) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	blocks := make([][]byte, n)
	files := map[string][]byte{}
	var names []string
	var chunks [][]metadata.Chunk
	for i := range blocks {
		blocks[i] = make([]byte, blockLen)
		for j := range blocks[i] {
			blocks[i][j] = byte(rng.Uint32())
		}
		names = append(names, fmt.Sprintf("f%03d", i))
		files[names[i]] = blocks[i]
		chunks = append(chunks, []metadata.Chunk{{Block: uint32(i), Offset: 0, Size: uint32(blockLen)}})
	}
	img, err := testimage.Build(testimage.Files(uint32(blockLen), names, chunks), blocks, "null")
	if err != nil {
		t.Fatal(err)
	}
	return img, files
}

// TestFullReadFetchesEachByteOnce reads every file of an image whose last
// block begins before the tail fetched at open and ends inside it: the
// bytes already fetched with the tail must not be fetched again.
func TestFullReadFetchesEachByteOnce(t *testing.T) {
	const blockLen = 32 << 10
	img, files := storedImage(t, 8, blockLen)
	f := &gatedFetcher{data: img, want: 1, release: make(chan struct{})}
	// A tail that starts in the middle of the last block.
	src, err := openRemote(context.Background(), f, Options{TailSize: int64(len(img) - 7*blockLen - blockLen/2)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	r := src.(*remote)
	if last := r.spans[7]; !(last.start < r.tailOff && last.end > r.tailOff) {
		t.Fatalf("tail at %d does not cut the last block [%d,%d)", r.tailOff, last.start, last.end)
	}
	bi, err := block.OpenImage(src, src.Size(), block.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range bi.Blocks() {
		got, err := bi.ReadRaw(s)
		if err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
		if want := files[fmt.Sprintf("f%03d", i)]; string(got) != string(want) {
			t.Fatalf("block %d: content differs", i)
		}
	}
	// Reading a range that spans the tail's start again comes from memory.
	p := make([]byte, 100)
	if _, err := src.ReadAt(p, r.tailOff-50); err != nil {
		t.Fatal(err)
	}
	if string(p) != string(img[r.tailOff-50:r.tailOff+50]) {
		t.Error("read across the tail's start: content differs")
	}
	if st := src.Stats(); st.BytesFetched > int64(len(img)) {
		t.Errorf("fetched %d bytes of a %d-byte image (%d twice)", st.BytesFetched, len(img), st.BytesFetched-int64(len(img)))
	}
}

// TestLazyBlockHeadersAtOpen opens the same image with and without
// LazyBlockHeaders: the lazy open leaves the block headers out of its
// requests, and an image reader reading them on first use still reads
// every block right.
func TestLazyBlockHeadersAtOpen(t *testing.T) {
	const nBlocks = 64
	img, _ := storedImage(t, nBlocks, 32<<10)
	open := func(lazy bool) (*remote, int64) {
		f := &gatedFetcher{data: img, want: 1, release: make(chan struct{})}
		src, err := openRemote(context.Background(), f, Options{Workers: 2, TailSize: 4 << 10, LazyBlockHeaders: lazy})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { src.Close() })
		return src.(*remote), src.Stats().Requests
	}
	_, eager := open(false)
	r, lazy := open(true)
	t.Logf("requests at open: %d with every header, %d with lazy block headers", eager, lazy)
	if lazy >= eager || eager-lazy < nBlocks/2 {
		t.Errorf("lazy open made %d requests, eager %d: want at least %d fewer", lazy, eager, nBlocks/2)
	}
	want, err := block.OpenImage(bytes.NewReader(img), int64(len(img)), block.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bi, err := block.OpenImage(r, r.Size(), block.Options{LazyHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Stats().Requests; n != lazy {
		t.Errorf("opening the image made %d requests beyond the source's open", n-lazy)
	}
	for i, s := range bi.Blocks() {
		got, err := bi.ReadRaw(s)
		if err != nil {
			t.Fatal(err)
		}
		w, err := want.ReadRaw(want.Blocks()[i])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, w) {
			t.Fatalf("block %d differs", i)
		}
	}
}

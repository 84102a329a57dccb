package source

import (
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

// memFetcher serves an in-memory object and records how many header
// requests (64 bytes) were in flight at once. Header requests wait until
// want of them are in flight, so the maximum seen is the concurrency the
// source allows, not an accident of scheduling; the wait gives up after a
// while so that a source allowing fewer fails quickly instead of hanging.
type memFetcher struct {
	data              []byte
	want              int32
	inflight, maxSeen atomic.Int32
	once              sync.Once
	release           chan struct{}
}

func (m *memFetcher) name() string { return "mem://image" }
func (m *memFetcher) key() string  { return "mem://image" }
func (m *memFetcher) close()       {}
func (m *memFetcher) stat(context.Context) (objectInfo, error) {
	return objectInfo{size: int64(len(m.data)), etag: `"1"`}, nil
}

func (m *memFetcher) get(ctx context.Context, p []byte, off int64, _ objectInfo, got *atomic.Int64) error {
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
	const nBlocks, blockLen = 64, 32 << 10 // stored blocks, farther apart than the header coalescing gap
	rng := rand.New(rand.NewPCG(1, 2))
	blocks := make([][]byte, nBlocks)
	var names []string
	var chunks [][]metadata.Chunk
	for i := range blocks {
		blocks[i] = make([]byte, blockLen)
		for j := range blocks[i] {
			blocks[i][j] = byte(rng.Uint32())
		}
		names = append(names, fmt.Sprintf("f%03d", i))
		chunks = append(chunks, []metadata.Chunk{{Block: uint32(i), Offset: 0, Size: blockLen}})
	}
	img, err := testimage.Build(testimage.Files(blockLen, names, chunks), blocks, "null")
	if err != nil {
		t.Fatal(err)
	}
	f := &memFetcher{data: img, want: 8, release: make(chan struct{})}
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

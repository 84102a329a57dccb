//go:build linux && !386 && !arm

package fusefs_test

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/testimage"
	"github.com/godwarfs/godwarfs/metadata"
)

// multiBlockImage writes an image holding one file "big" of nblocks
// zstd blocks of bs bytes each, and returns its path and the content.
func multiBlockImage(t *testing.T, nblocks, bs int) (string, []byte) {
	t.Helper()
	words := []string{"alpha ", "bravo ", "charlie ", "delta ", "echo ", "foxtrot ", "golf ", "hotel "}
	rng := rand.New(rand.NewPCG(3, 4))
	var content []byte
	for len(content) < nblocks*bs {
		content = append(content, words[rng.IntN(len(words))]...)
		if rng.IntN(50) == 0 {
			content = append(content, byte(len(content)), byte(len(content)>>8), byte(len(content)>>16))
		}
	}
	content = content[:nblocks*bs]
	var blocks [][]byte
	var chunks []metadata.Chunk
	for i := range nblocks {
		blocks = append(blocks, content[i*bs:(i+1)*bs])
		chunks = append(chunks, metadata.Chunk{Block: uint32(i), Offset: 0, Size: uint32(bs)})
	}
	md := testimage.Files(uint32(bs), []string{"big"}, [][]metadata.Chunk{chunks})
	img, err := testimage.Build(md, blocks, "zstd")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "multiblock.dwarfs")
	if err := os.WriteFile(p, img, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, content
}

// A file of many blocks, larger than the block cache, reads back byte for
// byte through the kernel both sequentially (where the driver decodes
// ahead of the reader) and at random offsets; the cache stays within its
// capacity throughout.
func TestMultiBlockReads(t *testing.T) {
	const nblocks, bs = 48, 64 << 10
	img, want := multiBlockImage(t, nblocks, bs)
	// Room for 6 of the 48 blocks: read-ahead must not evict what the
	// reader is about to use, and eviction is constant.
	gopts := &godwarfs.Options{CacheSize: 6 * bs, Workers: 2}

	t.Run("sequential", func(t *testing.T) {
		srv, _ := mountImageWith(t, img, gopts, "")
		f, err := os.Open(filepath.Join(srv.Dir(), "big"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		// 4 KiB at a time, as fio and most programs read; the kernel
		// turns them into large sequential READs.
		var got bytes.Buffer
		if _, err := io.CopyBuffer(&got, struct{ io.Reader }{f}, make([]byte, 4096)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("sequential read: %d bytes, differs from the content (%d bytes)", got.Len(), len(want))
		}
		perf := srv.Perfmon()
		if !strings.Contains(perf, "readahead: ") || strings.Contains(perf, "readahead: 0 sequential triggers") ||
			strings.Contains(perf, ", 0 prefetches") {
			t.Errorf("no read-ahead issued for a sequential reader:\n%s", perf)
		}
		checkCacheBound(t, srv)
	})

	t.Run("random", func(t *testing.T) {
		srv, _ := mountImageWith(t, img, gopts, "")
		f, err := os.Open(filepath.Join(srv.Dir(), "big"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		rng := rand.New(rand.NewPCG(5, 6))
		for i := range 300 {
			n := 1 + rng.IntN(3*bs)
			off := rng.Int64N(int64(len(want)))
			if i%3 == 0 { // straddle a block boundary
				off = max(int64(rng.IntN(nblocks)*bs)-int64(n/2), 0)
			}
			buf := make([]byte, n)
			got, err := f.ReadAt(buf, off)
			end := min(off+int64(n), int64(len(want)))
			if got != int(end-off) || (err != nil && err != io.EOF) {
				t.Fatalf("ReadAt(%d bytes at %d) = %d, %v; want %d", n, off, got, err, end-off)
			}
			if !bytes.Equal(buf[:got], want[off:end]) {
				t.Fatalf("ReadAt(%d bytes at %d): content differs", n, off)
			}
		}
		checkCacheBound(t, srv)
	})
}

func checkCacheBound(t *testing.T, srv *fusefs.Server) {
	t.Helper()
	st := fusefs.CacheStatsOf(srv)
	if st.Decoded == 0 || st.PeakBytes > st.Capacity {
		t.Errorf("block cache: %d blocks decoded, peak %d bytes, capacity %d", st.Decoded, st.PeakBytes, st.Capacity)
	}
}

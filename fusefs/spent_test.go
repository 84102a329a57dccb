//go:build linux && !386 && !arm

package fusefs_test

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/internal/testimage"
	"github.com/godwarfs/godwarfs/metadata"
)

// A file 2.5 times the size of the block cache, read from start to end
// twice: with plain LRU the second pass would decode every block again;
// the blocks the first pass went past make room first, so the second
// pass finds the file's first blocks still cached.
func TestSecondPassFindsFirstBlocks(t *testing.T) {
	requireFuse(t)
	const bs, nblocks = 256 << 10, 40
	rng := rand.New(rand.NewPCG(3, 4))
	content := make([]byte, bs*nblocks)
	for i := range content {
		content[i] = byte(rng.IntN(16)) // compressible, not trivially
	}
	var blocks [][]byte
	var chunks []metadata.Chunk
	for i := range nblocks {
		blocks = append(blocks, content[i*bs:(i+1)*bs])
		chunks = append(chunks, metadata.Chunk{Block: uint32(i), Size: bs})
	}
	img, err := testimage.Build(testimage.Files(bs, []string{"big"}, [][]metadata.Chunk{chunks}), blocks, "zstd")
	if err != nil {
		t.Fatal(err)
	}
	im, err := godwarfs.OpenReaderAt(bytes.NewReader(img), int64(len(img)), "spent", &godwarfs.Options{CacheSize: 16 * bs, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	src := fusefs.NewImageSource(im)
	t.Cleanup(func() { src.Close(); im.Close() })
	srv := mountSrc(t, src, "no_cache_files") // every read reaches the driver
	cache := imageaccess.Of(im).Cache

	read := func() int64 {
		t.Helper()
		before := cache.Stats().Decoded
		f, err := os.Open(filepath.Join(srv.Dir(), "big"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var got bytes.Buffer
		if _, err := io.CopyBuffer(&got, f, make([]byte, 128<<10)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), content) {
			t.Fatal("content differs")
		}
		return cache.Stats().Decoded - before
	}
	if n := read(); n != nblocks {
		t.Errorf("first pass decoded %d blocks, want %d", n, nblocks)
	}
	// Plain LRU would leave the last blocks cached and decode all again.
	n := read()
	t.Logf("second pass decoded %d of %d blocks", n, nblocks)
	if n > nblocks-3 {
		t.Errorf("second pass decoded %d of %d blocks, want the first few cached\n%s", n, nblocks, srv.Perfmon())
	}
	if st := cache.Stats(); st.Spent == 0 || st.PeakBytes > st.Capacity {
		t.Errorf("cache %+v: want blocks marked spent and the capacity kept", st)
	}
}

package godwarfs

import (
	"bytes"
	"context"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/godwarfs/godwarfs/internal/testimage"
	"github.com/godwarfs/godwarfs/metadata"
)

// Loading blocks one after another reuses the buffer of the compressed
// payload instead of allocating one per block, also across collections.
func TestBlockLoadsReusePayloadBuffer(t *testing.T) {
	const bs = 256 << 10
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, bs) // 4 bits of entropy a byte: a payload of about half the block
	for i := range data {
		data[i] = byte(rng.IntN(16))
	}
	img, err := testimage.Build(testimage.Files(bs, []string{"f"}, [][]metadata.Chunk{{{Block: 0, Size: bs}}}), [][]byte{data}, "zstd")
	if err != nil {
		t.Fatal(err)
	}
	im, err := OpenReaderAt(bytes.NewReader(img), int64(len(img)), "rawbuf", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	out := make([]byte, bs)
	load := func() {
		got, err := im.loadBlock(context.Background(), 0, func(n int) ([]byte, error) { return out[:n], nil })
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatal("block content differs")
		}
	}
	load()
	const loads = 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range loads {
		load()
		// A sync.Pool would lose its buffers in these (the first moves
		// them aside, the second drops them).
		runtime.GC()
		runtime.GC()
	}
	runtime.ReadMemStats(&after)
	perLoad := (after.TotalAlloc - before.TotalAlloc) / loads
	t.Logf("%d bytes allocated per load", perLoad)
	if perLoad > bs/8 {
		t.Errorf("%d bytes allocated per load of a %d-byte block: the payload buffer is not reused", perLoad, bs)
	}
}

// A payload far larger than the image's block size (a hostile image) is
// refused, and its buffer is not kept.
func TestOversizedPayloadBufferNotKept(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	data := make([]byte, 256<<10) // a payload of about 128 KiB
	for i := range data {
		data[i] = byte(rng.IntN(16))
	}
	// The metadata says blocks hold at most 4 KiB.
	img, err := testimage.Build(testimage.Files(4096, []string{"f"}, [][]metadata.Chunk{{{Block: 0, Size: 4096}}}), [][]byte{data}, "zstd")
	if err != nil {
		t.Fatal(err)
	}
	im, err := OpenReaderAt(bytes.NewReader(img), int64(len(img)), "oversized", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	_, err = im.loadBlock(context.Background(), 0, func(n int) ([]byte, error) { return make([]byte, n), nil })
	if err == nil {
		t.Fatal("a 256 KiB block in an image of 4 KiB blocks loaded")
	}
	if n := len(im.rawBufs); n != 0 {
		t.Errorf("%d payload buffers kept after the payload of a %d-byte block", n, len(data))
	}
}

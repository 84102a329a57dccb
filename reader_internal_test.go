package godwarfs

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/godwarfs/godwarfs/internal/imagetest"
	"github.com/godwarfs/godwarfs/internal/testimage"
	"github.com/godwarfs/godwarfs/metadata"
)

// TestLayoutShared checks that files with many chunks keep their layout
// in the image, so opening one again does not resolve its chunks again,
// while small files do not fill the cache.
func TestLayoutShared(t *testing.T) {
	c := imagetest.NewManyChunks()
	im, err := Open(c.WriteTemp(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	open := func(name string) *File {
		f, err := im.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		return f.(*File)
	}
	a, b := open("many"), open("many")
	if a.layout != b.layout {
		t.Error("two opens of the 100,000-chunk file built two layouts")
	}
	if a.Size() != c.Size(imagetest.ManyChunks) {
		t.Errorf("size %d, want %d", a.Size(), c.Size(imagetest.ManyChunks))
	}
	if x, y := open("few"), open("few"); x.layout == y.layout {
		t.Error("the 1,000-chunk file's layout was cached")
	}
	if n := im.layouts.Len(); n != 1 {
		t.Errorf("%d layouts cached, want 1", n)
	}
}

// DontNeed marks as spent the blocks of the chunks that end in its range,
// except blocks the file comes back to after the range.
func TestDontNeedMarksBlocksPassed(t *testing.T) {
	const bs = 4096
	var blocks [][]byte
	for i := range 4 {
		blocks = append(blocks, bytes.Repeat([]byte{byte('a' + i)}, bs))
	}
	// The file is blocks 0, 1, 2, 0, 3.
	var chunks []metadata.Chunk
	for _, b := range []uint32{0, 1, 2, 0, 3} {
		chunks = append(chunks, metadata.Chunk{Block: b, Size: bs})
	}
	img, err := testimage.Build(testimage.Files(bs, []string{"f"}, [][]metadata.Chunk{chunks}), blocks, "zstd")
	if err != nil {
		t.Fatal(err)
	}
	im, err := OpenReaderAt(bytes.NewReader(img), int64(len(img)), "dontneed", &Options{CacheSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	f, err := im.Open("f")
	if err != nil {
		t.Fatal(err)
	}
	file := f.(*File)
	if _, err := io.Copy(io.Discard, file); err != nil {
		t.Fatal(err)
	}
	spent := func() int64 { return im.cache.Stats().Spent }

	file.DontNeed(bs/2, bs/4) // no chunk ends in it
	if n := spent(); n != 0 {
		t.Errorf("inside chunk 0: %d blocks spent, want 0", n)
	}
	file.DontNeed(bs/2, 5*bs/2) // chunks 0-2 end in it; block 0 is read again in chunk 3
	if n := spent(); n != 2 {
		t.Errorf("after chunks 0-2: %d blocks spent, want 2", n)
	}
	file.DontNeed(0, 5*bs)
	if n := spent(); n != 4 {
		t.Errorf("after the whole file: %d blocks spent, want 4 (blocks 0 and 3 too)", n)
	}
	for _, bad := range [][2]int64{{-1, 10}, {0, 0}, {5 * bs, 10}, {0, -5}} {
		file.DontNeed(bad[0], bad[1])
	}
	if n := spent(); n != 4 {
		t.Errorf("ranges outside the file marked blocks: %d spent", n)
	}
}

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

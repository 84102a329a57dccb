package godwarfs

import (
	"bytes"
	"io"
	"testing"

	"github.com/godwarfs/godwarfs/internal/testimage"
	"github.com/godwarfs/godwarfs/metadata"
)

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

// Package imagetest writes small DwarFS images with a chosen shape for
// tests and benchmarks of the reader: files with any number of chunks,
// without building gigabytes of input first.
package imagetest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/metadata"

	"github.com/godwarfs/godwarfs/block/encode"
	"github.com/godwarfs/godwarfs/internal/fixtures"
)

// File is one regular file of a Chunked image.
type File struct {
	Name   string
	Chunks int
}

// Chunked describes an image whose root directory holds Files, each made
// of Chunks chunks of ChunkSize bytes cut from one compressed block at
// scattered offsets, the way deduplicated data is laid out. Every file has
// the same content prefix: chunk i of any file holds the same bytes.
type Chunked struct {
	BlockSize int // bytes in the single data block (default 64 KiB)
	ChunkSize int // bytes per chunk (default 1 KiB)
	Files     []File

	block []byte
}

func (c *Chunked) defaults() {
	if c.BlockSize <= 0 {
		c.BlockSize = 64 << 10
	}
	if c.ChunkSize <= 0 {
		c.ChunkSize = 1 << 10
	}
	if c.block == nil {
		// Random words: compressible, yet every chunk offset gives
		// different bytes, so a misplaced chunk shows.
		words := []string{"alpha ", "bravo ", "charlie ", "delta ", "echo ", "foxtrot ", "golf ", "hotel ",
			"india ", "juliett ", "kilo ", "lima ", "mike ", "november ", "oscar ", "papa "}
		rng := rand.New(rand.NewPCG(1, 2))
		b := make([]byte, 0, c.BlockSize+16)
		for len(b) < c.BlockSize {
			b = append(b, words[rng.IntN(len(words))]...)
		}
		c.block = b[:c.BlockSize]
	}
}

// chunkOffset is where chunk i starts in the block.
func (c *Chunked) chunkOffset(i int) int {
	return i * 7919 % (c.BlockSize - c.ChunkSize + 1)
}

// Size is the size of a file with n chunks.
func (c *Chunked) Size(n int) int64 {
	c.defaults()
	return int64(n) * int64(c.ChunkSize)
}

// Want fills p with the content at off of a file with n chunks and returns
// how many bytes of p lie inside the file.
func (c *Chunked) Want(p []byte, off int64, n int) int {
	c.defaults()
	size := c.Size(n)
	done := 0
	for done < len(p) && off+int64(done) < size {
		pos := off + int64(done)
		i, within := int(pos/int64(c.ChunkSize)), int(pos%int64(c.ChunkSize))
		start := c.chunkOffset(i) + within
		done += copy(p[done:], c.block[start:start+c.ChunkSize-within])
	}
	return min(done, len(p))
}

// Chunk counts of the files of ManyChunks: the reader must read both at
// the same cost per byte.
const (
	FewChunks  = 1_000
	ManyChunks = 100_000
)

// NewManyChunks describes an image with a file "few" of FewChunks chunks and
// a file "many" of ManyChunks chunks, 1 KiB each.
func NewManyChunks() *Chunked {
	return &Chunked{Files: []File{{Name: "few", Chunks: FewChunks}, {Name: "many", Chunks: ManyChunks}}}
}

// RandomOffsets returns n offsets, the same in every run, at which a read
// of readSize bytes fits in a file of size bytes.
func RandomOffsets(n int, size, readSize int64) []int64 {
	rng := rand.New(rand.NewPCG(3, 4))
	offs := make([]int64, n)
	for i := range offs {
		offs[i] = rng.Int64N(size - readSize)
	}
	return offs
}

// WriteTemp writes the image into a temporary directory of tb and returns
// its path.
func (c *Chunked) WriteTemp(tb testing.TB) string {
	tb.Helper()
	p := fixtures.TempFile(tb, "chunked.dwarfs")
	if err := c.Write(p); err != nil {
		tb.Fatal(err)
	}
	return p
}

// Write writes the image to path.
func (c *Chunked) Write(path string) error {
	c.defaults()
	if c.ChunkSize > c.BlockSize {
		return fmt.Errorf("imagetest: chunk size %d exceeds block size %d", c.ChunkSize, c.BlockSize)
	}
	files := slices.Clone(c.Files)
	slices.SortFunc(files, func(a, b File) int { return bytes.Compare([]byte(a.Name), []byte(b.Name)) })

	md := &metadata.Metadata{
		Modes:         []uint32{metadata.ModeDir | 0o755, metadata.ModeRegular | 0o644},
		Uids:          []uint32{0},
		Gids:          []uint32{0},
		Inodes:        []metadata.InodeData{{ModeIndex: 0}},
		DirEntries:    []metadata.DirEntry{{NameIndex: 0, InodeNum: 0}},
		HasDirEntries: true,
		ChunkTable:    []uint32{0},
		BlockSize:     uint32(c.BlockSize),
		Options:       &metadata.FsOptions{MtimeOnly: true},
		// Readers may sum a file's chunks to learn its size; the cache
		// spares them that for files with many chunks, as mkdwarfs does.
		RegFileSizeCache: &metadata.InodeSizeCache{MinChunkCount: 128},
	}
	for i, f := range files {
		ino := uint32(i + 1)
		md.Names = append(md.Names, f.Name)
		md.Inodes = append(md.Inodes, metadata.InodeData{ModeIndex: 1})
		md.DirEntries = append(md.DirEntries, metadata.DirEntry{NameIndex: uint32(i), InodeNum: ino})
		for k := range f.Chunks {
			md.Chunks = append(md.Chunks, metadata.Chunk{Block: 0, Offset: uint32(c.chunkOffset(k)), Size: uint32(c.ChunkSize)})
		}
		md.ChunkTable = append(md.ChunkTable, uint32(len(md.Chunks)))
		size := uint64(c.Size(f.Chunks))
		md.TotalFsSize += size
		if f.Chunks >= 128 {
			md.RegFileSizeCache.SizeLookup = append(md.RegFileSizeCache.SizeLookup, metadata.KV{Key: uint32(i), Value: size})
		}
	}
	md.Directories = []metadata.Directory{
		{ParentEntry: 0, FirstEntry: 1, SelfEntry: 0},
		{ParentEntry: 0, FirstEntry: uint32(len(md.DirEntries)), SelfEntry: 0},
	}
	if _, err := metadata.NewFS(md); err != nil {
		return fmt.Errorf("imagetest: %w", err)
	}
	schema, data, err := metadata.Encode(md)
	if err != nil {
		return fmt.Errorf("imagetest: %w", err)
	}
	comp, err := encode.NewCompressor("zstd:level=3")
	if err != nil {
		return err
	}
	ct, payload, err := encode.CompressSection(comp, c.block)
	if err != nil {
		return err
	}
	if ct == block.CompNone {
		// Uncompressed blocks bypass the block cache; tests need the cache.
		return fmt.Errorf("imagetest: block did not compress")
	}

	var buf bytes.Buffer
	w := block.NewWriter(&buf, block.WriterOptions{})
	if err := w.WriteSection(block.SectionBlock, ct, payload); err != nil {
		return err
	}
	if err := w.WriteSection(block.SectionMetadataSchema, block.CompNone, schema); err != nil {
		return err
	}
	if err := w.WriteSection(block.SectionMetadata, block.CompNone, data); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

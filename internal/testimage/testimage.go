// Package testimage builds small DwarFS images from a hand-made metadata
// model and block contents, so tests can craft exactly the (possibly
// corrupt) image they need.
package testimage

import (
	"bytes"
	"fmt"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/block/encode"
	"github.com/godwarfs/godwarfs/metadata"
)

// Build returns an image holding blocks (compressed with compression, a
// mkdwarfs -C spec such as "zstd" or "null"), then md.
func Build(md *metadata.Metadata, blocks [][]byte, compression string) ([]byte, error) {
	c, err := encode.NewCompressor(compression)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w := block.NewWriter(&buf, block.WriterOptions{})
	for i, b := range blocks {
		comp, payload, err := encode.CompressSection(c, b)
		if err != nil {
			return nil, fmt.Errorf("block %d: %w", i, err)
		}
		if err := w.WriteSection(block.SectionBlock, comp, payload); err != nil {
			return nil, err
		}
	}
	schema, data, err := metadata.Encode(md)
	if err != nil {
		return nil, err
	}
	if err := w.WriteSection(block.SectionMetadataSchema, block.CompNone, schema); err != nil {
		return nil, err
	}
	if err := w.WriteSection(block.SectionMetadata, block.CompNone, data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Files returns the metadata of a flat directory of regular files, file i
// named names[i] with the chunks chunks[i] (all names sorted, all files
// distinct contents), with the given block size.
func Files(blockSize uint32, names []string, chunks [][]metadata.Chunk) *metadata.Metadata {
	n := len(names)
	md := &metadata.Metadata{
		Modes:         []uint32{metadata.ModeDir | 0o755, metadata.ModeRegular | 0o644},
		Uids:          []uint32{0},
		Gids:          []uint32{0},
		Names:         names,
		HasDirEntries: true,
		BlockSize:     blockSize,
		Options:       &metadata.FsOptions{MtimeOnly: true},
	}
	md.Inodes = append(md.Inodes, metadata.InodeData{ModeIndex: 0})
	md.DirEntries = append(md.DirEntries, metadata.DirEntry{})
	md.ChunkTable = []uint32{0}
	for i := range n {
		md.Inodes = append(md.Inodes, metadata.InodeData{ModeIndex: 1})
		md.DirEntries = append(md.DirEntries, metadata.DirEntry{NameIndex: uint32(i), InodeNum: uint32(i + 1)})
		md.Chunks = append(md.Chunks, chunks[i]...)
		md.ChunkTable = append(md.ChunkTable, uint32(len(md.Chunks)))
	}
	md.Directories = []metadata.Directory{{FirstEntry: 1}, {FirstEntry: uint32(n + 1)}}
	return md
}

// Spread is an image of three blocks whose files need different blocks:
// a needs block 0, b block 1, c blocks 0 and 2, d block 2, e blocks 1
// and 2. Tests break one block and check which files still read.
type Spread struct {
	Image []byte
	Files map[string][]byte // content by name
	Needs map[string][]int  // blocks by name
}

// NewSpread builds a Spread with blocks of blockLen bytes (a multiple of
// 3) of compressible but varied data.
func NewSpread(compression string, blockLen int) (*Spread, error) {
	if blockLen%3 != 0 || blockLen == 0 {
		return nil, fmt.Errorf("testimage: block length %d is not a positive multiple of 3", blockLen)
	}
	blocks := make([][]byte, 3)
	x := uint32(12345)
	for i := range blocks {
		b := make([]byte, blockLen)
		for j := range b {
			x = x*1664525 + 1013904223
			b[j] = "abcdefgh"[x>>29]
		}
		blocks[i] = b
	}
	t := blockLen / 3
	type piece struct{ blk, off, n int }
	layout := []struct {
		name   string
		pieces []piece
	}{
		{"a", []piece{{0, 0, 2 * t}}},
		{"b", []piece{{1, 0, 2 * t}}},
		{"c", []piece{{0, 2 * t, t}, {2, 0, t}}},
		{"d", []piece{{2, t, t}}},
		{"e", []piece{{1, 2 * t, t}, {2, 2 * t, t}}},
	}
	s := &Spread{Files: map[string][]byte{}, Needs: map[string][]int{}}
	var names []string
	var chunks [][]metadata.Chunk
	for _, f := range layout {
		names = append(names, f.name)
		var cs []metadata.Chunk
		for _, p := range f.pieces {
			cs = append(cs, metadata.Chunk{Block: uint32(p.blk), Offset: uint32(p.off), Size: uint32(p.n)})
			s.Files[f.name] = append(s.Files[f.name], blocks[p.blk][p.off:p.off+p.n]...)
			s.Needs[f.name] = append(s.Needs[f.name], p.blk)
		}
		chunks = append(chunks, cs)
	}
	bs := uint32(1)
	for int(bs) < blockLen {
		bs <<= 1
	}
	img, err := Build(Files(bs, names, chunks), blocks, compression)
	if err != nil {
		return nil, err
	}
	s.Image = img
	return s, nil
}

// NeedsBlock reports whether file name reads from block blk.
func (s *Spread) NeedsBlock(name string, blk int) bool {
	for _, b := range s.Needs[name] {
		if b == blk {
			return true
		}
	}
	return false
}

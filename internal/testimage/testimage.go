// Package testimage builds small DwarFS images from a hand-made metadata
// model and block contents, so tests can craft exactly the (possibly
// corrupt) image they need.
package testimage

import (
	"bytes"
	"fmt"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/metadata"
)

// Build returns an image holding blocks (compressed with compression, a
// mkdwarfs -C spec such as "zstd" or "null"), then md.
func Build(md *metadata.Metadata, blocks [][]byte, compression string) ([]byte, error) {
	c, err := block.NewCompressor(compression)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w := block.NewWriter(&buf, block.WriterOptions{})
	for i, b := range blocks {
		comp, payload, err := block.CompressSection(c, b)
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

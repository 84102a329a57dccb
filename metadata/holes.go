package metadata

import (
	"fmt"
	"math/bits"
)

// LargeHoleOffset in a hole chunk's Offset says that its Size indexes
// large_hole_size instead of encoding the length.
const LargeHoleOffset = 0xFFFFFFFF

// HoleEncoder turns sparse-file hole lengths into hole chunks the way the
// reference writer does: inline (Size = length / block size, Offset = the
// remainder) while Size stays within the bit width of the largest data
// chunk, so holes never widen the packed chunk size column; otherwise as an
// index into a deduplicated large_hole_size list.
type HoleEncoder struct {
	block       uint32
	bits        uint
	inlineLimit uint64
	index       map[uint64]uint32
	// Sizes is the large_hole_size list, in first-use order.
	Sizes []uint64
}

// NewHoleEncoder returns an encoder for holes in hole block holeBlock of an
// image with the given block size (a power of two) whose largest data chunk
// is maxDataChunk bytes.
func NewHoleEncoder(holeBlock, blockSize, maxDataChunk uint32) *HoleEncoder {
	k := uint(bits.TrailingZeros32(blockSize))
	return &HoleEncoder{
		block:       holeBlock,
		bits:        k,
		inlineLimit: uint64(1)<<(uint(bits.Len32(maxDataChunk))+k) - 1,
		index:       map[uint64]uint32{},
		Sizes:       []uint64{},
	}
}

// Chunk returns the hole chunk for a hole of length bytes.
func (e *HoleEncoder) Chunk(length uint64) Chunk {
	if length <= e.inlineLimit {
		return Chunk{Block: e.block, Offset: uint32(length & (1<<e.bits - 1)), Size: uint32(length >> e.bits)}
	}
	i, ok := e.index[length]
	if !ok {
		i = uint32(len(e.Sizes))
		e.index[length] = i
		e.Sizes = append(e.Sizes, length)
	}
	return Chunk{Block: e.block, Offset: LargeHoleOffset, Size: i}
}

// HoleLength decodes the length of hole chunk c of md.
func (md *Metadata) HoleLength(c Chunk) (uint64, error) {
	if c.Offset != LargeHoleOffset {
		return uint64(c.Size)*uint64(md.BlockSize) + uint64(c.Offset), nil
	}
	if uint64(c.Size) >= uint64(len(md.LargeHoleSize)) {
		return 0, fmt.Errorf("metadata: large hole index %d out of range (%d)", c.Size, len(md.LargeHoleSize))
	}
	return md.LargeHoleSize[c.Size], nil
}

// SizeCacheMinChunks is the reference mkdwarfs threshold: files with at
// least this many chunks get a reg_file_size_cache entry.
const SizeCacheMinChunks = 128

// SizeCache computes the reg_file_size_cache that the reference writes:
// the size, and for files with holes the allocated size, of every entry of
// the (unpacked) chunk table with at least minChunks chunks, so that
// readers need not add up long chunk lists. Holes are recognised by
// md.HoleBlockIndex and sized with md.BlockSize and md.LargeHoleSize.
func (md *Metadata) SizeCache(table []uint32, minChunks uint32) (*InodeSizeCache, error) {
	c := &InodeSizeCache{MinChunkCount: uint64(minChunks)}
	for i := 0; i+1 < len(table); i++ {
		b, e := table[i], table[i+1]
		if e < b || uint64(e) > uint64(md.ChunkCount()) {
			return nil, fmt.Errorf("metadata: chunk table entry %d: range %d..%d invalid (%d chunks)", i, b, e, md.ChunkCount())
		}
		if e-b < minChunks {
			continue
		}
		var size, holes uint64
		for k := b; k < e; k++ {
			ch := md.ChunkAt(int(k))
			if md.HoleBlockIndex == nil || ch.Block != *md.HoleBlockIndex {
				size += uint64(ch.Size)
				continue
			}
			n, err := md.HoleLength(ch)
			if err != nil {
				return nil, err
			}
			size += n
			holes += n
		}
		c.SizeLookup = append(c.SizeLookup, KV{Key: uint32(i), Value: size})
		if holes > 0 {
			c.AllocatedSizeLookup = append(c.AllocatedSizeLookup, KV{Key: uint32(i), Value: size - holes})
		}
	}
	return c, nil
}

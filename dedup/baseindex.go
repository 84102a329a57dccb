package dedup

import (
	"context"
	"fmt"
	"math/bits"
)

// baseIndex is the segmenter's view of base blocks (Options.Base): the
// sampled windows of their decoded data, so that new data can refer to
// them, as it can to the blocks of its own lookback. Read-only once
// built; every segmenter of a build shares it.
type baseIndex struct {
	blocks    map[uint32][]byte
	table     map[uint32]uint64 // hash -> block<<32 | offset
	bloom     []uint64
	bloomBits uint
}

// maxBaseEntries bounds the base index's table (about 40 bytes an entry
// with the map's overhead).
const maxBaseEntries = 1 << 23

// buildBaseIndex decodes the base blocks Base.IndexBlocks names (through
// Base.BlockData) and indexes their windows at the segmenter's sampling.
func (b *builder) buildBaseIndex(ctx context.Context) (*baseIndex, error) {
	base, opt := b.opt.Base, b.opt
	if base == nil || base.BlockData == nil || len(base.IndexBlocks) == 0 || opt.WindowBits <= 0 || opt.Lookback <= 0 || opt.Hollow {
		return nil, nil
	}
	window := 1 << opt.WindowBits
	step := max(1, window>>opt.WindowStep)
	ix := &baseIndex{blocks: map[uint32][]byte{}}
	var total int
	for _, n := range base.IndexBlocks {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		d, err := base.BlockData(n)
		if err != nil {
			return nil, fmt.Errorf("reading base block %d: %w", n, err)
		}
		ix.blocks[uint32(n)] = d
		total += len(d)
	}
	// Sample sparser over a large base so that the table stays bounded:
	// matches then need to be longer (step+window-1 bytes) to be found.
	step = max(step, (total+maxBaseEntries-1)/maxBaseEntries)
	entries := max(total/step, 1)
	ix.bloomBits = max(uint(bits.Len(uint(entries)))+uint(max(opt.BloomSizeShift, 0)), 6)
	ix.bloom = make([]uint64, (1<<ix.bloomBits)/64)
	ix.table = make(map[uint32]uint64, entries)
	s := &segmenter{window: window, rollOut: uint32(window % 32)}
	for _, n := range base.IndexBlocks {
		d := ix.blocks[uint32(n)]
		var h uint32
		for o, first := 0, true; o+window <= len(d); o += step {
			if first || step >= window {
				h = buzhash(d[o : o+window])
				first = false
			} else {
				for q := o - step; q < o; q++ {
					h = rotl1(h, s, d[q], d[q+window])
				}
			}
			ix.table[h] = uint64(n)<<32 | uint64(o)
			i, j := ix.bloomIdx(h)
			ix.bloom[i/64] |= 1 << (i % 64)
			ix.bloom[j/64] |= 1 << (j % 64)
		}
	}
	b.verbosef("indexed %d bytes of %d base blocks for segment matches (%d-byte window every %d bytes)", total, len(base.IndexBlocks), window, step)
	return ix, nil
}

func (ix *baseIndex) bloomIdx(h uint32) (uint32, uint32) {
	x := uint64(h) * 0x9E3779B97F4A7C15
	return uint32(x >> (64 - ix.bloomBits)), uint32(x>>(32-ix.bloomBits)) & (1<<ix.bloomBits - 1)
}

// lookup returns the base location of window hash h, if any.
func (ix *baseIndex) lookup(h uint32) (uint32, int, bool) {
	if ix == nil {
		return 0, 0, false
	}
	i, j := ix.bloomIdx(h)
	if ix.bloom[i/64]&(1<<(i%64)) == 0 || ix.bloom[j/64]&(1<<(j%64)) == 0 {
		return 0, 0, false
	}
	v, ok := ix.table[h]
	return uint32(v >> 32), int(uint32(v)), ok
}

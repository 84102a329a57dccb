package dedup

import (
	"context"
	"fmt"
	"math/bits"

	"golang.org/x/sync/errgroup"
)

// baseIndex is the segmenter's view of base blocks (Options.Base): the
// sampled windows of their decoded data, so that new data can refer to
// them, as it can to the blocks of its own lookback. Read-only once
// built; every segmenter of a build shares it.
type baseIndex struct {
	blocks    map[uint32][]byte
	table     probeTable // hash -> block<<32 | offset
	bloom     []uint64
	bloomBits uint
}

// probeTable is an open-addressing hash table from window hash to
// location, sized once: filling it is several times faster than a Go map
// of millions of entries, which is most of an append's set-up time. A
// later put of a key replaces the earlier value, as a map's would.
type probeTable struct {
	keys []uint32
	vals []uint64 // location | 1<<63; 0 marks an empty slot
	mask uint32
}

func newProbeTable(entries int) probeTable {
	n := 1 << bits.Len(uint(max(2*entries, 16)-1))
	return probeTable{keys: make([]uint32, n), vals: make([]uint64, n), mask: uint32(n - 1)}
}

func (t *probeTable) slot(h uint32) uint32 {
	// The buzhash's low bits are well mixed, but spread them anyway: a
	// multiply costs nothing beside a cache miss.
	return (h * 0x9E3779B1) & t.mask
}

func (t *probeTable) put(h uint32, v uint64) {
	for i := t.slot(h); ; i = (i + 1) & t.mask {
		if t.vals[i] == 0 || t.keys[i] == h {
			t.keys[i], t.vals[i] = h, v|1<<63
			return
		}
	}
}

func (t *probeTable) get(h uint32) (uint64, bool) {
	for i := t.slot(h); ; i = (i + 1) & t.mask {
		switch {
		case t.vals[i] == 0:
			return 0, false
		case t.keys[i] == h:
			return t.vals[i] &^ (1 << 63), true
		}
	}
}

// maxBaseEntries bounds the base index's table (24 bytes an entry at
// half load).
const maxBaseEntries = 1 << 23

// buildBaseIndex decodes the base blocks Base.IndexBlocks names (through
// Base.BlockData) and indexes their windows at the segmenter's sampling.
func (b *builder) buildBaseIndex(ctx context.Context) (*baseIndex, error) {
	base, opt := b.opt.Base, b.opt
	if base == nil || base.BlockData == nil || len(base.IndexBlocks) == 0 || opt.WindowBits <= 0 || opt.Lookback <= 0 || opt.Hollow {
		return nil, nil
	}
	window := 1 << opt.WindowBits
	// Half the window at most: an append indexes all of a large image
	// where a build indexes one block, and filling the table (a cache
	// miss per entry) would otherwise take most of a small append's time.
	// Matches then need 1.5 windows to be found.
	step := max(1, window>>min(opt.WindowStep, 1))
	ix := &baseIndex{blocks: map[uint32][]byte{}}
	// Decode the blocks in parallel; the index is then filled in block
	// order, so that it does not depend on the number of workers.
	data := make([][]byte, len(base.IndexBlocks))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(opt.ScannerWorkers, 1))
	for i, n := range base.IndexBlocks {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			d, err := base.BlockData(n)
			if err != nil {
				return fmt.Errorf("reading base block %d: %w", n, err)
			}
			data[i] = d
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var total int
	for i, n := range base.IndexBlocks {
		ix.blocks[uint32(n)] = data[i]
		total += len(data[i])
	}
	// Sample sparser over a large base so that the table stays bounded:
	// matches then need to be longer (step+window-1 bytes) to be found.
	step = max(step, (total+maxBaseEntries-1)/maxBaseEntries)
	entries := max(total/step, 1)
	ix.bloomBits = bloomBits(entries, opt.BloomSizeShift)
	ix.bloom = make([]uint64, (1<<ix.bloomBits)/64)
	ix.table = newProbeTable(entries)
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
			ix.table.put(h, uint64(n)<<32|uint64(o))
			i, j := ix.bloomIdx(h)
			ix.bloom[i/64] |= 1 << (i % 64)
			ix.bloom[j/64] |= 1 << (j % 64)
		}
	}
	b.verbosef("indexed %d bytes of %d base blocks for segment matches (%d-byte window every %d bytes)", total, len(base.IndexBlocks), window, step)
	return ix, nil
}

func (ix *baseIndex) bloomIdx(h uint32) (uint32, uint32) { return bloomPositions(h, ix.bloomBits) }

// lookup returns the base location of window hash h, if any.
func (ix *baseIndex) lookup(h uint32) (uint32, int, bool) {
	if ix == nil {
		return 0, 0, false
	}
	i, j := ix.bloomIdx(h)
	if ix.bloom[i/64]&(1<<(i%64)) == 0 || ix.bloom[j/64]&(1<<(j%64)) == 0 {
		return 0, 0, false
	}
	v, ok := ix.table.get(h)
	return uint32(v >> 32), int(uint32(v)), ok
}

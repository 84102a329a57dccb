package dedup

import (
	"context"
	"math/rand/v2"
	"testing"
)

// TestProbeTableLikeMap: puts (with repeated keys, whose later value
// wins) and gets agree with a Go map, also for keys never put.
func TestProbeTableLikeMap(t *testing.T) {
	for _, n := range []int{1, 100, 5000} {
		rnd := rand.New(rand.NewPCG(uint64(n), 7))
		tab := newProbeTable(n)
		want := map[uint32]uint64{}
		for range n {
			h := rnd.Uint32() % uint32(2*n) // about half the keys repeat
			v := rnd.Uint64N(1 << 40)
			tab.put(h, v)
			want[h] = v
		}
		for h := range uint32(4 * n) {
			got, ok := tab.get(h)
			w, wok := want[h]
			if ok != wok || got != w {
				t.Fatalf("n=%d: get(%d) = %d, %v; want %d, %v", n, h, got, ok, w, wok)
			}
		}
	}
}

// TestBloomFilterBounds: at the largest --bloom-filter-size the filters
// of a full base index and of a segmenter with as many windows stay
// within maxBloomBits, and both bit positions of a hash spread over the
// whole filter (a shift past 32 bits made one of them always 0).
func TestBloomFilterBounds(t *testing.T) {
	const shift = 10 // --bloom-filter-size's largest value
	check := func(t *testing.T, bloom []uint64, idx func(uint32) (uint32, uint32)) {
		t.Helper()
		if bits := len(bloom) * 64; bits > 1<<maxBloomBits {
			t.Fatalf("filter of %d bits, over 2^%d", bits, maxBloomBits)
		}
		var maxI, maxJ uint32
		for h := range uint32(1 << 16) {
			i, j := idx(h * 2654435761)
			if int(i) >= len(bloom)*64 || int(j) >= len(bloom)*64 {
				t.Fatalf("hash %d: positions %d, %d outside a filter of %d bits", h, i, j, len(bloom)*64)
			}
			maxI, maxJ = max(maxI, i), max(maxJ, j)
		}
		if n := uint32(len(bloom) * 64); maxI < n/2 || maxJ < n/2 {
			t.Errorf("positions up to %d and %d of %d bits: not spread over the filter", maxI, maxJ, n)
		}
	}
	t.Run("base index", func(t *testing.T) {
		// 2-byte windows every byte: maxBaseEntries entries from as many bytes.
		opt := segOpts(24, 1, 1, 1)
		opt.BloomSizeShift = shift
		data := make([]byte, maxBaseEntries)
		opt.Base = &Base{Blocks: 1, IndexBlocks: []int{0}, BlockData: func(int) ([]byte, error) { return data, nil }}
		b := &builder{opt: opt}
		ix, err := b.buildBaseIndex(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		check(t, ix.bloom, ix.bloomIdx)
	})
	t.Run("segmenter", func(t *testing.T) {
		opt := segOpts(23, 1, 1, 1)
		opt.BloomSizeShift = shift
		var st Stats
		s := newSegmenter(context.Background(), opt, func(context.Context, []byte) error { return nil }, &st)
		check(t, s.bloom, s.bloomIdx)
	})
}

package dedup

import (
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

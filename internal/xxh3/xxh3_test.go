package xxh3

import (
	"math/rand/v2"
	"testing"

	upstream "github.com/zeebo/xxh3"
)

// TestMatchesUpstream compares Hash and the streaming Hasher with
// upstream's on every length across the short-input cases and the
// block and stripe boundaries of the long one, on each vector path this
// CPU has (the CPU detection is the one change from upstream).
func TestMatchesUpstream(t *testing.T) {
	data := make([]byte, 3<<10+7)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	big := make([]byte, 1<<20+13)
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	paths := []struct {
		name string
		with func(func())
	}{
		{"generic", withGeneric}, {"sse2", withSSE2}, {"avx2", withAVX2}, {"avx512", withAVX512},
	}
	for _, p := range paths {
		p.with(func() {
			for n := 0; n <= len(data); n++ {
				b := data[:n]
				want := upstream.Hash(b)
				if got := Hash(b); got != want {
					t.Fatalf("%s: Hash of %d bytes = %#x, upstream %#x", p.name, n, got, want)
				}
				if n%61 == 0 || n < 300 {
					if got := streamed(b, 1+n%97); got != want {
						t.Fatalf("%s: streamed %d bytes = %#x, upstream %#x", p.name, n, got, want)
					}
				}
			}
			want := upstream.Hash(big)
			if got := Hash(big); got != want {
				t.Fatalf("%s: Hash of %d bytes = %#x, upstream %#x", p.name, len(big), got, want)
			}
			for _, chunk := range []int{1000, 64 << 10} {
				if got := streamed(big, chunk); got != want {
					t.Fatalf("%s: %d bytes streamed by %d = %#x, upstream %#x", p.name, len(big), chunk, got, want)
				}
			}
		})
	}
}

func streamed(b []byte, chunk int) uint64 {
	h := New()
	for len(b) > 0 {
		k := min(chunk, len(b))
		h.Write(b[:k])
		b = b[k:]
	}
	return h.Sum64()
}

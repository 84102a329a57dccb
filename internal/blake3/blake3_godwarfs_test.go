package blake3

import (
	"bytes"
	"math/rand/v2"
	"testing"

	upstream "github.com/zeebo/blake3"
)

// TestMatchesUpstream compares the sum of this copy with upstream's on
// lengths across the chunk (1 KiB) and the 8-chunk boundaries of the
// vector code, whole and written piecewise.
func TestMatchesUpstream(t *testing.T) {
	data := make([]byte, 70<<10)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for n := 0; n <= len(data); n += 1 + n/40 {
		b := data[:n]
		want := upstream.Sum256(b)
		if got := Sum256(b); got != want {
			t.Fatalf("Sum256 of %d bytes = %x, upstream %x", n, got, want)
		}
		h := New()
		for rest, k := b, 1+n%1500; len(rest) > 0; rest = rest[min(k, len(rest)):] {
			h.Write(rest[:min(k, len(rest))])
		}
		if got := h.Sum(nil); !bytes.Equal(got, want[:]) {
			t.Fatalf("%d bytes written piecewise: %x, upstream %x", n, got, want)
		}
	}
}

package dedup

import (
	"bytes"
	"testing"
)

// plainDigest is the digest as its definition reads: each byte from the
// fifth on votes for four trigrams of itself and the four bytes before it.
func plainDigest(data []byte) (d [4]uint64, sim uint32) {
	var s simAcc
	for i := 4; i < len(data); i++ {
		c0, c1, c2, c3, c4 := data[i], data[i-1], data[i-2], data[i-3], data[i-4]
		s.acc[0][trigram(c0, c1, c2, 0)]++
		s.acc[0][trigram(c0, c1, c3, 1)]++
		s.acc[0][trigram(c0, c2, c3, 2)]++
		s.acc[0][trigram(c0, c1, c4, 3)]++
		s.total += 4
	}
	return s.digest()
}

// TestSimAccWrites checks the incremental digest against the definition,
// for data written whole and in pieces of every small size (which cross
// the four-byte window at every offset).
func TestSimAccWrites(t *testing.T) {
	inputs := map[string][]byte{
		"empty":  nil,
		"short":  []byte("abc"),
		"five":   []byte("abcde"),
		"text":   bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog. "), 200),
		"random": randBytes(11, 9000),
		"zeros":  make([]byte, 5000),
	}
	for name, data := range inputs {
		want, wantSim := plainDigest(data)
		for _, piece := range []int{0, 1, 2, 3, 4, 5, 7, 64, 4093} {
			var s simAcc
			rest := data
			for len(rest) > 0 {
				k := len(rest)
				if piece > 0 {
					k = min(k, piece)
				}
				if n, err := s.Write(rest[:k]); n != k || err != nil {
					t.Fatalf("%s: Write(%d bytes) = %d, %v", name, k, n, err)
				}
				rest = rest[k:]
			}
			got, gotSim := s.digest()
			if got != want || gotSim != wantSim {
				t.Errorf("%s in pieces of %d: digest %x/%x, want %x/%x", name, piece, got, gotSim, want, wantSim)
			}
			if wantTotal := uint64(4 * max(len(data)-4, 0)); s.total != wantTotal {
				t.Errorf("%s in pieces of %d: %d votes, want %d", name, piece, s.total, wantTotal)
			}
		}
	}
}

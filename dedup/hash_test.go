package dedup

import (
	"bytes"
	"io"
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

// TestSpanWriter checks that only the bytes inside the spans pass, for
// every size of the pieces a stream is written in.
func TestSpanWriter(t *testing.T) {
	data := randBytes(12, 1000)
	for _, tc := range []struct {
		name  string
		spans []extent
	}{
		{"head", []extent{{0, 44}}},
		{"middle", []extent{{100, 300}}},
		{"tail", []extent{{900, 100}}},
		{"two", []extent{{0, 10}, {500, 250}}},
		{"adjacent", []extent{{10, 5}, {15, 5}}},
		{"past the end", []extent{{990, 50}}},
	} {
		var want []byte
		for _, sp := range tc.spans {
			want = append(want, data[sp.off:min(sp.off+sp.len, int64(len(data)))]...)
		}
		for _, piece := range []int{1, 3, 44, 64, 1000} {
			var got bytes.Buffer
			w := &spanWriter{w: &got, spans: append([]extent(nil), tc.spans...)}
			for rest := data; len(rest) > 0; {
				k := min(piece, len(rest))
				if n, err := w.Write(rest[:k]); n != k || err != nil {
					t.Fatalf("%s: Write(%d bytes) = %d, %v", tc.name, k, n, err)
				}
				rest = rest[k:]
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("%s in pieces of %d: passed %d bytes, want %d", tc.name, piece, got.Len(), len(want))
			}
		}
	}
}

// TestDigestWriter checks which bytes of a categorized file the
// similarity digest reads: the fragments of categories ordered by
// similarity only, all of a file whose fragments may still change, and
// nothing when no fragment's category uses a digest.
func TestDigestWriter(t *testing.T) {
	revpath, nilsimsa := OrderRevPath, OrderNilsimsa
	opt := &Options{Order: OrderNilsimsa, PerCategory: map[string]CategoryOptions{
		kindNames[kPCMWaveform]: {Order: &revpath},
		kindNames[kFITSImage]:   {Order: &revpath},
		kindNames[kELF]:         {Order: &nilsimsa},
	}}
	b := &builder{opt: opt}
	wav := []fragment{{category{kind: kPCMMetadata}, 44}, {category{kind: kPCMWaveform}, 956}}
	data := randBytes(13, 1000)
	digestOf := func(w io.Writer, acc *simAcc) [4]uint64 {
		if w != nil {
			w.Write(data)
		}
		d, _ := acc.digest()
		return d
	}
	whole, _ := plainDigest(data)
	head, _ := plainDigest(data[:44])
	var none simAcc
	empty, _ := none.digest()
	for _, tc := range []struct {
		name  string
		frags []fragment
		final bool
		hot   bool
		want  [4]uint64
		nilW  bool
	}{
		{"uncategorized", nil, true, false, whole, false},
		{"audio: its metadata", wav, true, false, head, false},
		{"audio, incompressible check to come", wav, false, false, whole, false},
		{"audio, hot", wav, true, true, whole, false},
		{"image alone", []fragment{{category{kind: kFITSImage}, 1000}}, true, false, empty, true},
		{"all similarity", []fragment{{category{kind: kPCMMetadata}, 500}, {category{kind: kELF}, 500}}, true, false, whole, false},
	} {
		acc := &simAcc{}
		w := b.digestWriter(&inode{size: 1000, x: &inodeExtra{frags: tc.frags}, hot: tc.hot}, acc, tc.final)
		if (w == nil) != tc.nilW {
			t.Errorf("%s: writer %T, want nil: %v", tc.name, w, tc.nilW)
		}
		if got := digestOf(w, acc); got != tc.want {
			t.Errorf("%s: digest %x, want %x", tc.name, got, tc.want)
		}
	}
}

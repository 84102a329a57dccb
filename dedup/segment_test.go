package dedup

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

type collect struct{ blocks [][]byte }

func (c *collect) sink(_ context.Context, b []byte) error {
	c.blocks = append(c.blocks, b)
	return nil
}

func randBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x5555))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// reassemble resolves chunks against the finished blocks and checks the
// block invariants (no straddling, in range).
func reassemble(t *testing.T, blocks [][]byte, bs int, cs []pchunk) []byte {
	t.Helper()
	var out []byte
	for _, c := range cs {
		if c.isHole() {
			out = append(out, make([]byte, c.holeSize())...)
			continue
		}
		if int(c.block) >= len(blocks) {
			t.Fatalf("chunk %+v: no such block (%d blocks)", c, len(blocks))
		}
		b := blocks[c.block]
		if len(b) > bs || int(c.off)+int(c.size) > len(b) {
			t.Fatalf("chunk %+v out of block (len %d, block size %d)", c, len(b), bs)
		}
		out = append(out, b[c.off:c.off+c.size]...)
	}
	return out
}

func segOpts(blockBits, window, step, lookback int) *Options {
	o := DefaultOptions()
	o.BlockSizeBits, o.WindowBits, o.WindowStep, o.Lookback = blockBits, window, step, lookback
	return &o
}

func TestSegmenterRepeatedPiece(t *testing.T) {
	piece := randBytes(7, 64<<10)
	data := bytes.Repeat(piece, 8)
	var st Stats
	var col collect
	seg := newSegmenter(context.Background(), segOpts(24, 12, 3, 1), col.sink, &st)
	cs, err := seg.add(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := seg.finish(); err != nil {
		t.Fatal(err)
	}
	if got := reassemble(t, col.blocks, 1<<24, cs); !bytes.Equal(got, data) {
		t.Fatal("content differs")
	}
	if st.SegMatches < 1 {
		t.Fatalf("no segment matches: %+v", st)
	}
	// Everything after the first copy must be a reference to earlier data.
	if st.BlockBytes > 64<<10+4096 {
		t.Fatalf("stored %d bytes for 8 copies of 64 KiB (matches %d, %d bytes)", st.BlockBytes, st.SegMatches, st.SegMatchBytes)
	}
	t.Logf("stored %d bytes, %d matches covering %d bytes, %d chunks", st.BlockBytes, st.SegMatches, st.SegMatchBytes, len(cs))
}

func TestSegmenterRoundTrip(t *testing.T) {
	base := randBytes(1, 300<<10)
	var files [][]byte
	for i := range 6 {
		v := append([]byte(nil), base[i*1000:]...)
		for j := range 30 {
			v[(j*7717+i*31)%len(v)] ^= 0xA5
		}
		files = append(files, v, randBytes(uint64(100+i), 5000+i*3000))
	}
	files = append(files, make([]byte, 100000), []byte("tiny"), nil)
	for _, tc := range []struct{ bits, w, step, lb int }{
		{16, 12, 3, 1}, {16, 12, 0, 0}, {12, 8, 1, 2}, {20, 12, 3, 1}, {14, 10, 4, 8}, {18, 0, 0, 1}, {10, 6, 2, 1},
	} {
		t.Run(fmt.Sprintf("S%d_W%d_w%d_B%d", tc.bits, tc.w, tc.step, tc.lb), func(t *testing.T) {
			var st Stats
			var col collect
			seg := newSegmenter(context.Background(), segOpts(tc.bits, tc.w, tc.step, tc.lb), col.sink, &st)
			var all [][]pchunk
			for _, f := range files {
				cs, err := seg.add(f, nil)
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, cs)
			}
			if err := seg.finish(); err != nil {
				t.Fatal(err)
			}
			var total int
			for i, f := range files {
				total += len(f)
				if got := reassemble(t, col.blocks, 1<<tc.bits, all[i]); !bytes.Equal(got, f) {
					t.Fatalf("file %d differs", i)
				}
			}
			for i, b := range col.blocks[:max(len(col.blocks)-1, 0)] {
				if len(b) != 1<<tc.bits {
					t.Errorf("block %d not full: %d", i, len(b))
				}
			}
			// Only when the lookback spans two versions can they be shared.
			if tc.w > 0 && tc.lb<<tc.bits >= 2*len(files[0]) && st.BlockBytes >= int64(total)/2 {
				t.Errorf("poor dedup: stored %d of %d bytes", st.BlockBytes, total)
			}
			t.Logf("stored %d of %d bytes in %d blocks, %d matches", st.BlockBytes, total, len(col.blocks), st.SegMatches)
		})
	}
}

// TestSegmenterLookback checks -B as the reference counts it: the number of
// blocks searched, the one being filled included; 0 searches none.
func TestSegmenterLookback(t *testing.T) {
	const bits = 16 // 64 KiB blocks
	piece := randBytes(11, 20<<10)
	// inBlock repeats the piece inside the first block; across puts the
	// repeat in the second block, with the first copy in the first one.
	inBlock := [][]byte{piece, piece}
	across := [][]byte{piece, randBytes(12, 60<<10), piece}
	for _, tc := range []struct {
		lookback        int
		inBlock, across bool // whether the repeat is found
	}{
		{0, false, false},
		{1, true, false},
		{2, true, true},
		{4, true, true},
	} {
		for _, sc := range []struct {
			name  string
			files [][]byte
			want  bool
		}{{"in-block", inBlock, tc.inBlock}, {"across", across, tc.across}} {
			t.Run(fmt.Sprintf("B%d/%s", tc.lookback, sc.name), func(t *testing.T) {
				var st Stats
				var col collect
				seg := newSegmenter(context.Background(), segOpts(bits, 12, 3, tc.lookback), col.sink, &st)
				var all [][]pchunk
				for _, f := range sc.files {
					cs, err := seg.add(f, nil)
					if err != nil {
						t.Fatal(err)
					}
					all = append(all, cs)
				}
				if err := seg.finish(); err != nil {
					t.Fatal(err)
				}
				var total int64
				for i, f := range sc.files {
					total += int64(len(f))
					if got := reassemble(t, col.blocks, 1<<bits, all[i]); !bytes.Equal(got, f) {
						t.Fatalf("file %d differs", i)
					}
				}
				last := all[len(all)-1]
				found := st.SegMatches > 0
				if found != sc.want {
					t.Fatalf("-B %d: segment matches %d (%d bytes), want found=%v", tc.lookback, st.SegMatches, st.SegMatchBytes, sc.want)
				}
				if sc.want {
					// The repeat is one reference into the first block.
					if len(last) != 1 || last[0].block != 0 || last[0].off != 0 || int(last[0].size) != len(piece) {
						t.Fatalf("repeat stored as %+v, want one chunk at block 0 offset 0", last)
					}
					if st.BlockBytes != total-int64(len(piece)) {
						t.Fatalf("stored %d bytes, want %d", st.BlockBytes, total-int64(len(piece)))
					}
				} else if st.BlockBytes != total {
					t.Fatalf("stored %d bytes without matches, want all %d", st.BlockBytes, total)
				}
			})
		}
	}
}

func TestBuzhashRolling(t *testing.T) {
	d := randBytes(3, 5000)
	for _, w := range []int{32, 64, 4096} {
		s := &segmenter{window: w, rollOut: uint32(w % 32)}
		h := buzhash(d[:w])
		for p := 0; p+w < len(d); p++ {
			h = rotl1(h, s, d[p], d[p+w])
			if want := buzhash(d[p+1 : p+1+w]); h != want {
				t.Fatalf("w=%d p=%d: rolling %x != direct %x", w, p, h, want)
			}
		}
	}
}

func BenchmarkSegmenter(b *testing.B) {
	base := randBytes(5, 4<<20)
	data := append(append([]byte(nil), base...), base[1000:]...) // half repeated
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var st Stats
		seg := newSegmenter(context.Background(), segOpts(24, 12, 3, 1), func(context.Context, []byte) error { return nil }, &st)
		if _, err := seg.add(data, nil); err != nil {
			b.Fatal(err)
		}
		seg.finish()
	}
}

func BenchmarkSimilarityDigest(b *testing.B) {
	data := randBytes(6, 1<<20)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var s simAcc
		s.Write(data)
		s.digest()
	}
}

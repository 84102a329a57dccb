package encode

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/godwarfs/godwarfs/block"
)

// xzIndexRecords is the number of xz blocks the index at the end of a
// one-stream xz payload lists.
func xzIndexRecords(t *testing.T, p []byte) uint64 {
	t.Helper()
	if len(p) < 24 || string(p[len(p)-2:]) != "YZ" {
		t.Fatalf("payload of %d bytes does not end in an xz footer", len(p))
	}
	size := int(binary.LittleEndian.Uint32(p[len(p)-8:])+1) * 4
	idx := p[len(p)-12-size:]
	n, k := binary.Uvarint(idx[1:])
	if idx[0] != 0 || k <= 0 {
		t.Fatal("no xz index before the footer")
	}
	return n
}

// TestLZMAXZBlocks checks that lzma:xz_block_size cuts the stream into xz
// blocks of that size, in every encoder of this build (and the pure-Go
// one), with and without a BCJ filter, and that they decode to the input.
func TestLZMAXZBlocks(t *testing.T) {
	src := make([]byte, 3<<20+12345)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range src {
		src[i] = "abcdefghij"[r.IntN(10)]
	}
	for _, spec := range []string{"lzma:level=1:xz_block_size=20", "lzma:level=1:xz_block_size=20:binary=x86", "lzma:level=1"} {
		native, err := NewCompressor(spec)
		if err != nil {
			t.Fatal(err)
		}
		so, err := parseSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		pure, err := newLZMACompressor(so)
		if err != nil {
			t.Fatal(err)
		}
		want := uint64(4)
		if spec == "lzma:level=1" {
			want = 1
		}
		for name, c := range map[string]Compressor{"build": native, "purego": pure} {
			p, err := c.Compress(src)
			if err != nil {
				t.Fatalf("%s %s: %v", name, spec, err)
			}
			if n := xzIndexRecords(t, p); n != want {
				t.Errorf("%s %s: %d xz blocks, want %d", name, spec, n, want)
			}
			got, err := block.Decompress(block.CompLZMA, p, int64(len(src)))
			if err != nil || !bytes.Equal(got, src) {
				t.Errorf("%s %s: does not decode to the input (%v)", name, spec, err)
			}
		}
	}
	if _, err := NewCompressor("lzma:xz_block_size=11"); err == nil {
		t.Error("xz_block_size=11 accepted")
	}
}

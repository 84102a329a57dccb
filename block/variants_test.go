package block

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// rows returns n rows of fixed width that repeat with small changes, like
// the metadata's tables.
func rows(n int) []byte {
	var b bytes.Buffer
	r := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		fmt.Fprintf(&b, "%07d%03d%c", i%997, r.IntN(40), 'a'+byte(i%5))
	}
	return b.Bytes()
}

func TestVariants(t *testing.T) {
	want := map[string]int{
		"zstd:level=22":      1,
		"zstd:level=19":      1,
		"zstd:level=22:long": 1,
		"lzma:level=9":       1,
		"lz4hc:level=9":      1,
		"null":               1,
	}
	if nativeZstd {
		want["zstd:level=22"] = 3 // matches from 4 bytes, the pure-Go encoder
	}
	src := rows(20000)
	for spec, n := range want {
		t.Run(spec, func(t *testing.T) {
			c, err := NewCompressor(spec)
			if err != nil {
				t.Fatal(err)
			}
			vs, err := Variants(c)
			if err != nil {
				t.Fatal(err)
			}
			if len(vs) != n || vs[0] != c {
				t.Fatalf("%d variants, first %p; want %d, first %p", len(vs), vs[0], n, c)
			}
			sizes := map[int]bool{}
			smallest := len(src)
			for _, v := range vs {
				if v.Compression() != c.Compression() {
					t.Errorf("variant compresses as %v, not %v", v.Compression(), c.Compression())
				}
				ct, out, err := CompressSection(v, src)
				if err != nil {
					t.Fatal(err)
				}
				got, err := Decompress(ct, out, int64(len(src)))
				if err != nil || !bytes.Equal(got, src) {
					t.Fatalf("variant's payload decodes to %d bytes, %v", len(got), err)
				}
				sizes[len(out)] = true
				smallest = min(smallest, len(out))
			}
			if n > 1 && len(sizes) < 2 {
				t.Errorf("all %d variants give %v bytes: they are not different settings", n, sizes)
			}
			ct, out, err := CompressSmallest(vs, src)
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != smallest {
				t.Errorf("CompressSmallest: %d bytes, smallest variant %d", len(out), smallest)
			}
			if got, err := Decompress(ct, out, int64(len(src))); err != nil || !bytes.Equal(got, src) {
				t.Errorf("CompressSmallest's payload decodes to %d bytes, %v", len(got), err)
			}
		})
	}
}

// TestCompressSmallestNoGain: input that no variant shrinks is stored as
// it is.
func TestCompressSmallestNoGain(t *testing.T) {
	c, err := NewCompressor("zstd:level=22")
	if err != nil {
		t.Fatal(err)
	}
	vs, err := Variants(c)
	if err != nil {
		t.Fatal(err)
	}
	src := make([]byte, 4096)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range src {
		src[i] = byte(r.Uint32())
	}
	ct, out, err := CompressSmallest(vs, src)
	if err != nil || ct != CompNone || !bytes.Equal(out, src) {
		t.Errorf("random input: %v, %d bytes, %v; want NONE and the input", ct, len(out), err)
	}
}

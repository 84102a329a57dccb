//go:build amd64 || 386

package encode

// The test binary is x86 code only on these architectures.

import (
	"bytes"
	"github.com/godwarfs/godwarfs/block/internal/codectest"
	"testing"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/block/internal/xzfmt"
)

// TestLZMABinary: lzma:binary=x86 on executable code writes an x86+LZMA2
// chain that is smaller than LZMA2 alone and reads back exactly; on data
// where the filter does not help, LZMA2 alone is kept. Both encoders.
func TestLZMABinary(t *testing.T) {
	exe := codectest.ExecutableBytes(t, 512<<10)
	if len(exe) < 256<<10 {
		t.Skipf("skipped: test binary only %d bytes", len(exe))
	}
	text := bytes.Repeat([]byte("no calls in here, just words. "), 8<<10)
	for _, ctor := range constructors {
		plain, err := ctor.new("lzma:level=2")
		if err != nil {
			t.Fatal(err)
		}
		bin, err := ctor.new("lzma:level=2:binary=x86")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			src  []byte
			want []uint64
		}{{"executable", exe, []uint64{xzfmt.FilterX86, xzfmt.LZMA2FilterID}}, {"text", text, []uint64{xzfmt.LZMA2FilterID}}} {
			p, err := plain.Compress(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			b, err := bin.Compress(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			if got := xzFilterIDs(t, b); len(got) != 1 || !slicesEqual(got[0], tc.want) {
				t.Errorf("%s %s: filter chain %x, want %x", ctor.name, tc.name, got, tc.want)
			}
			if tc.name == "executable" && len(b) >= len(p) {
				t.Errorf("%s: binary=x86 gives %d bytes, LZMA2 alone %d", ctor.name, len(b), len(p))
			}
			t.Logf("%s %s: %d bytes -> %d plain, %d binary=x86", ctor.name, tc.name, len(tc.src), len(p), len(b))
			got, err := block.Decompress(block.CompLZMA, b, int64(len(tc.src)))
			if err != nil || !bytes.Equal(got, tc.src) {
				t.Fatalf("%s %s: read back: %v", ctor.name, tc.name, err)
			}
			// CompressSectionInto goes through CompressAppend.
			ct, out, err := CompressSectionInto(bin, nil, tc.src)
			if err != nil || ct != block.CompLZMA || !bytes.Equal(out, b) {
				t.Errorf("%s %s: CompressSectionInto gives %v, %d bytes, %v; Compress %d bytes", ctor.name, tc.name, ct, len(out), err, len(b))
			}
		}
	}
}

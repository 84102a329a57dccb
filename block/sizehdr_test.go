package block

import (
	"bytes"
	"testing"
)

// TestSizeFromHeader: the size each codec declares is read from the
// first 64 bytes of its payload; LZMA, which keeps it at the end, says
// so; a damaged zstd header is an error.
func TestSizeFromHeader(t *testing.T) {
	data := bytes.Repeat([]byte("size from header, "), 40000)
	for _, tc := range []struct {
		comp Compression
		ok   bool
	}{{CompZSTD, true}, {CompLZ4, true}, {CompBrotli, true}, {CompLZMA, false}} {
		t.Run(tc.comp.String(), func(t *testing.T) {
			comp, payload := testSection(t, tc.comp, data)
			if comp == CompNone {
				t.Fatalf("%s stored the data uncompressed", tc.comp)
			}
			n, ok, err := SizeFromHeader(comp, payload[:min(len(payload), 64)])
			if err != nil || ok != tc.ok {
				t.Fatalf("SizeFromHeader: %d, %v, %v; want ok=%v", n, ok, err, tc.ok)
			}
			if ok && n != int64(len(data)) {
				t.Errorf("size %d, want %d", n, len(data))
			}
			full, err := UncompressedSize(comp, payload)
			if err != nil || full != int64(len(data)) {
				t.Errorf("UncompressedSize of the whole payload: %d, %v", full, err)
			}
		})
	}
	if _, _, err := SizeFromHeader(CompZSTD, []byte{0x28, 0xb5, 0x2f, 0xfd, 0x08}); err == nil {
		t.Error("zstd header with the reserved bit set: no error")
	}
}

package block

import (
	"bytes"
	"testing"

	"github.com/godwarfs/godwarfs/block/internal/xzfmt"
)

// TestXZBlocksInto: a payload of several xz blocks decodes to its data
// whether dst has room for all of it (each block decoded in place), for
// none of it, or for only part of it.
func TestXZBlocksInto(t *testing.T) {
	src := bytes.Repeat([]byte("godwarfs xz blocks 0123456789 "), 1000)
	for _, chunk := range []int{0, 4096, 7000} {
		payload, err := xzfmt.WriteBlocks(src, chunk, 1<<16, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name    string
			dst     []byte
			inPlace bool
		}{
			{"room", make([]byte, len(src)+10), true},
			{"none", nil, false},
			{"part", make([]byte, len(src)/2), false},
		} {
			got, err := DecompressInto(CompLZMA, payload, c.dst, int64(len(src)))
			if err != nil {
				t.Fatalf("chunk %d, %s: %v", chunk, c.name, err)
			}
			if !bytes.Equal(got, src) {
				t.Fatalf("chunk %d, %s: decoded data differs", chunk, c.name)
			}
			if c.inPlace && &got[0] != &c.dst[0] {
				t.Errorf("chunk %d, %s: not decoded into dst", chunk, c.name)
			}
		}
	}
}

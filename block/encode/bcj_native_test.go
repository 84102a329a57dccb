//go:build cgo && liblzma && !purego

package encode

import (
	"bytes"
	"github.com/godwarfs/godwarfs/block/internal/codectest"
	"testing"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/block/internal/xzfmt"
)

// forcedBCJ is liblzma's stream with filter f before LZMA2, whether or
// not it is smaller.
func forcedBCJ(src []byte, f *xzfmt.Filter) ([]byte, error) {
	l := &cLZMACompressor{preset: 1, pb: lzmaAutoPB, mode: -1, mf: -1, dict: 1 << 20}
	return l.compress(nil, src, len(src)+len(src)/64+1024, false, f)
}

// TestBCJDecodersMatchLiblzma: our decoders read liblzma's encoding of
// every filter, including arm64 which the reference does not write, on
// random data (every code path of the filters) and on an executable.
func TestBCJDecodersMatchLiblzma(t *testing.T) {
	inputs := [][]byte{codectest.RandomBytes(256<<10, 5), codectest.ExecutableBytes(t, 512<<10), {0xE8, 1, 2}}
	for _, f := range xzfmt.Filters {
		for i, src := range inputs {
			stream, err := forcedBCJ(src, &f)
			if err != nil {
				t.Fatalf("%s: liblzma: %v", f.Name, err)
			}
			if got := xzFilterIDs(t, stream); len(got) != 1 || got[0][0] != f.ID {
				t.Fatalf("%s: chain %x", f.Name, got)
			}
			got, err := block.Decompress(block.CompLZMA, stream, int64(len(src)))
			if err != nil || !bytes.Equal(got, src) {
				t.Errorf("%s input %d: read back: %v", f.Name, i, err)
			}
		}
	}
}

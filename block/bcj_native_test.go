//go:build cgo && !purego

package block

import (
	"bytes"
	"testing"
)

// forcedBCJ is liblzma's stream with filter f before LZMA2, whether or
// not it is smaller.
func forcedBCJ(src []byte, f *bcjFilter) ([]byte, error) {
	l := &cLZMACompressor{preset: 1, pb: lzmaAutoPB, mode: -1, mf: -1, dict: 1 << 20}
	return l.compress(nil, src, len(src)+len(src)/64+1024, false, f)
}

// TestBCJDecodersMatchLiblzma: our decoders read liblzma's encoding of
// every filter, including arm64 which the reference does not write, on
// random data (every code path of the filters) and on an executable.
func TestBCJDecodersMatchLiblzma(t *testing.T) {
	inputs := [][]byte{randomBytes(256<<10, 5), executableBytes(t, 512<<10), {0xE8, 1, 2}}
	for _, f := range bcjFilters {
		for i, src := range inputs {
			stream, err := forcedBCJ(src, &f)
			if err != nil {
				t.Fatalf("%s: liblzma: %v", f.name, err)
			}
			if got := xzFilterIDs(t, stream); len(got) != 1 || got[0][0] != f.id {
				t.Fatalf("%s: chain %x", f.name, got)
			}
			got, err := Decompress(CompLZMA, stream, int64(len(src)))
			if err != nil || !bytes.Equal(got, src) {
				t.Errorf("%s input %d: read back: %v", f.name, i, err)
			}
		}
	}
}

//go:build cgo && !purego

package encode

import (
	"bytes"
	"testing"

	"github.com/godwarfs/godwarfs/block"
)

// workspaceStep is one input of a workspace test: the compressor spec,
// the input, and whether the compressor cuts it into jobs (Split).
type workspaceStep struct {
	spec  string
	src   []byte
	split bool
}

// checkWorkspaceSame compresses each step with a compressor kept in one
// Workspace and with one made for the step, and fails unless the sections
// are the same and read back; kept reports whether the workspace holds
// what the encoder keeps. It runs the steps twice, the second time from
// an emptied workspace.
func checkWorkspaceSame(t *testing.T, steps []workspaceStep, kept func(*Workspace) bool) {
	t.Helper()
	ws := NewWorkspace()
	defer ws.Close()
	for round := range 2 {
		for i, s := range steps {
			c, err := NewCompressor(s.spec)
			if err != nil {
				t.Fatal(err)
			}
			if s.split {
				c = WithThreads(Split(c), 2)
			}
			wantCT, want, err := CompressSection(c, s.src)
			if err != nil {
				t.Fatal(err)
			}
			gotCT, got, err := CompressSectionInto(WithWorkspace(c, ws), nil, s.src)
			if err != nil {
				t.Fatalf("round %d, step %d (%s): %v", round, i, s.spec, err)
			}
			if gotCT != wantCT || !bytes.Equal(got, want) {
				t.Fatalf("round %d, step %d (%s, %d bytes): %s %d bytes with a workspace, %s %d bytes without",
					round, i, s.spec, len(s.src), gotCT, len(got), wantCT, len(want))
			}
			if gotCT != block.CompNone {
				back, err := block.Decompress(gotCT, got, int64(len(s.src)))
				if err != nil || !bytes.Equal(back, s.src) {
					t.Fatalf("step %d: read back %d bytes, err %v", i, len(back), err)
				}
			}
		}
		if !kept(ws) {
			t.Fatal("the workspace kept nothing")
		}
		ws.Close() // the second round starts from an empty workspace
	}
}

// testNoise is n bytes that do not compress.
func testNoise(n int) []byte {
	noise := make([]byte, n)
	for i, x := 0, uint64(7); i < len(noise); i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		noise[i] = byte(x)
	}
	return noise
}

package fusefs

import (
	"context"
	"testing"
)

type countFile struct{ prefetches [][2]int64 }

func (f *countFile) ReadAt(ctx context.Context, p []byte, off int64) (int, error) { return len(p), nil }
func (f *countFile) SeekData(off int64) (int64, error)                            { return off, nil }
func (f *countFile) SeekHole(off int64) (int64, error)                            { return off, nil }
func (f *countFile) Prefetch(off, n int64)                                        { f.prefetches = append(f.prefetches, [2]int64{off, n}) }

// The kernel's readahead READs of a sequential reader arrive out of
// order; they still count as sequential. Reads scattered over a file do
// not.
func TestSequentialDetector(t *testing.T) {
	const k = 128 << 10
	tests := []struct {
		name     string
		offs     []int64
		prefetch bool
	}{
		{"in order", []int64{0, k, 2 * k, 3 * k, 4 * k, 5 * k}, true},
		{"out of order", []int64{0, 2 * k, k, 4 * k, 3 * k, 6 * k, 5 * k}, true},
		{"random", []int64{0, 900 << 20, 40 << 20, 300 << 20, 7 << 20, 2 << 30, 100 << 20}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &driver{opts: MountOptions{SeqDetector: 4}, ahead: 4 * k}
			f := &countFile{}
			h := &handle{f: f, nextOff: -1}
			for _, off := range tc.offs {
				d.noteRead(h, off, k)
			}
			if got := len(f.prefetches) > 0; got != tc.prefetch {
				t.Errorf("reads at %v: prefetches %v, want any: %v", tc.offs, f.prefetches, tc.prefetch)
			}
			for _, p := range f.prefetches {
				if p[1] <= 0 || p[0] < 0 {
					t.Errorf("bad prefetch range %v", p)
				}
			}
		})
	}
}

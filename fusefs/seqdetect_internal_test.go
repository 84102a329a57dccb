//go:build linux && !386 && !arm

package fusefs

import (
	"context"
	"fmt"
	"testing"
)

type countFile struct{ prefetches, dontNeeds [][2]int64 }

func (f *countFile) ReadAt(ctx context.Context, p []byte, off int64) (int, error) { return len(p), nil }
func (f *countFile) SeekData(off int64) (int64, error)                            { return off, nil }
func (f *countFile) SeekHole(off int64) (int64, error)                            { return off, nil }
func (f *countFile) Prefetch(off, n int64)                                        { f.prefetches = append(f.prefetches, [2]int64{off, n}) }
func (f *countFile) DontNeed(off, n int64)                                        { f.dontNeeds = append(f.dontNeeds, [2]int64{off, n}) }

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

// A sequential reader of a big file that is open once marks what it has
// gone past, up to seqWindow behind its furthest read, each byte once; a
// new run starts marking where it starts.
func TestDontNeedHints(t *testing.T) {
	const k = 128 << 10
	seq := func(from, n int64) []int64 {
		var offs []int64
		for i := range n {
			offs = append(offs, from+i*k)
		}
		return offs
	}
	tests := []struct {
		name  string
		big   bool
		opens int
		offs  []int64
		want  [][2]int64
	}{
		{"big file, one open", true, 1, seq(0, 24), [][2]int64{{0, 24*k - seqWindow}}},
		{"two runs", true, 1, append(seq(0, 16), seq(64*k, 16)...),
			[][2]int64{{0, 16*k - seqWindow}, {64 * k, 16*k - seqWindow}}},
		{"small file", false, 1, seq(0, 24), nil},
		{"open twice", true, 2, seq(0, 24), nil},
		{"random", true, 1, []int64{0, 900 << 20, 40 << 20, 300 << 20, 7 << 20, 2 << 30, 100 << 20}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &driver{opts: MountOptions{SeqDetector: 4}, ahead: 4 * k}
			d.opens.add(7, tc.opens)
			f := &countFile{}
			h := &handle{ino: 7, f: f, big: tc.big, nextOff: -1}
			for _, off := range tc.offs {
				d.noteRead(h, off, k)
			}
			// Merge adjacent ranges: how the hints are split does not matter.
			var got [][2]int64
			for _, r := range f.dontNeeds {
				if n := len(got); n > 0 && got[n-1][0]+got[n-1][1] == r[0] {
					got[n-1][1] += r[1]
				} else {
					got = append(got, r)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("DontNeed ranges %v, want %v", got, tc.want)
			}
		})
	}
}

package dedup

import (
	"bytes"
	"slices"
	"testing"
)

func TestIncompressibleCategorizer(t *testing.T) {
	text := bytes.Repeat([]byte("some compressible text, "), 1<<16)[:1<<20]
	random := randBytes(3, 1<<20)
	type op struct {
		data []byte
		hole int64
	}
	d := func(b []byte) op { return op{data: b} }
	h := func(n int64) op { return op{hole: n} }
	I, D := catIncompressible, catDefault
	for _, tc := range []struct {
		name      string
		fragments bool
		ops       []op
		want      []fragment
	}{
		{"text", false, []op{d(text)}, nil},
		{"random", false, []op{d(random)}, []fragment{{I, 1 << 20}}},
		// The whole file decides: 2 MiB text outweigh 1 MiB random.
		{"mostly text", false, []op{d(text), d(random), d(text)}, nil},
		{"mostly random", false, []op{d(random), d(text[:1000]), d(random)}, []fragment{{I, 2<<20 + 1000}}},
		{"fragments", true, []op{d(text), d(random), d(random), d(text)}, []fragment{{D, 1 << 20}, {I, 2 << 20}, {D, 1 << 20}}},
		{"fragments all text", true, []op{d(text), d(text)}, nil},
		// Sparse files: each data extent on its own, holes default.
		{"sparse", false, []op{h(5000), d(random), h(100), d(text)}, []fragment{{D, 5000}, {I, 1 << 20}, {D, 100}, {D, 1 << 20}}},
		{"sparse trailing hole", false, []op{d(random), h(7)}, []fragment{{I, 1 << 20}, {D, 7}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			io := DefaultIncompressible()
			io.Fragments = tc.fragments
			probe, err := newProbe(&io)
			if err != nil {
				t.Fatal(err)
			}
			fc := newFileCat(&io, probe)
			for _, o := range tc.ops {
				if o.hole > 0 {
					fc.hole(o.hole)
				} else {
					// Odd-sized writes: the blocks must not depend on them.
					for p := o.data; len(p) > 0; {
						n := min(len(p), 77777)
						fc.Write(p[:n])
						p = p[n:]
					}
				}
			}
			got, err := fc.result()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("fragments %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCategoryPlan(t *testing.T) {
	mk := func(size int64, frags ...fragment) *content {
		return &content{rep: &inode{frags: frags}, size: size}
	}
	// More incompressible data than default: listed first in
	// category_names, but streamed after the default category, whose name
	// sorts first.
	cs := []*content{
		mk(10),
		mk(0),
		mk(100, fragment{catIncompressible, 100}),
		mk(30, fragment{catDefault, 10}, fragment{catIncompressible, 20}),
	}
	streams, names := categoryPlan(cs)
	if !slices.Equal(streams, []category{catDefault, catIncompressible}) {
		t.Errorf("streams %v", streams)
	}
	if !slices.Equal(names, []category{catIncompressible, catDefault}) {
		t.Errorf("names %v", names)
	}
	streams, names = categoryPlan(cs[2:3])
	if !slices.Equal(streams, []category{catIncompressible}) || !slices.Equal(names, streams) {
		t.Errorf("only incompressible: streams %v names %v", streams, names)
	}
}

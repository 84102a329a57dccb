package dedup

import (
	"bytes"
	"slices"
	"strings"
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
		// claimed: a categorizer after this one in --categorize (hotness)
		// does not get the file.
		claimed bool
	}{
		{"text", false, []op{d(text)}, nil, false},
		{"random", false, []op{d(random)}, []fragment{{I, 1 << 20}}, true},
		// The whole file decides: 2 MiB text outweigh 1 MiB random.
		{"mostly text", false, []op{d(text), d(random), d(text)}, nil, false},
		{"mostly random", false, []op{d(random), d(text[:1000]), d(random)}, []fragment{{I, 2<<20 + 1000}}, true},
		{"fragments", true, []op{d(text), d(random), d(random), d(text)}, []fragment{{D, 1 << 20}, {I, 2 << 20}, {D, 1 << 20}}, true},
		// As with the reference, fragment mode claims every file it reads.
		{"fragments all text", true, []op{d(text), d(text)}, nil, true},
		// Sparse files: each data extent on its own, holes default.
		{"sparse", false, []op{h(5000), d(random), h(100), d(text)}, []fragment{{D, 5000}, {I, 1 << 20}, {D, 100}, {D, 1 << 20}}, true},
		{"sparse trailing hole", false, []op{d(random), h(7)}, []fragment{{I, 1 << 20}, {D, 7}}, true},
		{"sparse text", false, []op{h(10), d(text)}, []fragment{{D, 10}, {D, 1 << 20}}, true},
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
			got, claimed, err := fc.result()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("fragments %v, want %v", got, tc.want)
			}
			if claimed != tc.claimed {
				t.Errorf("claimed %v, want %v", claimed, tc.claimed)
			}
		})
	}
}

func TestCategoryPlan(t *testing.T) {
	mk := func(size int64, frags ...fragment) *content {
		return &content{rep: &inode{x: &inodeExtra{frags: frags}}, size: size}
	}
	var cz *categorizers
	incFirst := &Options{Categorize: []string{"incompressible", "hotness"}}
	hotFirst := &Options{Categorize: []string{"hotness", "incompressible"}}
	// More incompressible data than default: listed first in
	// category_names, but streamed after the default category, whose name
	// sorts first.
	cs := []*content{
		mk(10),
		mk(0),
		mk(100, fragment{catIncompressible, 100}),
		mk(30, fragment{catDefault, 10}, fragment{catIncompressible, 20}),
	}
	streams, names := categoryPlan(cs, incFirst.rank, cz.less)
	if !slices.Equal(streams, []category{catDefault, catIncompressible}) {
		t.Errorf("streams %v", streams)
	}
	if !slices.Equal(names, []catKind{kIncompressible, kDefault}) {
		t.Errorf("names %v", names)
	}
	streams, names = categoryPlan(cs[2:3], incFirst.rank, cz.less)
	if !slices.Equal(streams, []category{catIncompressible}) || !slices.Equal(names, []catKind{kIncompressible}) {
		t.Errorf("only incompressible: streams %v names %v", streams, names)
	}
	// Streams by name: <default>, hotness, incompressible. Names by
	// size, equal sizes in --categorize order after <default>.
	cs = []*content{
		mk(50),
		mk(50, fragment{catHotness, 50}),
		mk(50, fragment{catIncompressible, 50}),
	}
	for _, tc := range []struct {
		opt  *Options
		want []catKind
	}{
		{incFirst, []catKind{kDefault, kIncompressible, kHotness}},
		{hotFirst, []catKind{kDefault, kHotness, kIncompressible}},
	} {
		streams, names = categoryPlan(cs, tc.opt.rank, cz.less)
		if !slices.Equal(streams, []category{catDefault, catHotness, catIncompressible}) {
			t.Errorf("%v: streams %v", tc.opt.Categorize, streams)
		}
		if !slices.Equal(names, tc.want) {
			t.Errorf("%v: names %v, want %v", tc.opt.Categorize, names, tc.want)
		}
	}
}

func TestReadHotnessList(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
		err      string
	}{
		{"analysis file", "/usr/bin/ls\n/lib/libc.so.6\n", []string{"usr/bin/ls", "lib/libc.so.6"}, ""},
		{"relative, no final newline", "a/b\nc", []string{"a/b", "c"}, ""},
		// Only leading slashes go; nothing else is normalised, so these
		// match no file, as with the reference.
		{"not normalised", "//x\n./y\nz/\nw\r\n", []string{"x", "./y", "z/", "w\r"}, ""},
		{"empty lines skipped", "\n\na\n\n/\n", []string{"a"}, ""},
		{"empty", "", []string{}, ""},
		{"duplicate", "a\nb\n/a\n", nil, "duplicate path in hotness list: '/a'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadHotnessList(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCheckCategorize(t *testing.T) {
	for _, tc := range []struct {
		list []string
		err  string
	}{
		{nil, ""},
		{[]string{"hotness", "incompressible"}, ""},
		{[]string{"fits", "pcmaudio", "binary", "incompressible"}, ""},
		{[]string{"magic"}, `unknown categorizer "magic" (supported: binary, fits, hotness, incompressible, pcmaudio)`},
		{[]string{"hotness", "hotness"}, `categorizer "hotness" given twice`},
	} {
		o := &Options{Categorize: tc.list}
		err := o.checkCategorize()
		if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("%q: error %v, want %q", tc.list, err, tc.err)
		}
	}
}

package dedup

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// famFile describes a content for the family tests: its paths (the
// first is the representative's), size and the base digest it is a few
// bits away from.
type famFile struct {
	paths []string
	size  int64
	base  int
}

func famContents(files []famFile, seed uint64) []*content {
	r := rand.New(rand.NewPCG(seed, 2))
	bases := map[int][4]uint64{}
	var cs []*content
	for _, f := range files {
		d, ok := bases[f.base]
		if !ok {
			d = [4]uint64{r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64()}
			bases[f.base] = d
		}
		for range 4 {
			b := r.IntN(256)
			d[b/64] ^= 1 << (b % 64)
		}
		c := &content{size: f.size}
		for _, p := range f.paths {
			in := &inode{size: f.size, hasDigest: f.size > 0, simDigest: d, firstEntry: entryAt(p), content: c}
			c.inodes = append(c.inodes, in)
		}
		c.rep = c.inodes[0]
		cs = append(cs, c)
	}
	return cs
}

func famNames(fams [][]*content) [][]string {
	var out [][]string
	for _, f := range fams {
		var names []string
		for _, c := range f {
			names = append(names, c.rep.firstEntry.rel())
		}
		out = append(out, names)
	}
	return out
}

func TestFamilies(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []famFile
		want  [][]string
	}{
		{
			name: "releases of one project stay together",
			files: []famFile{
				{paths: []string{"redis-1.0/src/server.c"}, size: 9000, base: 1},
				{paths: []string{"redis-1.1/src/server.c"}, size: 9100, base: 1},
				{paths: []string{"redis-1.2/src/server.c"}, size: 9200, base: 1},
				{paths: []string{"redis-1.2/src/new.c"}, size: 500, base: 2},
			},
			want: [][]string{{"redis-1.0/src/server.c", "redis-1.1/src/server.c", "redis-1.2/src/server.c", "redis-1.2/src/new.c"}},
		},
		{
			name: "unrelated projects are split, in name order",
			files: []famFile{
				{paths: []string{"vue/2.0/dist/vue.js"}, size: 9000, base: 1},
				{paths: []string{"jquery/3.0/dist/jquery.js"}, size: 8000, base: 2},
				{paths: []string{"vue/2.1/dist/vue.js"}, size: 9100, base: 1},
				{paths: []string{"jquery/3.1/dist/jquery.js"}, size: 8100, base: 2},
				// A licence both have, nearly alike, is too small a share
				// to relate them.
				{paths: []string{"vue/2.0/LICENSE"}, size: 100, base: 3},
				{paths: []string{"jquery/3.0/LICENSE"}, size: 100, base: 3},
			},
			want: [][]string{
				{"jquery/3.0/dist/jquery.js", "jquery/3.1/dist/jquery.js", "jquery/3.0/LICENSE"},
				{"vue/2.0/dist/vue.js", "vue/2.1/dist/vue.js", "vue/2.0/LICENSE"},
			},
		},
		{
			name: "a shared leading directory is looked through",
			files: []famFile{
				{paths: []string{"cdn/b/1/x.js"}, size: 1000, base: 1},
				{paths: []string{"cdn/a/1/y.js"}, size: 1000, base: 2},
			},
			want: [][]string{{"cdn/a/1/y.js"}, {"cdn/b/1/x.js"}},
		},
		{
			name: "identical copies relate their directories",
			files: []famFile{
				{paths: []string{"dup/libc.so", "usr/lib/libc.so"}, size: 5000, base: 1},
				{paths: []string{"usr/lib/libm.so"}, size: 5000, base: 2},
			},
			want: [][]string{{"dup/libc.so", "usr/lib/libm.so"}},
		},
		{
			name: "a directory of copies only relates nothing",
			files: []famFile{
				{paths: []string{"a/x", "c/x"}, size: 5000, base: 1},
				{paths: []string{"b/y", "c/y"}, size: 5000, base: 2},
			},
			// c owns nothing, so it is no group: a vendored copy of two
			// projects does not make them one.
			want: [][]string{{"a/x"}, {"b/y"}},
		},
		{
			name: "a directory of copies of an unrelated one stays apart",
			files: []famFile{
				{paths: []string{"a/x"}, size: 5000, base: 1},
				{paths: []string{"b/y", "c/y"}, size: 5000, base: 2},
			},
			want: [][]string{{"a/x"}, {"b/y"}},
		},
		{
			name: "files at the top are a group of their own",
			files: []famFile{
				{paths: []string{"README"}, size: 100, base: 1},
				{paths: []string{"a/README"}, size: 100, base: 1},
				{paths: []string{"b/x"}, size: 100, base: 2},
			},
			want: [][]string{{"README", "a/README"}, {"b/x"}},
		},
		{
			name:  "one directory: nothing to split",
			files: []famFile{{paths: []string{"a/x"}, size: 10, base: 1}, {paths: []string{"a/y"}, size: 10, base: 2}},
			want:  [][]string{{"a/x", "a/y"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := famNames(families(famContents(tc.files, 1)))
			if !slices.EqualFunc(got, tc.want, slices.Equal[[]string]) {
				t.Errorf("families:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// The families, and so the order, must not depend on the order in which
// the scan found the files.
func TestFamiliesDeterministic(t *testing.T) {
	var files []famFile
	for lib := range 6 {
		for v := range 20 {
			files = append(files, famFile{
				paths: []string{strings.Repeat("l", lib+1) + "/" + string(rune('a'+v)) + "/main.js"},
				size:  int64(1000 + v), base: lib % 3, // three pairs of related libraries
			})
		}
	}
	want := famNames(families(famContents(files, 7)))
	if len(want) != 3 {
		t.Fatalf("%d families, want 3: %q", len(want), want)
	}
	for seed := range uint64(5) {
		cs := famContents(files, 7)
		r := rand.New(rand.NewPCG(seed, 3))
		r.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
		got := famNames(families(cs))
		for i := range got {
			slices.Sort(got[i])
		}
		w := famNames(families(famContents(files, 7)))
		for i := range w {
			slices.Sort(w[i])
		}
		if !slices.EqualFunc(got, w, slices.Equal[[]string]) {
			t.Fatalf("shuffle %d: families %q, want %q", seed, got, w)
		}
	}
}

// TestNilsimsaOrderFamilies: the digests of two projects' files lie on
// one line, alternating, so a single nearest-neighbour chain interleaves
// the projects. With families each project is chained on its own.
func TestNilsimsaOrderFamilies(t *testing.T) {
	var cs []*content
	for i := range 10 {
		var d [4]uint64
		for b := range 3 * i {
			d[b/64] |= 1 << (b % 64)
		}
		rel := "alpha/" + string(rune('a'+i)) + "/a.js"
		if i%2 == 1 {
			rel = "beta/" + string(rune('a'+i)) + "/b.js"
		}
		in := &inode{size: int64(1000 - i), hasDigest: true, simDigest: d, firstEntry: entryAt(rel)}
		c := &content{rep: in, inodes: []*inode{in}, size: in.size}
		in.content = c
		cs = append(cs, c)
	}
	top := func(order []*content) string {
		var s []byte
		for _, c := range order {
			s = append(s, c.rep.firstEntry.rel()[0])
		}
		return string(s)
	}
	for _, tc := range []struct {
		noFamilies bool
		want       string
		fams       int
	}{
		{false, "aaaaabbbbb", 2},
		{true, "ababababab", 1},
	} {
		opt := Options{Order: OrderNilsimsa, Nilsimsa: NilsimsaOptions{NoFamilies: tc.noFamilies}}
		got, starts := orderContents(cs, &opt, nil)
		if top(got) != tc.want || len(starts) != tc.fams {
			t.Errorf("NoFamilies=%v: order %s in families starting at %v, want %s in %d", tc.noFamilies, top(got), starts, tc.want, tc.fams)
		}
	}
}

// TestFamiliesDeep: a project alone at the top is split by its releases'
// relations one level down; related releases stay one family. A copy in
// another project does not stop the split.
func TestFamiliesDeep(t *testing.T) {
	files := []famFile{
		{paths: []string{"vue/1.0/vue.js"}, size: 9000, base: 1},
		{paths: []string{"vue/1.1/vue.js"}, size: 9100, base: 1},
		{paths: []string{"vue/3.0/vue.js"}, size: 7000, base: 2},
		{paths: []string{"vue/3.1/vue.js"}, size: 7100, base: 2},
		{paths: []string{"vue/3.1/LICENSE", "zz/LICENSE"}, size: 10, base: 4},
		{paths: []string{"zz/a.js"}, size: 100, base: 3},
	}
	want := [][]string{{"vue/1.0/vue.js", "vue/1.1/vue.js"}, {"vue/3.0/vue.js", "vue/3.1/vue.js", "vue/3.1/LICENSE"}, {"zz/a.js"}}
	var fams [][]*content
	for _, f := range familiesDeep(famContents(files, 1)) {
		fams = append(fams, f.cs)
	}
	if got := famNames(fams); !slices.EqualFunc(got, want, slices.Equal[[]string]) {
		t.Errorf("families:\n got %q\nwant %q", got, want)
	}
}

func TestFamilyBreaks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		starts []familyStart
		want   []int
	}{
		{"one family", []familyStart{{0, 500}}, nil},
		{"no families", nil, nil},
		{"every large family but the first", []familyStart{{0, 110}, {2, 40}, {3, 100}, {5, 5}}, []int{3}},
		{"small families pack on", []familyStart{{0, 100}, {1, 10}, {2, 10}}, nil},
		{"a small family that begins a large one", []familyStart{{0, 100}, {4, 150}, {6, 99}}, []int{4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := familyBreaks(tc.starts, 100)
			var idx []int
			for i := range 10 {
				if got[i] {
					idx = append(idx, i)
				}
			}
			if !slices.Equal(idx, tc.want) {
				t.Errorf("breaks at %v, want %v", idx, tc.want)
			}
		})
	}
}

// TestFamilySpans: the first part of a split project carries the
// project's size, so the project starts a block even when that part is
// small.
func TestFamilySpans(t *testing.T) {
	files := []famFile{
		{paths: []string{"a/1.0/x.js"}, size: 10, base: 1},
		{paths: []string{"a/2.0/y.js"}, size: 500, base: 2},
		{paths: []string{"b/1.0/z.js"}, size: 30, base: 3},
	}
	fams := familiesDeep(famContents(files, 1))
	var spans []int64
	for _, f := range fams {
		spans = append(spans, f.span)
	}
	if want := []int64{510, 500, 30}; !slices.Equal(spans, want) {
		t.Errorf("spans %v, want %v", spans, want)
	}
}

func TestFamilyCopies(t *testing.T) {
	files := []famFile{
		{paths: []string{"bootstrap/3.0/js/bootstrap.js"}, size: 30000, base: 1},
		{paths: []string{"bootstrap/3.1/js/bootstrap.js"}, size: 31000, base: 1},
		// jQuery as bootstrap ships it, and in jquery's own releases.
		{paths: []string{"bootstrap/3.1/vendor/jquery.min.js", "jquery/1.11/jquery.min.js", "jquery/1.11/jquery-latest.min.js"}, size: 300, base: 2},
		{paths: []string{"jquery/1.12/jquery.min.js"}, size: 310, base: 2},
		{paths: []string{"jquery/1.12/src.js"}, size: 30000, base: 3},
		// A font bootstrap ships and jquery has no other version of: jquery
		// gets no copy.
		{paths: []string{"bootstrap/3.0/fonts/glyph.woff", "jquery/1.12/glyph.woff"}, size: 5000, base: 6},
		// A small file both ship: jquery gets a copy, versions or not.
		{paths: []string{"bootstrap/3.0/.npmignore", "jquery/1.12/.npmignore"}, size: 30, base: 7},
		// A file the small family shares: it gets no copy.
		{paths: []string{"jquery/1.12/LICENSE", "small/LICENSE"}, size: 10, base: 4},
		{paths: []string{"small/x.js"}, size: 100, base: 5},
	}
	cs := famContents(files, 1)
	copies := familyCopies(cs, 500)
	if len(copies) != 2 {
		t.Fatalf("%d copies, want 2", len(copies))
	}
	if small := copies[1]; small.copyOf() != cs[6] || small.rep.firstEntry.rel() != "jquery/1.12/.npmignore" {
		t.Errorf("second copy is %s of %p, want jquery/1.12/.npmignore of %p", small.rep.firstEntry.rel(), small.copyOf(), cs[6])
	}
	g, orig := copies[0], cs[2]
	if g.copyOf() != orig || g.size != orig.size || g.rep.simDigest != orig.rep.simDigest {
		t.Errorf("copy of %s: copyOf %p (want %p), size %d", orig.rep.firstEntry.rel(), g.copyOf(), orig, g.size)
	}
	var got []string
	for _, in := range g.inodes {
		got = append(got, in.firstEntry.rel())
		if in.content != g {
			t.Errorf("copy's inode %s belongs to %p", in.firstEntry.rel(), in.content)
		}
	}
	if want := []string{"jquery/1.11/jquery.min.js", "jquery/1.11/jquery-latest.min.js"}; !slices.Equal(got, want) {
		t.Errorf("copy's files %q, want %q", got, want)
	}
	// The image's inodes stay with the original.
	for _, in := range orig.inodes {
		if in.content != orig {
			t.Errorf("%s moved to %p", in.firstEntry.rel(), in.content)
		}
	}
	if len(orig.inodes) != 3 {
		t.Errorf("original has %d files, want 3", len(orig.inodes))
	}
	// Ordered with its copy, the jquery family has the contents a build
	// of jquery alone would have.
	fams := families(append(cs, copies...))
	if want := [][]string{
		{"bootstrap/3.0/js/bootstrap.js", "bootstrap/3.1/js/bootstrap.js", "bootstrap/3.1/vendor/jquery.min.js", "bootstrap/3.0/fonts/glyph.woff", "bootstrap/3.0/.npmignore"},
		{"jquery/1.12/jquery.min.js", "jquery/1.12/src.js", "jquery/1.12/LICENSE", "jquery/1.11/jquery.min.js", "jquery/1.12/.npmignore"},
		{"small/x.js"},
	}; !slices.EqualFunc(famNames(fams), want, slices.Equal[[]string]) {
		t.Errorf("families:\n got %q\nwant %q", famNames(fams), want)
	}
	// Below a block, no family gets copies.
	if n := len(familyCopies(famContents(files, 1), 200000)); n != 0 {
		t.Errorf("%d copies for families below the block size", n)
	}
}

// TestFamilyCopiesDeep: a large family split one level down gets copies
// between its parts too, as its shard would.
func TestFamilyCopiesDeep(t *testing.T) {
	files := []famFile{
		{paths: []string{"vue/1.0/vue.js"}, size: 2000, base: 1},
		{paths: []string{"vue/1.1/vue.js"}, size: 2010, base: 1},
		{paths: []string{"vue/3.0/vue.js"}, size: 1500, base: 2},
		{paths: []string{"vue/3.1/vue.js"}, size: 1510, base: 2},
		{paths: []string{"vue/1.1/index.js", "vue/3.1/index.js"}, size: 50, base: 3},
		{paths: []string{"vue/3.1/compiler.js", "other/compiler.js"}, size: 300, base: 5},
		{paths: []string{"other/a.js"}, size: 4000, base: 4},
		// Other versions of the shared files, in the families that get
		// the copies.
		{paths: []string{"other/old/compiler.js"}, size: 290, base: 5},
		{paths: []string{"vue/3.0/index.js"}, size: 48, base: 3},
	}
	cs := famContents(files, 1)
	var got [][]string
	for _, g := range familyCopies(cs, 500) {
		var p []string
		for _, in := range g.inodes {
			p = append(p, in.firstEntry.rel())
		}
		got = append(got, p)
		if g.copyOf() == nil || g.copyOf().copyOf() != nil {
			t.Errorf("copy %q is not of an original", p)
		}
	}
	// other/compiler.js's content is first found in vue; vue's 3.x line
	// gets a copy of the index.js its 1.x line has.
	want := [][]string{{"other/compiler.js"}, {"vue/3.1/index.js"}}
	if !slices.EqualFunc(got, want, slices.Equal[[]string]) {
		t.Errorf("copies %q, want %q", got, want)
	}
}

func TestAdoptCopies(t *testing.T) {
	c := &content{size: 10, chunks: []pchunk{{block: 0, off: 0, size: 4}, {block: 0, off: 8, size: 6}}}
	fewer := &content{size: 10, x: &contentExtra{copyOf: c}, chunks: []pchunk{{block: 3, off: 0, size: 10}}}
	more := &content{size: 10, x: &contentExtra{copyOf: c}, chunks: []pchunk{{block: 4, off: 0, size: 2}, {block: 4, off: 5, size: 3}, {block: 4, off: 9, size: 5}}}
	failed := &content{size: 0, x: &contentExtra{copyOf: c}} // a read error emptied it
	adoptCopies([]*content{more, failed, fewer})
	if !slices.Equal(c.chunks, fewer.chunks) {
		t.Errorf("chunks %+v, want the copy's %+v", c.chunks, fewer.chunks)
	}
}

// TestFamilyCopiesBounded: two families that share more than a block of
// identical files, too little of their bytes to be joined, get copies of
// no more than a block (or a 32nd of the family) between them.
func TestFamilyCopiesBounded(t *testing.T) {
	var files []famFile
	for i := range 30 {
		files = append(files,
			famFile{paths: []string{fmt.Sprintf("a/f%d.js", i)}, size: 1000, base: 10 + i},
			famFile{paths: []string{fmt.Sprintf("b/g%d.js", i)}, size: 1000, base: 100 + i})
	}
	for i := range 5 {
		files = append(files, famFile{paths: []string{fmt.Sprintf("a/s%d.js", i), fmt.Sprintf("b/s%d.js", i)}, size: 1000, base: 200 + i},
			famFile{paths: []string{fmt.Sprintf("b/old/s%d.js", i)}, size: 1000, base: 200 + i})
	}
	cs := famContents(files, 1)
	if n := len(families(cs)); n != 2 {
		t.Fatalf("%d families, want 2", n)
	}
	copies := familyCopies(cs, 2000)
	var got []string
	for _, g := range copies {
		got = append(got, g.rep.firstEntry.rel())
	}
	if want := []string{"b/s0.js", "b/s1.js"}; !slices.Equal(got, want) {
		t.Errorf("copies %q, want %q (a block's worth)", got, want)
	}
}

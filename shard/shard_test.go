package shard

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// f and d make listing entries.
func f(p string, size int64) Entry { return Entry{Path: p, Size: size} }
func d(p string) Entry             { return Entry{Path: p, Dir: true} }

func TestPlan(t *testing.T) {
	tests := []struct {
		name    string
		entries []Entry
		count   int
		depth   int
		want    [][]string // units of each shard
		bytes   []int64
	}{
		{
			name:    "one shard holds everything",
			entries: []Entry{d("a"), f("a/x", 5), f("b", 3), d("e")},
			count:   1, depth: 1,
			want:  [][]string{{"a", "b", "e"}},
			bytes: []int64{8},
		},
		{
			name: "largest first into the least loaded",
			entries: []Entry{d("a"), f("a/1", 40), d("b"), f("b/1", 30), d("c"), f("c/1", 20),
				f("top", 10), d("empty")},
			count: 2, depth: 1,
			// a(40)->0, b(30)->1, c(20)->1 (30<40), top(10)->0 (40<50), empty(0)->0 (50=50, lower index).
			want:  [][]string{{"a", "empty", "top"}, {"b", "c"}},
			bytes: []int64{50, 50},
		},
		{
			name: "a directory above the even share is cut one level deeper",
			entries: []Entry{d("big"), d("big/v1"), f("big/v1/f", 30), d("big/v2"), f("big/v2/f", 30),
				f("big/README", 4), d("small"), f("small/f", 20)},
			count: 2, depth: 1,
			// total 84, share 42: big (64) is cut; v1(30)->0, v2(30)->1, small(20)->1? no:
			// loads 30,30 -> small to 0 (tie, lower index), README(4) to 1.
			want:  [][]string{{"big/v1", "small"}, {"big/README", "big/v2"}},
			bytes: []int64{50, 34},
		},
		{
			name:    "cut recursively until the units fit",
			entries: []Entry{d("a"), d("a/b"), f("a/b/1", 10), f("a/b/2", 10), f("a/b/3", 10), f("c", 2)},
			count:   3, depth: 1,
			// total 32, share 10.67: a (30) and a/b (30) are cut, its files are units.
			want:  [][]string{{"a/b/1", "c"}, {"a/b/2"}, {"a/b/3"}},
			bytes: []int64{12, 10, 10},
		},
		{
			name:    "a file is never cut",
			entries: []Entry{f("huge", 100), f("tiny", 1)},
			count:   2, depth: 1,
			want:  [][]string{{"huge"}, {"tiny"}},
			bytes: []int64{100, 1},
		},
		{
			name: "depth 2: files and empty directories above the cut are units",
			entries: []Entry{d("a"), d("a/x"), f("a/x/1", 5), d("a/y"), f("a/y/1", 5), f("a/loose", 1),
				d("a/empty"), d("e"), f("r", 2)},
			count: 2, depth: 2,
			// units: a/x(5) a/y(5) r(2) a/loose(1) a/empty(0) e(0).
			want:  [][]string{{"a/x", "r"}, {"a/empty", "a/loose", "a/y", "e"}},
			bytes: []int64{7, 6},
		},
		{
			name:    "more shards than units leaves shards empty",
			entries: []Entry{d("a"), f("a/1", 1), f("b", 5)},
			count:   3, depth: 1,
			want:  [][]string{{"b"}, {"a"}, {}},
			bytes: []int64{5, 1, 0},
		},
		{
			name: "versions are cut by relative path",
			entries: []Entry{
				f("pkg/1.0/src/a", 10), f("pkg/1.0/src/b", 10), f("pkg/1.0/doc/x", 5), f("pkg/1.0/README", 1),
				f("pkg/1.1/src/a", 10), f("pkg/1.1/src/b", 10), f("pkg/1.1/doc/x", 5), f("pkg/1.1/README", 1),
				f("pkg/2.0/src/a", 10), f("pkg/2.0/src/b", 10), f("pkg/2.0/doc/x", 5), f("pkg/2.0/README", 1),
				f("other/big", 30), f("other/small", 5)},
			count: 2, depth: 1,
			// total 113, share 56.5: pkg (78) is cut across its versions
			// into README (3), doc (15) and src (60), and src again into
			// src/a and src/b (30 each), every version's together.
			// other(35)->0, src/a->1, src/b->1, doc->0, README->0.
			want: [][]string{{"other", "pkg/1.0/README", "pkg/1.0/doc", "pkg/1.1/README", "pkg/1.1/doc", "pkg/2.0/README", "pkg/2.0/doc"},
				{"pkg/1.0/src/a", "pkg/1.0/src/b", "pkg/1.1/src/a", "pkg/1.1/src/b", "pkg/2.0/src/a", "pkg/2.0/src/b"}},
			bytes: []int64{53, 60},
		},
		{
			name: "versions of big files are cut apart",
			entries: []Entry{f("logs/d1/app", 10), f("logs/d1/db", 10), f("logs/d2/app", 10), f("logs/d2/db", 10),
				f("logs/d3/app", 10), f("logs/d3/db", 10), f("logs/d4/app", 10), f("logs/d4/db", 10)},
			count: 4, depth: 1,
			// total 80, share 20: across the days, each file name would
			// be a unit of 40 that cannot be cut; so the days are units.
			want:  [][]string{{"logs/d1"}, {"logs/d2"}, {"logs/d3"}, {"logs/d4"}},
			bytes: []int64{20, 20, 20, 20},
		},
		{
			name:    "directories whose entries differ are not versions",
			entries: []Entry{f("a/x/1", 30), f("a/y/2", 30), f("b/z/3", 10), f("b/w/4", 10)},
			count:   2, depth: 1,
			// total 80, share 40: a (60) is cut, its entries apart:
			// a/x(30)->0, a/y(30)->1, b(20)->0.
			want:  [][]string{{"a/x", "b"}, {"a/y"}},
			bytes: []int64{50, 30},
		},
		{
			name:    "parents are implied",
			entries: []Entry{f("p/q/1", 4), f("p/q/2", 4), f("z", 1)},
			count:   2, depth: 1,
			// p (8) is above 4.5: cut; p/q (8) too: its files are units.
			want:  [][]string{{"p/q/1", "z"}, {"p/q/2"}},
			bytes: []int64{5, 4},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(tc.entries, tc.count, tc.depth)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Shards) != tc.count {
				t.Fatalf("%d shards, want %d", len(p.Shards), tc.count)
			}
			for k, s := range p.Shards {
				if s.Index != k || !slices.Equal(s.Paths, tc.want[k]) || s.Bytes != tc.bytes[k] {
					t.Errorf("shard %d: %d %q %d bytes, want %q %d bytes", k, s.Index, s.Paths, s.Bytes, tc.want[k], tc.bytes[k])
				}
			}
			checkCover(t, p, tc.entries)
		})
	}
}

func TestPlanHolds(t *testing.T) {
	p, err := New([]Entry{d("big"), d("big/v1"), f("big/v1/f", 30), d("big/v2"), f("big/v2/f", 30),
		f("big/README", 4), d("small"), f("small/f", 20)}, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path  string
		owner int
		holds []bool
	}{
		{"big", -1, []bool{true, true}},
		{"big/v1", 0, []bool{true, false}},
		{"big/v1/f", 0, []bool{true, false}},
		{"big/v2/f", 1, []bool{false, true}},
		{"big/README", 1, []bool{false, true}},
		{"small/f", 0, []bool{true, false}},
		{"missing", -1, []bool{false, false}},
		{"big/missing", -1, []bool{false, false}},
	} {
		if o := p.Owner(tc.path); o != tc.owner {
			t.Errorf("Owner(%q) = %d, want %d", tc.path, o, tc.owner)
		}
		for k, want := range tc.holds {
			if got := p.Holds(k, tc.path); got != want {
				t.Errorf("Holds(%d, %q) = %v, want %v", k, tc.path, got, want)
			}
		}
	}
}

func TestPlanErrors(t *testing.T) {
	for _, tc := range []struct {
		entries      []Entry
		count, depth int
		want         string
	}{
		{[]Entry{f("a", 1)}, 0, 1, "at least one"},
		{[]Entry{f("a", 1)}, 1, 0, "depth 0"},
		{[]Entry{f("a", 1), f("a", 1)}, 2, 1, `"a" is listed twice`},
		{[]Entry{f("a", 1), f("a/b", 1)}, 2, 1, `"a" is not a directory`},
		{[]Entry{f("/a", 1)}, 2, 1, "not a clean relative path"},
		{[]Entry{f("a/../b", 1)}, 2, 1, "not a clean relative path"},
		{[]Entry{f("a/", 1)}, 2, 1, "not a clean relative path"},
		{[]Entry{f("", 1)}, 2, 1, "empty path"},
		{[]Entry{f("a", -1)}, 2, 1, "negative size"},
	} {
		_, err := New(tc.entries, tc.count, tc.depth)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%v, %d, %d) = %v, want an error with %q", tc.entries, tc.count, tc.depth, err, tc.want)
		}
	}
}

func TestDigest(t *testing.T) {
	base := []Entry{d("a"), f("a/1", 3), f("b", 2)}
	p0, err := New(base, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckDigest(p0.Digest); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		entries      []Entry
		count, depth int
	}{
		{"a size changed", []Entry{d("a"), f("a/1", 4), f("b", 2)}, 2, 1},
		{"an entry added", []Entry{d("a"), f("a/1", 3), f("b", 2), f("c", 0)}, 2, 1},
		{"a file became a directory", []Entry{d("a"), f("a/1", 3), d("b")}, 2, 1},
		{"another count", base, 3, 1},
		{"another depth", base, 2, 2},
	} {
		p, err := New(tc.entries, tc.count, tc.depth)
		if err != nil {
			t.Fatal(err)
		}
		if p.Digest == p0.Digest {
			t.Errorf("%s: same digest %s", tc.name, p.Digest)
		}
	}
}

func TestRecord(t *testing.T) {
	dig := "sha256:" + strings.Repeat("ab", 32)
	r := Record{Index: 1, Count: 4, Digest: dig}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"mkdwarfs", "--shard=1/4", "--shard-digest=" + dig}},
		{[]string{"mkdwarfs", "-i", "x", "--shard=1/4"}, []string{"mkdwarfs", "-i", "x", "--shard=1/4", "--shard-digest=" + dig}},
		{[]string{"mkdwarfs", "--shard", "1/4"}, []string{"mkdwarfs", "--shard", "1/4", "--shard=1/4", "--shard-digest=" + dig}},
	} {
		got := r.AddTo(tc.args)
		if !slices.Equal(got, tc.want) {
			t.Errorf("AddTo(%q) = %q, want %q", tc.args, got, tc.want)
		}
		if back, ok := FromArgs(got); !ok || back != r {
			t.Errorf("FromArgs(%q) = %v, %v", got, back, ok)
		}
	}
	for _, args := range [][]string{
		{"mkdwarfs", "--shard=1/4"},
		{"mkdwarfs", "--shard-digest=" + dig},
		{"mkdwarfs", "--shard=4/4", "--shard-digest=" + dig},
		{"mkdwarfs", "--shard=1/4", "--shard-digest=sha256:xyz"},
		{"mkdwarfs", "--", "--shard=1/4", "--shard-digest=" + dig},
		{"--shard=1/4", "--shard-digest=" + dig}, // args[0] is the program
	} {
		if r, ok := FromArgs(args); ok {
			t.Errorf("FromArgs(%q) = %v, want none", args, r)
		}
	}
	build := r.AddTo(nil)
	other := Record{Index: 0, Count: 4, Digest: dig}.AddTo(nil)
	merge := []string{"mkdwarfs", "--merge", "a", "b"}
	for _, tc := range []struct {
		name string
		hist [][]string
		ok   bool
	}{
		{"a shard", [][]string{build}, true},
		{"no history", nil, false},
		{"a later entry", [][]string{build, merge}, false},
		{"a merge of shards without its own entry", [][]string{other, build}, false},
		{"older entries without shards", [][]string{merge, build}, true},
	} {
		got, ok := FromHistory(tc.hist)
		if ok != tc.ok || (ok && got != r) {
			t.Errorf("%s: FromHistory = %v, %v; want ok %v", tc.name, got, ok, tc.ok)
		}
	}
	for _, tc := range []struct {
		s    string
		k, n int
		ok   bool
	}{
		{"0/1", 0, 1, true}, {"3/4", 3, 4, true}, {"4/4", 0, 0, false}, {"-1/4", 0, 0, false},
		{"0/0", 0, 0, false}, {"1", 0, 0, false}, {"a/b", 0, 0, false}, {"+1/4", 0, 0, false},
	} {
		k, n, err := ParseSpec(tc.s)
		if (err == nil) != tc.ok || k != tc.k || n != tc.n {
			t.Errorf("ParseSpec(%q) = %d, %d, %v", tc.s, k, n, err)
		}
	}
}

// checkCover checks that every entry is held by its owner only, or (a
// skeleton directory) by every shard with a unit below it and by at least
// one; and that the shards' bytes add up.
func checkCover(t *testing.T, p *Plan, entries []Entry) {
	t.Helper()
	var total int64
	all := map[string]bool{}
	for _, e := range entries {
		total += e.Size
		all[e.Path] = true
		for q := parent(e.Path); q != ""; q = parent(q) {
			all[q] = true
		}
	}
	var sum int64
	for _, s := range p.Shards {
		sum += s.Bytes
	}
	if sum != total || p.Bytes != total {
		t.Errorf("shards hold %d bytes, plan %d, listing %d", sum, p.Bytes, total)
	}
	for path := range all {
		owner := p.Owner(path)
		holders := 0
		for k := range p.Count {
			if p.Holds(k, path) {
				holders++
				if owner >= 0 && k != owner {
					t.Errorf("%q: held by %d, owned by %d", path, k, owner)
				}
			}
		}
		if holders == 0 || (owner >= 0 && holders != 1) {
			t.Errorf("%q: held by %d shards, owner %d", path, holders, owner)
		}
		if owner < 0 {
			// A skeleton directory: each shard holding it holds something below it.
			for k := range p.Count {
				if !p.Holds(k, path) {
					continue
				}
				below := false
				for q := range all {
					below = below || (strings.HasPrefix(q, path+"/") && p.Owner(q) == k)
				}
				if !below {
					t.Errorf("%q: shard %d holds it but nothing below it", path, k)
				}
			}
		}
	}
}

// listingFrom makes a random listing from fuzz bytes: each pair of bytes
// adds an entry below one of the directories made so far.
func listingFrom(data []byte) []Entry {
	dirs := []string{""}
	var out []Entry
	seen := map[string]bool{}
	for i := 0; i+1 < len(data); i += 2 {
		parent := dirs[int(data[i])%len(dirs)]
		b := data[i+1]
		name := string(rune('a' + b%7))
		p := name
		if parent != "" {
			p = parent + "/" + name
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		if b&0x80 != 0 {
			out = append(out, d(p))
			dirs = append(dirs, p)
		} else {
			out = append(out, f(p, int64(b>>3)*int64(b>>3)))
		}
	}
	return out
}

func FuzzPlan(f *testing.F) {
	f.Add([]byte{0, 0x81, 1, 3, 1, 0x90, 0, 0x22, 2, 0x7f}, uint8(3), uint8(1), uint64(1))
	f.Add([]byte{0, 0x80, 1, 0x81, 2, 0x82, 3, 5, 3, 6, 3, 7, 0, 0x41}, uint8(2), uint8(2), uint64(7))
	f.Fuzz(func(t *testing.T, data []byte, count, depth uint8, seed uint64) {
		entries := listingFrom(data)
		n, dp := int(count%6)+1, int(depth%4)+1
		p, err := New(entries, n, dp)
		if err != nil {
			t.Fatal(err)
		}
		checkCover(t, p, entries)
		// Any order of the listing gives the same plan.
		shuffled := slices.Clone(entries)
		r := rand.New(rand.NewPCG(seed, uint64(len(data))))
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		q, err := New(shuffled, n, dp)
		if err != nil {
			t.Fatal(err)
		}
		if q.Digest != p.Digest || !reflect.DeepEqual(q.Shards, p.Shards) {
			t.Errorf("a shuffled listing planned %v %s, want %v %s", q.Shards, q.Digest, p.Shards, p.Digest)
		}
	})
}

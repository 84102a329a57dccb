package dedup

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// digestContents makes n contents in `families` groups whose digests
// differ from their family's base in a few bits.
func digestContents(n, families int, seed uint64) []*content {
	r := rand.New(rand.NewPCG(seed, 1))
	bases := make([][4]uint64, families)
	for i := range bases {
		bases[i] = [4]uint64{r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64()}
	}
	var cs []*content
	for i := range n {
		d := bases[i%families]
		for range 3 {
			b := r.IntN(256)
			d[b/64] ^= 1 << (b % 64)
		}
		in := &inode{size: int64(1000 + r.IntN(100)), hasDigest: true, simDigest: d,
			firstEntry: entryAt(fmt.Sprintf("f%04d-fam%d", i, i%families))}
		c := &content{rep: in, inodes: []*inode{in}, size: in.size}
		in.content = c
		cs = append(cs, c)
	}
	return cs
}

func digestFamily(c *content) string { return c.rep.firstEntry.rel()[6:] }

func TestNilsimsaOrderOptions(t *testing.T) {
	cs := digestContents(400, 5, 1)
	for _, tc := range []struct {
		children, clusterSize int
	}{
		{0, 0},      // defaults: one level, 5 clusters
		{1, 100000}, // one cluster, one nearest neighbour chain
		{2, 16},     // deep tree of small clusters
		{3, 50},
	} {
		t.Run(fmt.Sprintf("max-children=%d:max-cluster-size=%d", tc.children, tc.clusterSize), func(t *testing.T) {
			no := NilsimsaOptions{MaxChildren: tc.children, MaxClusterSize: tc.clusterSize}
			got := nilsimsaOrder(cs, no, 1)
			if len(got) != len(cs) {
				t.Fatalf("%d contents out of %d", len(got), len(cs))
			}
			seen := map[*content]bool{}
			for _, c := range got {
				if seen[c] {
					t.Fatalf("%s twice", c.rep.firstEntry.rel())
				}
				seen[c] = true
			}
			// Neighbours must be far more alike than in the size order
			// the ordering starts from (random digests: about 128 bits
			// apart; family members: at most 6).
			total := func(cs []*content) (d int) {
				for i := 1; i < len(cs); i++ {
					d += hamming(&cs[i-1].rep.simDigest, &cs[i].rep.simDigest)
				}
				return d
			}
			base := slices.Clone(cs)
			slices.SortStableFunc(base, func(a, b *content) int { return int(b.size - a.size) })
			if g, b := total(got), total(base); g*5 > b {
				t.Errorf("total neighbour distance %d, size order %d", g, b)
			}
			if tc.children == 1 {
				// One nearest neighbour chain leaves a family only when it
				// is used up.
				changes := 0
				for i := 1; i < len(got); i++ {
					if digestFamily(got[i]) != digestFamily(got[i-1]) {
						changes++
					}
				}
				if changes != 4 {
					t.Errorf("%d family changes, want 4", changes)
				}
			}
			// The number of workers does not change the result.
			for _, w := range []int{2, 4} {
				if again := nilsimsaOrder(cs, no, w); !slices.Equal(again, got) {
					t.Fatalf("order with %d workers differs", w)
				}
			}
		})
	}
}

// TestNilsimsaClusterLimits checks the tree the options shape: no node
// has more than max-children children, and a leaf is larger than
// max-cluster-size only when the distance limit is exhausted.
func TestNilsimsaClusterLimits(t *testing.T) {
	cs := digestContents(300, 7, 2)
	for _, tc := range []struct{ children, clusterSize int }{{1, 1 << 20}, {2, 8}, {4, 20}, {16384, 16384}} {
		o := &nilsimsaOrderer{opt: NilsimsaOptions{MaxChildren: tc.children, MaxClusterSize: tc.clusterSize},
			base: func(a, b *content) int { return 0 }, sem: make(chan struct{})}
		root := &clusterNode{items: slices.Clone(cs)}
		o.cluster(root, 128)
		var leaves, items int
		var walk func(n *clusterNode, dist int)
		walk = func(n *clusterNode, dist int) {
			if n.children == nil {
				leaves++
				items += len(n.items)
				if len(n.items) > tc.clusterSize && dist > 1 {
					t.Errorf("%+v: leaf of %d items at distance %d", tc, len(n.items), dist)
				}
				return
			}
			if len(n.children) > tc.children {
				t.Errorf("%+v: %d children", tc, len(n.children))
			}
			for _, ch := range n.children {
				walk(ch, dist/2)
			}
		}
		walk(root, 128*2)
		if items != len(cs) {
			t.Errorf("%+v: %d items in leaves, want %d", tc, items, len(cs))
		}
		if tc.children == 1 && tc.clusterSize >= len(cs) && leaves != 1 {
			t.Errorf("max-children=1 made %d leaves", leaves)
		}
		if tc.children > 1 && leaves < 2 {
			t.Errorf("%+v: %d leaves for 7 families", tc, leaves)
		}
	}
}

// TestNilsimsaUnhashedFirst: contents without a digest (larger than
// --max-similarity-size) come first, largest first, as in the reference.
func TestNilsimsaUnhashedFirst(t *testing.T) {
	cs := digestContents(20, 2, 3)
	for i, size := range []int64{5000, 90000, 7000} {
		in := &inode{size: size, firstEntry: entryAt(fmt.Sprintf("big%d", i))}
		cs = append(cs, &content{rep: in, inodes: []*inode{in}, size: size})
	}
	got := nilsimsaOrder(cs, NilsimsaOptions{}, 1)
	var first []string
	for _, c := range got[:3] {
		first = append(first, c.rep.firstEntry.rel())
	}
	if want := []string{"big1", "big2", "big0"}; !slices.Equal(first, want) {
		t.Errorf("first: %v, want %v", first, want)
	}
}

// entryAt returns an entry at path rel (slash separated) below a new root.
func entryAt(rel string) *entry {
	e := &entry{top: true}
	for _, name := range strings.Split(rel, "/") {
		e = &entry{name: name, parent: e}
	}
	return e
}

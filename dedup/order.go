package dedup

import (
	"cmp"
	"math"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
)

// groupContents merges inodes with equal size and hash into contents, in
// first-seen order of files.
func groupContents(files []*inode, hashOn bool) []*content {
	type key struct {
		size int64
		hash string
	}
	var out []*content
	m := map[key]*content{}
	for _, f := range files {
		k := key{f.size, f.hash}
		dedupable := hashOn && (f.hash != "" || f.size == 0)
		if c, ok := m[k]; ok && dedupable {
			c.inodes = append(c.inodes, f)
			f.content = c
			continue
		}
		c := &content{rep: f, inodes: []*inode{f}, size: f.size}
		f.content = c
		if dedupable {
			m[k] = c
		}
		out = append(out, c)
	}
	return out
}

// CleanListPath turns a path from an input list or an explicit order file
// into the slash separated form relative to the input ("" for the input
// itself); a leading / is allowed and dropped, as in the reference.
func CleanListPath(p string) string {
	rel := path.Clean(strings.TrimPrefix(p, "./"))
	rel = strings.TrimLeft(rel, "/")
	if rel == "." {
		return ""
	}
	return rel
}

// orderContents sorts unique contents for the block stream. listPos, if
// not nil, is the position of each --input-list path: with OrderNone the
// contents keep the list's order. It also returns where each family of
// the nilsimsa order starts in the result (one for a single family, nil
// for the other orders).
func orderContents(cs []*content, opt *Options, listPos map[string]int) ([]*content, []familyStart) {
	out := append([]*content(nil), cs...)
	path := func(c *content) string { return c.rep.firstEntry.rel() }
	switch opt.Order {
	case OrderNone:
		if listPos != nil {
			sortByPosition(out, listPos)
		}
	case OrderPath:
		sort.SliceStable(out, func(i, j int) bool { return compareRel(out[i].rep.firstEntry, out[j].rep.firstEntry) < 0 })
	case OrderRevPath:
		rev := func(s string) string {
			b := []byte(s)
			for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
				b[i], b[j] = b[j], b[i]
			}
			return string(b)
		}
		keys := make(map[*content]string, len(out))
		for _, c := range out {
			keys[c] = rev(path(c))
		}
		sort.SliceStable(out, func(i, j int) bool { return keys[out[i]] < keys[out[j]] })
	case OrderSimilarity:
		sort.SliceStable(out, func(i, j int) bool {
			a, b := out[i], out[j]
			if a.rep.simHash != b.rep.simHash {
				return a.rep.simHash < b.rep.simHash
			}
			if a.size != b.size {
				return a.size > b.size
			}
			return path(a) < path(b)
		})
	case OrderNilsimsa:
		out = out[:0]
		fams := []family{{cs: cs}}
		if !opt.Nilsimsa.NoFamilies {
			fams = familiesDeep(cs)
		}
		starts := make([]familyStart, 0, len(fams))
		for _, f := range fams {
			starts = append(starts, familyStart{at: len(out), span: f.span})
			out = append(out, nilsimsaOrder(f.cs, opt.Nilsimsa, max(opt.OrderWorkers, 1))...)
		}
		return out, starts
	case OrderExplicit:
		pos := make(map[string]int, len(opt.ExplicitOrder))
		for i, p := range opt.ExplicitOrder {
			p = CleanListPath(p)
			if _, dup := pos[p]; !dup {
				pos[p] = i
			}
		}
		sortByPosition(out, pos)
	}
	return out, nil
}

// familyStart is where a family starts in an order, and the size of the
// largest family that starts there (see family).
type familyStart struct {
	at   int
	span int64
}

// sortByPosition orders contents by the smallest position any of their
// files has in pos; contents without one follow in their previous order.
func sortByPosition(cs []*content, pos map[string]int) {
	key := make(map[*content]int, len(cs))
	for _, c := range cs {
		k := math.MaxInt
		for _, in := range c.inodes {
			if p, ok := pos[in.firstEntry.rel()]; ok && p < k {
				k = p
			}
		}
		key[c] = k
	}
	sort.SliceStable(cs, func(i, j int) bool { return key[cs[i]] < key[cs[j]] })
}

// NilsimsaOptions tune the nilsimsa order (--order=nilsimsa:...).
type NilsimsaOptions struct {
	// MaxChildren bounds the clusters each clustering step makes
	// (max-children; 0: DefaultNilsimsaMax).
	MaxChildren int
	// MaxClusterSize is the size above which a cluster is split again
	// (max-cluster-size; 0: DefaultNilsimsaMax); smaller clusters are
	// ordered by a nearest neighbour search, which is quadratic.
	MaxClusterSize int
	// NoFamilies orders the whole tree as one, as the reference does,
	// instead of each family of related top-level directories on its own
	// (families=0; see families).
	NoFamilies bool
}

// DefaultNilsimsaMax is the reference's default for both nilsimsa limits.
const DefaultNilsimsaMax = 16384

// nilsimsaOrder orders contents by similarity of their nilsimsa digests:
// the digests are clustered around majority-vote centroids, clusters
// larger than MaxClusterSize are clustered again with half the distance
// limit, and each leaf cluster is chained by nearest neighbours. Sibling
// clusters are then chained heaviest first, each followed by the one whose
// first file is nearest to its last. The result does not depend on the
// number of workers.
//
// Files without a digest (empty, or above --max-similarity-size) come
// first, largest first, as in the reference.
func nilsimsaOrder(cs []*content, no NilsimsaOptions, workers int) []*content {
	if no.MaxChildren <= 0 {
		no.MaxChildren = DefaultNilsimsaMax
	}
	if no.MaxClusterSize <= 0 {
		no.MaxClusterSize = DefaultNilsimsaMax
	}
	var sim, rest []*content
	for _, c := range cs {
		if c.rep.hasDigest {
			sim = append(sim, c)
		} else {
			rest = append(rest, c)
		}
	}
	// The base order every step starts from: largest first, then by path,
	// so the result does not depend on the scan order.
	base := func(a, b *content) int {
		if a.size != b.size {
			return cmp.Compare(b.size, a.size)
		}
		return compareRel(a.rep.firstEntry, b.rep.firstEntry)
	}
	slices.SortStableFunc(rest, base)
	slices.SortStableFunc(sim, base)

	// Contents with equal digests are clustered once and follow the first.
	same := map[[4]uint64][]*content{}
	var uniq []*content
	for _, c := range sim {
		d := c.rep.simDigest
		if _, ok := same[d]; !ok {
			uniq = append(uniq, c)
		}
		same[d] = append(same[d], c)
	}

	o := &nilsimsaOrderer{opt: no, base: base, sem: make(chan struct{}, workers-1)}
	root := &clusterNode{items: uniq}
	o.cluster(root, 128)
	o.wg.Wait()
	o.orderTree(root)

	out := append(make([]*content, 0, len(cs)), rest...)
	var collect func(n *clusterNode)
	collect = func(n *clusterNode) {
		if n.children == nil {
			for _, c := range n.items {
				out = append(out, same[c.rep.simDigest]...)
			}
			return
		}
		for _, ch := range n.children {
			collect(ch)
		}
	}
	collect(root)
	return out
}

// clusterNode is a leaf (items) or an inner node (children).
type clusterNode struct {
	items    []*content
	children []*clusterNode
	counts   [256]uint32 // per bit: how many items have it set
	centroid [4]uint64   // bits set in more than half of the items
	weight   int64       // bytes below this node
}

func (n *clusterNode) add(c *content) {
	n.items = append(n.items, c)
	half := uint32(len(n.items)) / 2
	for i := range 256 {
		w, b := i/64, uint(i%64)
		if c.rep.simDigest[w]&(1<<b) != 0 {
			n.counts[i]++
		}
		if n.counts[i] > half {
			n.centroid[w] |= 1 << b
		} else {
			n.centroid[w] &^= 1 << b
		}
	}
}

type nilsimsaOrderer struct {
	opt  NilsimsaOptions
	base func(a, b *content) int
	sem  chan struct{} // tokens for extra goroutines
	wg   sync.WaitGroup
}

// spawn runs f on another goroutine when one is free, else inline. The
// subtrees are independent, so this only changes the speed.
func (o *nilsimsaOrderer) spawn(f func()) {
	select {
	case o.sem <- struct{}{}:
		o.wg.Add(1)
		go func() {
			defer o.wg.Done()
			defer func() { <-o.sem }()
			f()
		}()
	default:
		f()
	}
}

// cluster splits n's items into children: each item joins the first child
// whose centroid is within maxDist, else a new child (up to MaxChildren),
// else the nearest child.
func (o *nilsimsaOrderer) cluster(n *clusterNode, maxDist int) {
	var children []*clusterNode
	// The children's centroids side by side, for the search below that
	// reads them all for every item.
	var cents [][4]uint64
	for _, c := range n.items {
		d0 := &c.rep.simDigest
		match, best := -1, -1
		bestD := math.MaxInt
		for j := range cents {
			d := hamming(&cents[j], d0)
			if d <= maxDist {
				match = j
				break
			}
			if d < bestD {
				best, bestD = j, d
			}
		}
		if match < 0 {
			if len(children) < o.opt.MaxChildren {
				match = len(children)
				children = append(children, &clusterNode{})
				cents = append(cents, [4]uint64{})
			} else {
				match = best
			}
		}
		children[match].add(c)
		cents[match] = children[match].centroid
	}
	n.items, n.children = nil, children
	for _, ch := range children {
		switch {
		case maxDist > 1 && len(ch.items) > o.opt.MaxClusterSize:
			o.spawn(func() { o.cluster(ch, maxDist/2) })
		case len(ch.items) > 1:
			o.spawn(func() { o.orderLeaf(ch.items) })
		}
	}
}

// orderLeaf chains items by nearest neighbour, starting from the base
// order's first.
func (o *nilsimsaOrderer) orderLeaf(items []*content) {
	slices.SortStableFunc(items, o.base)
	// chainNearest over a copy of the digests side by side: the search
	// reads them all for every item, and through the items it would
	// follow two pointers for each.
	ds := make([][4]uint64, len(items))
	for i, c := range items {
		ds[i] = c.rep.simDigest
	}
	for i := 0; i < len(ds)-1; i++ {
		best, bestD := i+1, math.MaxInt
		d0 := &ds[i]
		for k := i + 1; k < len(ds); k++ {
			if d := hamming(d0, &ds[k]); d < bestD {
				best, bestD = k, d
				if d <= 1 {
					break
				}
			}
		}
		if best != i+1 {
			ds[i+1], ds[best] = ds[best], ds[i+1]
			items[i+1], items[best] = items[best], items[i+1]
		}
	}
}

// chainNearest reorders n elements so that each is followed by the
// nearest (by dist from it) of those after it. (orderLeaf does the same
// over digests.)
func chainNearest(n int, dist func(i, k int) int, swap func(i, k int)) {
	for i := 0; i < n-1; i++ {
		best, bestD := i+1, math.MaxInt
		for k := i + 1; k < n; k++ {
			if d := dist(i, k); d < bestD {
				best, bestD = k, d
				if d <= 1 {
					break
				}
			}
		}
		if best != i+1 {
			swap(i+1, best)
		}
	}
}

// orderTree orders the children of every inner node: heaviest first, then
// each followed by the sibling whose first item is nearest to its last.
func (o *nilsimsaOrderer) orderTree(n *clusterNode) int64 {
	if n.children == nil {
		var w int64
		for _, c := range n.items {
			w += c.size
		}
		n.weight = w
		return w
	}
	for _, ch := range n.children {
		n.weight += o.orderTree(ch)
	}
	ch := n.children
	slices.SortStableFunc(ch, func(a, b *clusterNode) int { return cmp.Compare(b.weight, a.weight) })
	chainNearest(len(ch), func(i, k int) int {
		return hamming(&ch[i].last().rep.simDigest, &ch[k].first().rep.simDigest)
	}, func(i, k int) { ch[i], ch[k] = ch[k], ch[i] })
	return n.weight
}

func (n *clusterNode) first() *content {
	for n.children != nil {
		n = n.children[0]
	}
	return n.items[0]
}

func (n *clusterNode) last() *content {
	for n.children != nil {
		n = n.children[len(n.children)-1]
	}
	return n.items[len(n.items)-1]
}

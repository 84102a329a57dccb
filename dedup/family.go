package dedup

import (
	"cmp"
	"path"
	"slices"
	"strings"
)

// Families of top-level directories.
//
// A tree of many unrelated projects (every release of several libraries,
// one directory each) orders worse as a whole than as one build per
// project: the nilsimsa clusters of generic text (minified scripts,
// licences, manifests) mix the projects, so the chain through a cluster
// steps from one project's files to another's and back. A file's earlier
// versions then sit further back in the block stream, outside the
// segmenter's lookback and the compressor's window, and the blocks hold
// unrelated data side by side. A tree of many versions of one project
// (one directory per release tag) is the opposite case: the versions of a
// file sit in different top-level directories and must stay together.
//
// So the top-level directories are joined into families: two directories
// are related when a good share of their bytes is in files of the same
// name with near nilsimsa digests. Each family is ordered on its own, and
// the families follow each other by name. Versions of one project form
// one family (the whole tree, as before); unrelated projects stay apart,
// as they would be in shards.

// familyMinShare is the share of the smaller directory's distinct-name
// bytes that must have a near namesake in the other directory for the two
// to be related.
const familyMinShare = 0.2

// familyMaxDist is the largest nilsimsa distance at which two namesakes
// count as versions of one file. Versions of a source file are usually
// within 20 bits of each other; unrelated text is near 100.
const familyMaxDist = 40

// familyCopySmall is the size up to which a shared file is copied into
// every family of at least a block that has it, versions of it there or
// not (see familyCopies).
const familyCopySmall = 4096

// familyPairLimit bounds the namesakes in other directories that one
// file is compared with, so a name that every directory has (index.js)
// costs linear time.
const familyPairLimit = 32

// family is a run of contents ordered on its own. span is the size of
// the largest family it starts: its own, or that of an enclosing family
// it is the first part of.
type family struct {
	cs   []*content
	span int64
}

// familiesDeep splits cs into families, and each family that is one
// directory (a project with its releases below it) into the families of
// that directory's children, and so on down.
func familiesDeep(cs []*content) []family {
	fams := families(cs)
	if len(fams) == 1 {
		return []family{{cs, contentBytes(cs)}}
	}
	var out []family
	for _, f := range fams {
		sub := familiesDeep(f)
		sub[0].span = max(sub[0].span, contentBytes(f))
		out = append(out, sub...)
	}
	return out
}

func contentBytes(cs []*content) int64 {
	var n int64
	for _, c := range cs {
		n += c.size
	}
	return n
}

// families splits cs into families of related top-level directories, each
// in cs's order, the families in the order of their first directory's
// name. It returns a single family when there is nothing to split.
func families(cs []*content) [][]*content {
	out, _ := familyPartition(cs)
	return out
}

// familyPartition is families, and also the family (an index into out)
// of any of the contents' paths: -1 for one in no family (outside the
// groups, or in a group that owns nothing). With a single family it is
// nil.
func familyPartition(cs []*content) (out [][]*content, familyOfPath func(string) int) {
	if len(cs) < 2 {
		return [][]*content{cs}, nil
	}
	groupOf, names, also, keyGroup := topLevelGroups(cs)
	if len(names) < 2 {
		return [][]*content{cs}, nil
	}
	// rep[g][base] is group g's largest file of that name, the one that
	// stands for the name in g; nameBytes[g] sums their sizes.
	type member struct {
		g int
		c *content
	}
	// A content stands under every name it has (copies, hard links), in
	// the group of each.
	byName := map[string][]member{}
	for _, c := range cs {
		if !c.rep.hasDigest {
			continue
		}
		for _, in := range c.inodes {
			rel := in.firstEntry.rel()
			base := path.Base(rel)
			ms := byName[base]
			g := keyGroup(rel)
			if g < 0 {
				continue
			}
			found := false
			for k := range ms {
				if ms[k].g == g {
					if o := ms[k].c; c.size > o.size || c.size == o.size && compareRel(c.rep.firstEntry, o.rep.firstEntry) < 0 {
						ms[k].c = c
					}
					found = true
					break
				}
			}
			if !found {
				byName[base] = append(ms, member{g, c})
			}
		}
	}
	nameBytes := make([]int64, len(names))
	type pair struct{ a, b int }
	shared := map[pair]int64{}
	bases := make([]string, 0, len(byName))
	for b := range byName {
		bases = append(bases, b)
	}
	slices.Sort(bases)
	for _, b := range bases {
		ms := byName[b]
		for _, m := range ms {
			nameBytes[m.g] += m.c.size
		}
		if len(ms) < 2 {
			continue
		}
		// Near digests sort near each other often enough that comparing
		// each file with the next few finds the relations that matter.
		slices.SortFunc(ms, func(x, y member) int {
			if c := slices.Compare(x.c.rep.simDigest[:], y.c.rep.simDigest[:]); c != 0 {
				return c
			}
			return cmp.Compare(x.g, y.g)
		})
		for i := range ms {
			for k := i + 1; k < len(ms) && k <= i+familyPairLimit; k++ {
				if hamming(&ms[i].c.rep.simDigest, &ms[k].c.rep.simDigest) > familyMaxDist {
					continue
				}
				p := pair{min(ms[i].g, ms[k].g), max(ms[i].g, ms[k].g)}
				shared[p] += min(ms[i].c.size, ms[k].c.size)
			}
		}
	}
	// Identical copies relate their directories too, by the share they
	// make up of the smaller directory's distinct contents (all of them,
	// named alike or not).
	groupBytes := make([]int64, len(names))
	copied := map[pair]int64{}
	for i, c := range cs {
		groupBytes[groupOf[i]] += c.size
		for _, o := range also[i] {
			groupBytes[o] += c.size
			copied[pair{min(groupOf[i], o), max(groupOf[i], o)}] += c.size
		}
	}
	parent := make([]int, len(names))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(x int) int {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	join := func(m map[pair]int64, total []int64) {
		for p, n := range m {
			small := min(total[p.a], total[p.b])
			if small > 0 && float64(n) >= familyMinShare*float64(small) {
				ra, rb := find(p.a), find(p.b)
				// The smaller index wins, so the result does not depend
				// on the map's order.
				if ra != rb {
					parent[max(ra, rb)] = min(ra, rb)
				}
			}
		}
	}
	join(shared, nameBytes)
	join(copied, groupBytes)
	// Groups are numbered in name order, so a family's root is its first
	// directory by name and families come out in that order.
	// A directory whose files are all copies owned by others has no
	// contents, and a family of such directories is left out.
	owns := make([]bool, len(names))
	for _, g := range groupOf {
		owns[find(g)] = true
	}
	famIndex := map[int]int{}
	for g := range names {
		r := find(g)
		if _, ok := famIndex[r]; !ok && owns[r] {
			famIndex[r] = len(out)
			out = append(out, nil)
		}
	}
	for i, c := range cs {
		f := famIndex[find(groupOf[i])]
		out[f] = append(out[f], c)
	}
	if len(out) < 2 {
		return out, nil
	}
	return out, func(rel string) int {
		g := keyGroup(rel)
		if g < 0 {
			return -1
		}
		if f, ok := famIndex[find(g)]; ok {
			return f
		}
		return -1
	}
}

// topLevelGroups numbers each content by the top-level directory its
// first path is in, below the directories that every path shares (a tree
// packed as one directory is split by that directory's children). Files
// at that level form a group of their own. Groups are numbered in name
// order; names lists them. also lists, for each content whose files sit
// in more than one group (identical copies), the other groups, and
// groupOfPath numbers any of the contents' paths (-1 for one outside
// them all: a copy elsewhere, or a group that owns nothing).
func topLevelGroups(cs []*content) (groupOf []int, names []string, also [][]int, groupOfPath func(string) int) {
	// The prefix comes from the contents' own paths: copies elsewhere
	// (outside the directory a family of families is split in) neither
	// shorten it nor make groups.
	rels := make([]string, len(cs))
	for i, c := range cs {
		rels[i] = c.rep.firstEntry.rel()
	}
	prefix := commonDirPrefix(rels)
	key := func(r string) (string, bool) {
		if !strings.HasPrefix(r, prefix) {
			return "", false
		}
		r = r[len(prefix):]
		if j := strings.IndexByte(r, '/'); j >= 0 {
			return r[:j+1], true // the slash keeps a directory apart from a file of its name
		}
		return "", true
	}
	set := map[string]bool{}
	for _, r := range rels {
		k, _ := key(r)
		set[k] = true
	}
	names = make([]string, 0, len(set))
	for k := range set {
		names = append(names, k)
	}
	slices.Sort(names)
	num := make(map[string]int, len(names))
	for i, n := range names {
		num[n] = i
	}
	groupOfPath = func(rel string) int {
		k, ok := key(rel)
		if !ok {
			return -1
		}
		if g, ok := num[k]; ok {
			return g
		}
		return -1
	}
	groupOf = make([]int, len(cs))
	also = make([][]int, len(cs))
	for i, c := range cs {
		g := groupOfPath(c.rep.firstEntry.rel())
		groupOf[i] = g
		for _, in := range c.inodes {
			if o := groupOfPath(in.firstEntry.rel()); o >= 0 && o != g && !slices.Contains(also[i], o) {
				also[i] = append(also[i], o)
			}
		}
	}
	return groupOf, names, also, groupOfPath
}

// commonDirPrefix is the longest run of whole directories ("a/b/") that
// starts every path.
func commonDirPrefix(rels []string) string {
	if len(rels) == 0 {
		return ""
	}
	p := rels[0]
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[:i+1]
	} else {
		return ""
	}
	for _, r := range rels[1:] {
		for !strings.HasPrefix(r, p) {
			i := strings.LastIndexByte(p[:len(p)-1], '/')
			if i < 0 {
				return ""
			}
			p = p[:i+1]
		}
	}
	return p
}

// familyCopies makes, for each content whose files lie in several
// families of at least minBytes (a block), a copy for each such family
// but the one of its first file: a content with the files of that family,
// that the family orders and segments as its own. A family gets a copy
// when it holds other versions of the file (a namesake with a near
// digest), which the copy is stored beside at little cost, or when the
// file is small (familyCopySmall); a large file it holds no versions of
// would only be stored twice. It does so at every level familiesDeep
// splits, so that each family of at least a block has, as near as that
// allows, the contents a build of the family alone (a shard) would have.
//
// A content is stored once, in the family of its first file. When an
// unrelated project ships a copy of another's file (a library bundling a
// release of jQuery), the other project loses it: its neighbouring
// versions are segmented without it in the block, and even a small file
// missing changes the nilsimsa clusters and so the path of the order
// through the rest of the family. The family's blocks come out different
// from those of its shard, larger or smaller by chance (by tenths of a
// percent), except where the file's versions lose it, which costs. With
// the copies a family's blocks are its shard's unless a large file it
// has no versions of was left out; storing a copy again costs about what
// the shard pays for it. Smaller families are packed together into
// blocks, as no shard is, and get no copies.
//
// What a family gets in copies is bounded by a 32nd of its own bytes or a
// block, whichever is more: families that share more than that (but too
// little to be joined into one) would otherwise store it all twice, which
// their shards do, but which a single build is there to avoid.
//
// The copies are segmented like any content; adoptCopies then gives the
// content the chunk list of the copy with the fewest chunks, so the
// metadata has one per content as before. The copies' inodes are copies
// too: the image's inodes are not changed.
func familyCopies(cs []*content, minBytes int64) []*content {
	fams, familyOf := familyPartition(cs)
	if familyOf == nil {
		return nil
	}
	big := make([]bool, len(fams))
	allowance := make([]int64, len(fams))
	for k, f := range fams {
		n := contentBytes(f)
		big[k], allowance[k] = n >= minBytes, max(n/32, minBytes)
	}
	// kin[k][name] holds family k's contents of that name, up to
	// familyPairLimit of them.
	kin := make([]map[string][]*content, len(fams))
	for k := range kin {
		kin[k] = map[string][]*content{}
	}
	for _, c := range cs {
		if !c.rep.hasDigest {
			continue
		}
		for _, f := range c.inodes {
			if k := familyOf(f.firstEntry.rel()); k >= 0 && big[k] {
				name := path.Base(f.firstEntry.rel())
				if ks := kin[k][name]; len(ks) < familyPairLimit && (len(ks) == 0 || ks[len(ks)-1] != c) {
					kin[k][name] = append(ks, c)
				}
			}
		}
	}
	// hasKin says whether family k holds another version of c under the
	// name of f: a namesake with a near digest but other contents.
	hasKin := func(k int, c *content, f *inode) bool {
		if !c.rep.hasDigest {
			return false
		}
		for _, o := range kin[k][path.Base(f.firstEntry.rel())] {
			if o != c && hamming(&o.rep.simDigest, &c.rep.simDigest) <= familyMaxDist {
				return true
			}
		}
		return false
	}
	into := make([][]*content, len(fams))
	for _, c := range cs {
		if len(c.inodes) < 2 || c.size == 0 {
			continue
		}
		home := familyOf(c.rep.firstEntry.rel())
		if home < 0 {
			continue
		}
		var order []int
		in := map[int][]*inode{}
		kinIn := map[int]bool{}
		for _, f := range c.inodes {
			k := familyOf(f.firstEntry.rel())
			if k < 0 || k == home || !big[k] {
				continue
			}
			if in[k] == nil {
				order = append(order, k)
			}
			kinIn[k] = kinIn[k] || hasKin(k, c, f)
			cp := *f
			if cp.x != nil {
				x := *cp.x
				cp.x = &x
			}
			cp.setFrags(c.rep.frags()) // a hot or categorized content's, as the original's
			in[k] = append(in[k], &cp)
		}
		orig := c
		if c.copyOf() != nil {
			orig = c.copyOf()
		}
		for _, k := range order {
			if !kinIn[k] && c.size > familyCopySmall || c.size > allowance[k] {
				continue
			}
			allowance[k] -= c.size
			g := &content{rep: in[k][0], inodes: in[k], size: c.size, x: &contentExtra{copyOf: orig}}
			for _, f := range g.inodes {
				f.content = g
			}
			into[k] = append(into[k], g)
		}
	}
	var out []*content
	for k, f := range fams {
		out = append(out, into[k]...)
		if big[k] {
			sub := append(f[:len(f):len(f)], into[k]...)
			out = append(out, familyCopies(sub, minBytes)...)
		}
	}
	return out
}

// adoptCopies gives each content that has family copies the chunk list
// with the fewest chunks among its own and its copies' (all of them hold
// the same bytes). A copy that failed to be read is not adopted.
func adoptCopies(copies []*content) {
	for _, g := range copies {
		c := g.copyOf()
		if g.size == c.size && g.chunks != nil && len(g.chunks) < len(c.chunks) {
			c.chunks = g.chunks
		}
	}
}

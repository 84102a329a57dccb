// Package shard partitions a tree into shards that are built apart (on
// different machines, as the tasks of a Slurm job array or a Kubernetes
// Indexed Job) and merged into one image.
//
// A Plan depends only on the listing it is given, a list of (path, size,
// is directory) entries, never on the order of the list or on the machine:
// every task that lists the same tree computes the same plan, and the
// plan's Digest tells two plans apart.
//
// The tree is cut at a depth (1: the entries of the root). The entries at
// the cut, and the files, symlinks and empty directories above it, are the
// units of the plan: a unit is in exactly one shard, with everything
// below it. A unit that is a directory holding more than the shards' even
// share of the bytes (total/count) is not a unit but cut again one level
// deeper, recursively; a file is never cut.
//
// A directory whose entries are versions of one tree (directories most
// of whose names recur in the others, as releases side by side) is cut
// across them: a unit is then one relative path in every version, so
// that what the versions have in common lands in one shard and is stored
// once; unless that leaves a part above an even share that cannot be cut
// (a few big files a version), and then the versions are cut apart as
// other directories are. The units are placed largest first, each into
// the shard with the fewest bytes so far (the lowest index on a tie),
// ties between units broken by their first path.
//
// The directories above the units form the skeleton: a shard holds each
// directory that leads to one of its units (with the directory's own
// attributes), so shards may share directories, and their union — a merge
// into the root that merges directories present in several shards — is
// the whole tree. A shard may be empty (no units): it holds the root
// directory only.
package shard

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Entry is one entry of a listing: a file, symlink, directory or other
// entry below the root (never the root itself).
type Entry struct {
	// Path is slash separated and relative to the root: "a/b/c", no
	// leading or trailing slash, no "." or ".." elements.
	Path string
	// Size is what the entry costs to build: a regular file's size, a
	// symlink's target length, 0 for directories and other entries.
	Size int64
	// Dir is set for a directory.
	Dir bool
}

// Shard is one shard of a Plan.
type Shard struct {
	Index int `json:"index"`
	// Paths are the shard's units, sorted: each is in this shard with
	// everything below it, and with the directories that lead to it.
	Paths []string `json:"paths"`
	// Bytes is the sum of the sizes of the entries in the shard's units.
	Bytes int64 `json:"bytes"`
}

// Plan is a partition of a listing into shards.
type Plan struct {
	Count int `json:"count"`
	Depth int `json:"depth"`
	// Digest identifies the listing, Count, Depth and the planning
	// rules: "sha256:" and 64 hex digits. Shards built from one tree
	// with one plan have the same digest.
	Digest string `json:"digest"`
	// Bytes is the sum of the sizes of all entries.
	Bytes  int64   `json:"bytes"`
	Shards []Shard `json:"shards"`

	// owner maps each unit to its shard; skel maps each skeleton
	// directory to the set of shards holding units below it.
	owner map[string]int
	skel  map[string][]bool
}

// version names the planning rules in the digest: a change to them must
// change every digest, so that shards planned by different rules never
// merge.
const version = "godwarfs shard plan 2"

type node struct {
	path     string
	size     int64 // the entry's own
	total    int64 // with everything below
	dir      bool
	children []*node
}

// New plans count shards of the listing, cut at depth (1: the root's
// entries). Parent directories missing from the listing are implied (an
// object store lists keys only). A path listed twice, or below an entry
// that is not a directory, is an error.
func New(entries []Entry, count, depth int) (*Plan, error) {
	if count < 1 {
		return nil, fmt.Errorf("shard: %d shards: there must be at least one", count)
	}
	if depth < 1 {
		return nil, fmt.Errorf("shard: depth %d: it must be at least 1", depth)
	}
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	nodes := make(map[string]*node, len(sorted)+1)
	root := &node{dir: true}
	nodes[""] = root
	for i, e := range sorted {
		if err := checkPath(e.Path); err != nil {
			return nil, err
		}
		if i > 0 && sorted[i-1].Path == e.Path {
			return nil, fmt.Errorf("shard: %q is listed twice", e.Path)
		}
		if e.Size < 0 {
			return nil, fmt.Errorf("shard: %q has a negative size %d", e.Path, e.Size)
		}
	}
	var add func(p string, e *Entry) (*node, error)
	add = func(p string, e *Entry) (*node, error) {
		if n, ok := nodes[p]; ok {
			if e != nil { // listed after a child implied it
				if !e.Dir {
					return nil, fmt.Errorf("shard: %q is not a directory, but entries are listed below it", p)
				}
			}
			return n, nil
		}
		parentPath := ""
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			parentPath = p[:i]
		}
		parent, err := add(parentPath, nil)
		if err != nil {
			return nil, err
		}
		if !parent.dir {
			return nil, fmt.Errorf("shard: %q is not a directory, but %q is listed below it", parentPath, p)
		}
		n := &node{path: p, dir: true}
		if e != nil {
			n.size, n.dir = e.Size, e.Dir
		}
		nodes[p] = n
		parent.children = append(parent.children, n)
		return n, nil
	}
	for i := range sorted {
		if _, err := add(sorted[i].Path, &sorted[i]); err != nil {
			return nil, err
		}
	}
	var sum func(n *node) int64
	sum = func(n *node) int64 {
		n.total = n.size
		slices.SortFunc(n.children, func(a, b *node) int { return strings.Compare(a.path, b.path) })
		for _, c := range n.children {
			n.total += sum(c)
		}
		return n.total
	}
	sum(root)

	p := &Plan{Count: count, Depth: depth, Bytes: root.total, owner: map[string]int{}, skel: map[string][]bool{}}
	p.Digest = digest(sorted, count, depth)
	// A group of directories is cut when it is above the cut depth or
	// holds more than an even share; an empty one is a unit wherever it
	// is.
	var units []unit
	var cut func(g []*node, level int)
	cut = func(g []*node, level int) {
		for _, n := range g {
			p.skel[n.path] = make([]bool, count)
		}
		var groups [][]*node
		if len(g) == 1 && versions(g[0]) {
			if across := byName(g[0].children); fits(across, count, root.total) {
				for _, v := range g[0].children {
					p.skel[v.path] = make([]bool, count)
				}
				groups = across
				level++
			}
		}
		if groups == nil {
			groups = byName(g)
		}
		for _, sub := range groups {
			total, cuttable := measure(sub)
			if cuttable && (level < depth || total*int64(count) > root.total) {
				cut(sub, level+1)
			} else {
				units = append(units, unit{sub, total})
			}
		}
	}
	cut([]*node{root}, 1)
	slices.SortFunc(units, func(a, b unit) int {
		return cmp.Or(cmp.Compare(b.total, a.total), strings.Compare(a.nodes[0].path, b.nodes[0].path))
	})
	p.Shards = make([]Shard, count)
	for k := range p.Shards {
		p.Shards[k] = Shard{Index: k, Paths: []string{}}
	}
	for _, u := range units {
		best := 0
		for k := 1; k < count; k++ {
			if p.Shards[k].Bytes < p.Shards[best].Bytes {
				best = k
			}
		}
		s := &p.Shards[best]
		s.Bytes += u.total
		for _, n := range u.nodes {
			s.Paths = append(s.Paths, n.path)
			p.owner[n.path] = best
			for d := parent(n.path); ; d = parent(d) {
				p.skel[d][best] = true
				if d == "" {
					break
				}
			}
		}
	}
	for k := range p.Shards {
		slices.Sort(p.Shards[k].Paths)
	}
	return p, nil
}

// unit is what is placed in one shard: a subtree, or the subtrees at one
// relative path in each version of a version set.
type unit struct {
	nodes []*node
	total int64
}

// versions tells whether n's entries look like versions of one tree:
// two or more directories, most of whose names recur in the others.
// Such a directory is cut across its versions, by relative path, so that
// each shard holds a path's every version and what they have in common
// is stored once, as it is by a build of the whole.
func versions(n *node) bool {
	if len(n.children) < 2 {
		return false
	}
	names := map[string]bool{}
	all := 0
	for _, v := range n.children {
		if !v.dir || len(v.children) == 0 {
			return false
		}
		for _, c := range v.children {
			names[base(c.path)] = true
		}
		all += len(v.children)
	}
	return 2*len(names) <= all
}

// fits tells whether every group is either within an even share of
// total or a group of directories to cut further. Versions that are a
// few big files each (a log a day) fail it across them, and are cut
// apart instead, as they balance better.
func fits(groups [][]*node, count int, total int64) bool {
	for _, sub := range groups {
		if t, cuttable := measure(sub); !cuttable && t*int64(count) > total {
			return false
		}
	}
	return true
}

// measure returns the bytes the group g holds, and whether it can be cut:
// all of it non-empty directories.
func measure(g []*node) (total int64, cuttable bool) {
	cuttable = true
	for _, n := range g {
		total += n.total
		cuttable = cuttable && n.dir && len(n.children) > 0
	}
	return total, cuttable
}

// byName groups the entries of the directories g by name, in name order.
func byName(g []*node) [][]*node {
	m := map[string][]*node{}
	for _, n := range g {
		for _, c := range n.children {
			m[base(c.path)] = append(m[base(c.path)], c)
		}
	}
	names := slices.Sorted(maps.Keys(m))
	out := make([][]*node, len(names))
	for i, name := range names {
		out[i] = m[name]
	}
	return out
}

func base(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// parent is the path of p's directory ("" for the root).
func parent(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

func checkPath(p string) error {
	if p == "" {
		return errors.New("shard: an entry has an empty path (the root is not listed)")
	}
	for _, el := range strings.Split(p, "/") {
		if el == "" || el == "." || el == ".." {
			return fmt.Errorf("shard: %q is not a clean relative path", p)
		}
	}
	return nil
}

// digest hashes what decides the plan: the rules, count, depth and the
// sorted listing.
func digest(sorted []Entry, count, depth int) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%d %d\n", version, count, depth)
	buf := make([]byte, 0, 256)
	for _, e := range sorted {
		buf = append(buf[:0], e.Path...)
		buf = append(buf, 0)
		buf = strconv.AppendInt(buf, e.Size, 10)
		if e.Dir {
			buf = append(buf, " d\n"...)
		} else {
			buf = append(buf, " f\n"...)
		}
		h.Write(buf)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Owner returns the shard that holds path: the shard of the unit it is in
// or is. A skeleton directory is held by every shard with a unit below it
// (see Holds) and has no owner: Owner returns -1, as for a path the
// listing does not have.
func (p *Plan) Owner(path string) int {
	for q := path; q != ""; q = parent(q) {
		if k, ok := p.owner[q]; ok {
			return k
		}
		if _, ok := p.skel[q]; ok {
			return -1 // a skeleton directory, or below none of the units
		}
	}
	return -1
}

// Holds reports whether shard k holds path: path is in one of its units,
// or is a directory leading to one.
func (p *Plan) Holds(k int, path string) bool {
	if s, ok := p.skel[path]; ok {
		return k >= 0 && k < len(s) && s[k]
	}
	return p.Owner(path) == k
}

// Keep returns Holds for shard k, for filtering a walk of the tree.
func (p *Plan) Keep(k int) func(path string) bool {
	return func(path string) bool { return p.Holds(k, path) }
}

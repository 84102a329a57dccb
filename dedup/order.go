package dedup

import "sort"

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
		k := key{f.size, string(f.hash)}
		dedupable := hashOn && (f.hash != nil || f.size == 0)
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

// orderContents sorts unique contents for the block stream.
func orderContents(cs []*content, o Order) []*content {
	out := append([]*content(nil), cs...)
	path := func(c *content) string { return c.rep.firstEntry.rel }
	switch o {
	case OrderNone:
	case OrderPath:
		sort.SliceStable(out, func(i, j int) bool { return path(out[i]) < path(out[j]) })
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
		out = nilsimsaOrder(out)
	}
	return out
}

// nilsimsaCandidates bounds the greedy search: each step compares against
// this many of the remaining contents, so ordering is O(n·k).
const nilsimsaCandidates = 256

// nilsimsaOrder chains contents greedily: starting from the largest, it
// repeatedly appends the most similar of the next candidates (by size order,
// since near-identical versions tend to have near-identical sizes).
func nilsimsaOrder(cs []*content) []*content {
	var sim, rest []*content
	for _, c := range cs {
		if c.rep.hasDigest {
			sim = append(sim, c)
		} else {
			rest = append(rest, c)
		}
	}
	sort.SliceStable(sim, func(i, j int) bool {
		if sim[i].size != sim[j].size {
			return sim[i].size > sim[j].size
		}
		return sim[i].rep.firstEntry.rel < sim[j].rep.firstEntry.rel
	})
	out := make([]*content, 0, len(cs))
	for len(sim) > 0 {
		cur := sim[0]
		out = append(out, cur)
		sim = sim[1:]
		if len(sim) == 0 {
			break
		}
		best, bestD := 0, 257
		for i := 0; i < len(sim) && i < nilsimsaCandidates; i++ {
			if d := hamming(&cur.rep.simDigest, &sim[i].rep.simDigest); d < bestD {
				best, bestD = i, d
			}
		}
		if best != 0 {
			// Move the chosen one to the front, keeping the rest in order.
			c := sim[best]
			copy(sim[1:best+1], sim[:best])
			sim[0] = c
		}
	}
	// Files without a digest (empty or above --max-similarity-size) go
	// last, in path order.
	sort.SliceStable(rest, func(i, j int) bool { return rest[i].rep.firstEntry.rel < rest[j].rep.firstEntry.rel })
	return append(out, rest...)
}

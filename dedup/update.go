package dedup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"
)

// Update makes a growing build an update (mkdwarfs --update): the scanned
// input is the whole new tree, and the base image (Base.Trees[0], which
// must be the only tree) lends it data instead of being placed in it. A
// scanned file whose path, size and mtime equal the base file's keeps
// that file's chunks unread; the other files are read, stored as a base
// file of the same contents when there is one (by size and whole-file
// hash, wherever it was), else segmented into new blocks, also against
// base blocks (Base.BlockData). Base blocks that no chunk refers to in
// the end are dropped; those kept follow the new blocks (see Keep).
type Update struct {
	// Hash compares contents: a file is unchanged only if its whole-file
	// hash equals the base file's (every file is read).
	Hash bool
	// MaxDead is the share (0 to 1) of the kept base blocks' bytes that
	// may be dead (no chunk refers to them) before the update rewrites
	// the blocks with dead data: their live files are read again and
	// segmented with the new data. Below 0: never. Compact rewrites them
	// whatever the share.
	MaxDead float64
	Compact bool
	// BlockSize returns the uncompressed size of base block n; dead bytes
	// are neither counted nor reclaimed without it.
	BlockSize func(n int) (int64, error)
	// IndexBytes bounds the base block data indexed for segment matches
	// (Base.BlockData): first the blocks of the old versions of changed
	// files, then the other kept blocks, newest first.
	IndexBytes int64
	// Keep is called once the new blocks are made, before the metadata is,
	// with the base blocks the image keeps, in increasing order. They
	// follow the new blocks in the image: chunks are numbered so.
	Keep func(ctx context.Context, blocks []int) error
	// Verify, if set, is called after Keep; an error ends the build (a
	// tree source that changed while it was read).
	Verify func() error
}

// ErrChanged is wrapped by the error for an input file that changed while
// an update read the tree.
var ErrChanged = errors.New("changed during the update")

// updater is the state of an update build.
type updater struct {
	b *builder
	u *Update
	// byPath maps the base tree's paths to their entries.
	byPath map[string]*entry
	// contents are the base contents (base files grouped by chunk list),
	// with no inodes until scanned files are matched to them.
	contents []*content
	ofInode  map[*inode]*content
	// linked are the scanned files matched by path, size and mtime.
	linked []*inode
	// rewrite are the base blocks whose live data is stored anew.
	rewrite map[uint32]bool
}

// newUpdater reads the base tree.
func (b *builder) newUpdater() (*updater, error) {
	base := b.opt.Base
	if len(base.Trees) != 1 {
		return nil, fmt.Errorf("an update needs one base image, not %d", len(base.Trees))
	}
	root, err := b.baseTree(0)
	if err != nil {
		return nil, err
	}
	up := &updater{b: b, u: base.Update, byPath: map[string]*entry{}, ofInode: map[*inode]*content{}}
	var files []*inode
	seen := map[*inode]bool{}
	var visit func(e *entry)
	visit = func(e *entry) {
		up.byPath[e.rel()] = e
		if e.ino.kind == kReg && !seen[e.ino] {
			seen[e.ino] = true
			files = append(files, e.ino)
		}
		for _, c := range e.children {
			visit(c)
		}
	}
	visit(root)
	m := map[string]*content{}
	for _, f := range files {
		c, ok := m[f.base().key]
		if !ok {
			c = &content{rep: f, size: f.size, chunks: f.base().chunks}
			m[f.base().key] = c
			up.contents = append(up.contents, c)
		}
		up.ofInode[f] = c
	}
	return up, nil
}

// baseFile returns the base content at rel (nil: no regular file there).
func (up *updater) baseFile(rel string) *content {
	c, _ := up.baseInode(rel)
	return c
}

// baseInode returns the base content and inode at rel.
func (up *updater) baseInode(rel string) (*content, *inode) {
	e := up.byPath[rel]
	if e == nil || e.ino.kind != kReg {
		return nil, nil
	}
	return up.ofInode[e.ino], e.ino
}

// storedTime is t as an image of time resolution res stores it.
func storedTime(t timespec, res time.Duration) timespec {
	if res >= time.Second {
		unit := int64(res / time.Second)
		return timespec{t.sec / unit * unit, 0}
	}
	return timespec{t.sec, t.nsec / int64(res) * int64(res)}
}

// linkUnchanged matches scanned files to the base files at their paths
// by size and mtime, and returns the others.
func (up *updater) linkUnchanged(files []*inode) []*inode {
	if up.u.Hash {
		return files
	}
	res := up.b.opt.TimeResolution
	rest := files[:0:0]
	for _, f := range files {
		// The file's own mtime: files of one content have their own.
		c, in := up.baseInode(f.relPath())
		if c == nil || c.size != f.size || storedTime(f.mtime(), res) != in.mtime() {
			rest = append(rest, f)
			continue
		}
		c.inodes = append(c.inodes, f)
		f.content = c
		up.linked = append(up.linked, f)
	}
	return rest
}

// sizes counts the base contents by size, so that scanned files of those
// sizes are hashed.
func (up *updater) sizes() map[int64]int {
	m := map[int64]int{}
	for _, c := range up.contents {
		m[c.size]++
	}
	return m
}

// prehash hashes, in block order, the base contents of the sizes some
// scanned file has, so that each base block is decoded about once.
func (up *updater) prehash(ctx context.Context, files []*inode) (map[*content][]byte, error) {
	hf := up.b.opt.Base.Hash
	if hf == nil || up.b.opt.FileHash == nil {
		return nil, nil
	}
	want := map[int64]bool{}
	for _, f := range files {
		if f.hash != "" {
			want[f.size] = true
		}
	}
	var cand []*content
	for _, c := range up.contents {
		if c.size > 0 && want[c.size] && !up.touchesRewrite(c) {
			cand = append(cand, c)
		}
	}
	sort.Slice(cand, func(i, j int) bool { return firstBlock(cand[i]) < firstBlock(cand[j]) })
	out := make(map[*content][]byte, len(cand))
	for _, c := range cand {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h, err := hf(0, c.rep.base().ino)
		if err != nil {
			return nil, fmt.Errorf("%s: hashing %s: %w", up.b.opt.Base.Trees[0].Name, c.rep.relPath(), err)
		}
		out[c] = h
	}
	return out, nil
}

// firstBlock orders contents by where their data starts.
func firstBlock(c *content) uint64 {
	for _, ch := range c.chunks {
		if !ch.isHole() {
			return uint64(ch.block)<<32 | uint64(ch.off)
		}
	}
	return 0
}

// touchesRewrite reports whether c has data in a block being rewritten.
func (up *updater) touchesRewrite(c *content) bool {
	if len(up.rewrite) == 0 {
		return false
	}
	for _, ch := range c.chunks {
		if !ch.isHole() && up.rewrite[ch.block] {
			return true
		}
	}
	return false
}

// span is a byte range of a block.
type span struct{ off, end uint32 }

// liveBytes returns, for each base block a chunk of contents refers to,
// the bytes chunks cover (overlaps counted once).
func liveBytes(blockBase int, contents []*content) map[uint32]int64 {
	spans := map[uint32][]span{}
	for _, c := range contents {
		for _, ch := range c.chunks {
			if !ch.isHole() && int(ch.block) < blockBase {
				spans[ch.block] = append(spans[ch.block], span{ch.off, ch.off + ch.size})
			}
		}
	}
	live := make(map[uint32]int64, len(spans))
	for n, ss := range spans {
		slices.SortFunc(ss, func(a, b span) int { return int(a.off) - int(b.off) })
		var total int64
		var cur span
		for i, s := range ss {
			switch {
			case i == 0:
				cur = s
			case s.off <= cur.end:
				cur.end = max(cur.end, s.end)
			default:
				total += int64(cur.end - cur.off)
				cur = s
			}
		}
		total += int64(cur.end - cur.off)
		live[n] = total
	}
	return live
}

// deadBytes returns the dead and the total bytes of the base blocks in
// live, and the blocks with dead data.
func (up *updater) deadBytes(live map[uint32]int64) (dead, total int64, withDead []uint32, err error) {
	for n, l := range live {
		size, err := up.u.BlockSize(int(n))
		if err != nil {
			return 0, 0, nil, fmt.Errorf("%s: block %d: %w", up.b.opt.Base.Trees[0].Name, n, err)
		}
		total += size
		if size > l {
			dead += size - l
			withDead = append(withDead, n)
		}
	}
	slices.Sort(withDead)
	return dead, total, withDead, nil
}

// compact decides which base blocks to rewrite: with Compact, or with
// more than MaxDead of the kept blocks' bytes dead, those with dead data.
// The scanned files stored as base contents in them are returned, no
// longer matched: their data goes through the segmenter again.
func (up *updater) compact() ([]*inode, error) {
	b := up.b
	if up.u.BlockSize == nil || (!up.u.Compact && up.u.MaxDead < 0) {
		return nil, nil
	}
	var used []*content
	for _, c := range up.contents {
		if len(c.inodes) > 0 {
			used = append(used, c)
		}
	}
	dead, total, withDead, err := up.deadBytes(liveBytes(b.blockBase, used))
	if err != nil {
		return nil, err
	}
	if len(withDead) == 0 || (!up.u.Compact && float64(dead) <= up.u.MaxDead*float64(total)) {
		b.verbosef("kept base blocks: %d of %d bytes dead; not compacting", dead, total)
		return nil, nil
	}
	up.rewrite = map[uint32]bool{}
	for _, n := range withDead {
		up.rewrite[n] = true
	}
	var out []*inode
	for _, c := range used {
		if !up.touchesRewrite(c) {
			continue
		}
		out = append(out, c.inodes...)
		for _, f := range c.inodes {
			f.content = nil
		}
		c.inodes = nil
	}
	b.stats.RewrittenBlocks = len(withDead)
	b.verbosef("kept base blocks: %d of %d bytes dead; rewriting the %d blocks with dead data (%d files)", dead, total, len(withDead), len(out))
	return out, nil
}

// updateContents matches the scanned files that linkUnchanged left to
// base contents by hash, decides on compaction and the base blocks to
// index, and returns the base contents in use and the files to segment.
func (b *builder) updateContents(ctx context.Context, root *entry, files []*inode, hashOn bool) ([]*content, []*inode, error) {
	up := b.upd
	hashes, err := up.prehash(ctx, files)
	if err != nil {
		return nil, nil, err
	}
	if files, err = b.matchBase(up.contents, files, hashOn, hashes); err != nil {
		return nil, nil, err
	}
	up.classify(root)
	b.verbosef("update: %d files unchanged, %d changed, %d new, %d deleted", b.stats.Unchanged, b.stats.Changed, b.stats.New, b.stats.Deleted)
	b.report()
	again, err := up.compact()
	if err != nil {
		return nil, nil, err
	}
	if len(again) > 0 {
		linked := map[*inode]bool{}
		for _, f := range up.linked {
			linked[f] = true
		}
		var unread []*inode
		for _, f := range again {
			if linked[f] {
				unread = append(unread, f)
			} else {
				files = append(files, f)
			}
		}
		read, err := b.scanFiles(ctx, unread)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, read...)
	}
	var base []*content
	for _, c := range up.contents {
		if len(c.inodes) > 0 {
			base = append(base, c)
		}
	}
	b.opt.Base.IndexBlocks = up.indexBlocks(root, base)
	return base, files, nil
}

// classify counts the files unchanged, changed, new and deleted.
func (up *updater) classify(root *entry) {
	st := &up.b.stats
	st.Unchanged, st.Changed, st.New, st.Deleted = 0, 0, 0, 0
	present := map[string]bool{}
	var visit func(e *entry)
	visit = func(e *entry) {
		if e.ino.kind == kReg {
			present[e.rel()] = true
			switch c := up.baseFile(e.rel()); {
			case c == nil:
				st.New++
			case e.ino.content == c:
				st.Unchanged++
			default:
				st.Changed++
			}
		}
		for _, c := range e.children {
			visit(c)
		}
	}
	visit(root)
	for rel, e := range up.byPath {
		if e.ino.kind == kReg && !present[rel] {
			st.Deleted++
		}
	}
}

// indexBlocks chooses the base blocks the segmenter matches new data
// against: those of the old versions of changed files, then the blocks
// kept anyway, newest first, up to IndexBytes.
func (up *updater) indexBlocks(root *entry, kept []*content) []int {
	limit := up.u.IndexBytes
	if limit <= 0 || up.b.opt.Base.BlockData == nil {
		return nil
	}
	per := int64(1) << up.b.opt.BlockSizeBits
	var out []int
	seen := map[uint32]bool{}
	add := func(c *content) bool {
		for _, ch := range c.chunks {
			if ch.isHole() || seen[ch.block] || up.rewrite[ch.block] {
				continue
			}
			if int64(len(out)+1)*per > limit {
				return false
			}
			seen[ch.block] = true
			out = append(out, int(ch.block))
		}
		return true
	}
	var old []*content
	var visit func(e *entry)
	visit = func(e *entry) {
		if e.ino.kind == kReg && e.ino.content == nil {
			if c := up.baseFile(e.rel()); c != nil {
				old = append(old, c)
			}
		}
		for _, c := range e.children {
			visit(c)
		}
	}
	visit(root)
	for _, c := range old {
		if !add(c) {
			return out
		}
	}
	rest := slices.Clone(kept)
	sort.Slice(rest, func(i, j int) bool { return firstBlock(rest[i]) > firstBlock(rest[j]) })
	for _, c := range rest {
		if !add(c) {
			break
		}
	}
	slices.Sort(out)
	return out
}

// keepBlocks drops the base blocks no chunk refers to, numbers the kept
// ones after the new blocks, and hands them to Update.Keep.
func (up *updater) keepBlocks(ctx context.Context, contents []*content) error {
	b := up.b
	nBase := b.blockBase
	nNew := len(b.blockCats)
	live := liveBytes(nBase, contents)
	kept := make([]int, 0, len(live))
	for n := range live {
		kept = append(kept, int(n))
	}
	slices.Sort(kept)
	if up.u.BlockSize != nil {
		dead, total, _, err := up.deadBytes(live)
		if err != nil {
			return err
		}
		b.stats.DeadBytes = dead
		b.verbosef("kept %d of %d base blocks (%d bytes, %d of them dead)", len(kept), nBase, total, dead)
	}
	b.stats.DroppedBlocks = nBase - len(kept)
	num := make([]uint32, nBase+nNew)
	b.blockOrder = make([]int, 0, nNew+len(kept))
	for i := range nNew {
		num[nBase+i] = uint32(i)
		b.blockOrder = append(b.blockOrder, nBase+i)
	}
	for i, n := range kept {
		num[n] = uint32(nNew + i)
		b.blockOrder = append(b.blockOrder, n)
	}
	for _, c := range contents {
		chunks := make([]pchunk, len(c.chunks))
		for i, ch := range c.chunks {
			if !ch.isHole() {
				ch.block = num[ch.block]
			}
			chunks[i] = ch
		}
		c.chunks = chunks
	}
	if up.u.Keep != nil {
		if err := up.u.Keep(ctx, kept); err != nil {
			return err
		}
	}
	if up.u.Verify != nil {
		if err := up.u.Verify(); err != nil {
			return err
		}
	}
	return nil
}

// verify checks that the scanned files on disk still have the size and
// mtime they were scanned with.
func (up *updater) verify(root *entry) error {
	var err error
	var visit func(e *entry)
	visit = func(e *entry) {
		if err != nil {
			return
		}
		in := e.ino
		if in.kind == kReg && in.data == nil && in.osPath() != "" && in.firstEntry == e {
			now, _, serr := statPath(in.osPath(), false, false)
			switch {
			case serr != nil:
				err = fmt.Errorf("%s: %w: %w", in.osPath(), ErrChanged, serr)
			case now.size != in.size || now.mtime() != in.mtime():
				err = fmt.Errorf("%s: %w (size %d, mtime %d.%09d; was %d, %d.%09d)", in.osPath(), ErrChanged,
					now.size, now.mtime().sec, now.mtime().nsec, in.size, in.mtime().sec, in.mtime().nsec)
			}
		}
		for _, c := range e.children {
			visit(c)
		}
	}
	visit(root)
	return err
}

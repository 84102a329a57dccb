package dedup

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/godwarfs/godwarfs/metadata"
	"github.com/godwarfs/godwarfs/shard"
)

type builder struct {
	opt   *Options
	stats Stats
	sc    *scanner
	bufs  sync.Pool // 1 MiB read buffers
	// segBuf is reused for reading files below the mmap threshold.
	segBuf []byte
	// blockCats is the category of each block written, by block number.
	blockCats []category
	cz        *categorizers // nil: none
	// blockBase is the number of base blocks (Options.Base) before the
	// first new one; baseSizes counts the base files by size.
	blockBase int
	baseSizes map[int64]int
	baseIdx   *baseIndex
	// upd is an update's state (Base.Update); blockOrder, if not nil,
	// lists the blocks in image order by their numbers while segmenting
	// (an update puts the kept base blocks after the new ones).
	upd        *updater
	blockOrder []int
	// scanRoot is the scanned tree's root once grow placed it among
	// base trees (nil: not placed), scanAt where (Options.InputAt,
	// cleaned).
	scanRoot *entry
	scanAt   string
}

// osPath is the path f is read from. Where grow merged the scanned
// tree's root into a base image's directory, its files' entries hang
// below that directory instead, and their path on disk is their path
// below scanAt.
func (b *builder) osPath(f *inode) string {
	if b.scanRoot == nil || f.x != nil && (f.x.osPath != "" || f.x.base != nil) || f.data != nil || f.firstEntry == nil {
		return f.osPath()
	}
	top := f.firstEntry
	for !top.isTop() {
		top = top.parent
	}
	if top == b.scanRoot {
		return f.osPath()
	}
	rel := f.firstEntry.rel()
	if b.scanAt != "" {
		rel = strings.TrimPrefix(strings.TrimPrefix(rel, b.scanAt), "/")
	}
	return filepath.Join(b.opt.Input, filepath.FromSlash(rel))
}

// Build scans opt.Input, writes all blocks to sink (in block-number order)
// and returns the metadata for the image.
func Build(ctx context.Context, opt Options, sink BlockSink) (*metadata.Metadata, Stats, error) {
	return BuildCategorized(ctx, opt, func(ctx context.Context, data []byte, _ BlockCategory) error { return sink(ctx, data) })
}

// BlockCategory says what a block holds: the name of its category
// (CategoryDefault when categorizing is off) and the category metadata,
// JSON such as {"bits_per_sample":16,...} for pcmaudio/waveform and
// fits/image, empty for the other categories. Blocks of one category with
// different metadata are never mixed, so a compressor can take the
// metadata as the layout of the whole block.
type BlockCategory struct {
	Name, Metadata string
}

// CategorizedSink receives finished blocks like a BlockSink, with the
// category of the data each block holds.
type CategorizedSink func(ctx context.Context, data []byte, cat BlockCategory) error

// BuildCategorized is Build with a sink that is told each block's
// category, e.g. to compress the categories differently.
func BuildCategorized(ctx context.Context, opt Options, sink CategorizedSink) (*metadata.Metadata, Stats, error) {
	if opt.BlockSizeBits < 10 || opt.BlockSizeBits > 30 {
		return nil, Stats{}, fmt.Errorf("block size bits %d out of range [10, 30]", opt.BlockSizeBits)
	}
	if opt.TimeResolution == 0 {
		opt.TimeResolution = time.Second
	}
	if err := checkTimeResolution(opt.TimeResolution); err != nil {
		return nil, Stats{}, err
	}
	if opt.Pack == nil {
		opt.Pack = &PackAuto
	}
	if opt.Now == nil {
		return nil, Stats{}, errors.New("Options.Now is nil")
	}
	if opt.OpenFile == nil {
		opt.OpenFile = openRead
	}
	if err := opt.checkCategorize(); err != nil {
		return nil, Stats{}, err
	}
	if opt.Base != nil {
		base := *opt.Base // the builder's to change (IndexBlocks)
		opt.Base = &base
	}
	b := newBuilder(&opt)
	t0 := time.Now()
	root, err := b.scanTree(ctx)
	if err != nil {
		return nil, b.stats, err
	}
	if root != nil && opt.Select != nil {
		if err := b.selectTree(root); err != nil {
			return nil, b.stats, err
		}
	}
	if root != nil {
		if b.cz, err = b.newCategorizers(root); err != nil {
			return nil, b.stats, err
		}
	}
	if opt.Base != nil {
		if root != nil && opt.RemoveEmpty {
			removeEmptyDirs(root) // the scanned tree's only
		}
		b.blockBase = opt.Base.Blocks
		if opt.Base.Update != nil {
			if root == nil {
				return nil, b.stats, errors.New("an update needs an input tree")
			}
			if b.upd, err = b.newUpdater(); err != nil {
				return nil, b.stats, err
			}
		} else if root, err = b.grow(root); err != nil {
			return nil, b.stats, err
		}
	}
	files := b.collect(root)
	b.verbosef("found %d regular files [%v]", len(files), since(&t0))
	// Base files have their chunks already; only scanned files are read.
	var baseFiles []*inode
	if b.upd != nil {
		b.baseSizes = b.upd.sizes()
		files = b.upd.linkUnchanged(files)
		baseFiles = b.upd.linked
		b.verbosef("%d files have the path, size and mtime of a base file", len(baseFiles))
	} else if opt.Base != nil {
		b.baseSizes = baseSizes(files)
		scanned := files[:0:0]
		for _, f := range files {
			if f.base() != nil {
				baseFiles = append(baseFiles, f)
			} else {
				scanned = append(scanned, f)
			}
		}
		files = scanned
	}
	hashOn := opt.FileHash != nil
	if files, err = b.scanFiles(ctx, files); err != nil {
		return nil, b.stats, err
	}
	b.verbosef("read %d bytes to hash files and compute similarity digests [%v]", b.stats.ScannedBytes, since(&t0))
	if b.stats.Errors > 0 {
		// Unreadable files were dropped: remove their entries too.
		keep := map[*inode]bool{}
		for _, f := range files {
			keep[f] = true
		}
		for _, f := range baseFiles {
			keep[f] = true
		}
		pruneFiles(root, keep)
		if opt.RemoveEmpty {
			removeEmptyDirs(root)
		}
	}
	b.phase("ordering")
	var base []*content
	if b.upd != nil {
		if base, files, err = b.updateContents(ctx, root, files, hashOn); err != nil {
			return nil, b.stats, err
		}
	} else if opt.Base != nil {
		base = baseContents(baseFiles)
		if base, err = b.matchAcross(ctx, base); err != nil {
			return nil, b.stats, err
		}
		if files, err = b.matchBase(base, files, hashOn, nil); err != nil {
			return nil, b.stats, err
		}
	}
	order := b.number(root, base, groupContents(files, hashOn))
	fresh := order.unique[len(base):]
	b.cz.applyHotness(fresh)
	b.verbosef("%d distinct contents, %d duplicate files (%d bytes)", len(order.unique), b.stats.DupFiles, b.stats.DupBytes)
	if b.opt.Debugf != nil {
		for _, c := range fresh {
			for _, in := range c.inodes[1:] {
				b.debugf("duplicate: %s has the contents of %s", in.relPath(), c.rep.relPath())
			}
		}
	}
	since(&t0)
	if len(fresh) > 0 {
		if b.baseIdx, err = b.buildBaseIndex(ctx); err != nil {
			return nil, b.stats, err
		}
	}
	if b.opt.BeforeSegmenting != nil {
		b.opt.BeforeSegmenting()
	}
	// Families (of the nilsimsa order) get copies of contents they share
	// with others, segmented as their own (see familyCopies).
	stream := fresh
	var copies []*content
	if opt.Order == OrderNilsimsa && !opt.Nilsimsa.NoFamilies && !b.opt.Hollow {
		copies = slices.DeleteFunc(familyCopies(fresh, int64(1)<<opt.BlockSizeBits), func(g *content) bool {
			return !b.familyOrdered(g)
		})
		if len(copies) > 0 {
			stream = append(fresh[:len(fresh):len(fresh)], copies...)
			var n int64
			for _, g := range copies {
				n += g.size
				b.debugf("family copy: %s (%d bytes) also stored with %s", g.copyOf().rep.relPath(), g.size, g.rep.relPath())
			}
			b.verbosef("%d contents shared across families are also stored in the other families (%d bytes)", len(copies), n)
		}
	}
	if err := b.segmentAll(ctx, stream, sink); err != nil {
		return nil, b.stats, err
	}
	adoptCopies(copies)
	if b.upd != nil {
		if err := b.upd.verify(root); err != nil {
			return nil, b.stats, err
		}
		if err := b.upd.keepBlocks(ctx, order.unique); err != nil {
			return nil, b.stats, err
		}
	}
	b.verbosef("segmented %d bytes into %d blocks of %d bytes; %d segment matches saved %d bytes [%v]",
		b.stats.SegmentedBytes, b.stats.Blocks, b.stats.BlockBytes, b.stats.SegMatches, b.stats.SegMatchBytes, since(&t0))
	b.phase("metadata")
	if b.opt.BeforeMetadata != nil {
		b.opt.BeforeMetadata()
	}
	md, err := b.metadata(order)
	if err != nil {
		return nil, b.stats, err
	}
	b.verbosef("built the metadata [%v]", since(&t0))
	b.categoryMetadata(md, fresh)
	return md, b.stats, nil
}

// familyOrdered says whether all of c's category streams are ordered by
// nilsimsa in families: where another order applies, a family copy would
// only be stored twice.
func (b *builder) familyOrdered(c *content) bool {
	for _, f := range c.fragments() {
		o := b.opt
		if len(b.opt.Categorize) > 0 {
			o = b.opt.forCategory(f.cat.name())
		}
		if o.Order != OrderNilsimsa || o.Nilsimsa.NoFamilies {
			return false
		}
	}
	return true
}

func newBuilder(opt *Options) *builder {
	b := &builder{opt: opt}
	b.bufs.New = func() any { buf := make([]byte, 1<<20); return &buf }
	warn := func(format string, args ...any) {
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, "warning: "+format+"\n", args...)
		}
	}
	b.sc = &scanner{opt: opt, root: opt.Input, links: map[devIno]*inode{}, stats: &b.stats, warn: warn}
	return b
}

// scanTree reads the input tree: the directory, the input list's paths
// or the tree source. It returns nil for a build of base trees only.
func (b *builder) scanTree(ctx context.Context) (*entry, error) {
	opt := b.opt
	b.stats.Phase = "scanning"
	if opt.Tree != nil {
		b.stats.Phase = PhaseReading
	}
	b.phase(b.stats.Phase)
	b.report()
	switch {
	case opt.Tree != nil:
		if opt.InputList != nil {
			return nil, errors.New("an input list cannot select from a tree source")
		}
		return b.sc.fromTree(ctx, b)
	case opt.Input == "" && opt.Base != nil:
		return nil, nil // only base trees (a merge)
	case opt.InputList != nil:
		return b.sc.fromList(opt.InputList)
	default:
		return b.sc.walk(ctx)
	}
}

// List scans the input as Build would (the directory, input list or tree
// source, with the filters, the type options and RemoveEmpty) and lists
// every entry but the root, in path order, as the shard planner takes it.
func List(ctx context.Context, opt Options) ([]shard.Entry, error) {
	if opt.OpenFile == nil {
		opt.OpenFile = openRead
	}
	if opt.Base != nil {
		return nil, errors.New("list: a build on base images cannot be listed")
	}
	b := newBuilder(&opt)
	root, err := b.scanTree(ctx)
	if err != nil {
		return nil, err
	}
	if opt.RemoveEmpty {
		removeEmptyDirs(root)
	}
	return listTree(root), nil
}

// listTree lists the entries below root in path order.
func listTree(root *entry) []shard.Entry {
	var out []shard.Entry
	var visit func(e *entry)
	visit = func(e *entry) {
		for _, c := range e.children {
			le := shard.Entry{Path: c.rel(), Dir: c.ino.kind == kDir}
			if c.ino.kind == kReg || c.ino.kind == kLink {
				le.Size = c.ino.size
			}
			out = append(out, le)
			visit(c)
		}
	}
	visit(root)
	slices.SortFunc(out, func(a, b shard.Entry) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// selectTree applies Options.Select to the scanned tree.
func (b *builder) selectTree(root *entry) error {
	if b.opt.RemoveEmpty && b.opt.Base == nil {
		// Before listing, so that the listing is the tree that is built.
		removeEmptyDirs(root)
	}
	keep, err := b.opt.Select(listTree(root))
	if err != nil {
		return err
	}
	var prune func(e *entry)
	prune = func(e *entry) {
		kept := e.children[:0]
		for _, c := range e.children {
			if keep(c.rel()) {
				prune(c)
				kept = append(kept, c)
			}
		}
		clear(e.children[len(kept):])
		e.children = kept
	}
	prune(root)
	return nil
}

func (b *builder) phase(name string) {
	if b.opt.Phase != nil {
		b.opt.Phase(name)
	}
}

func (b *builder) verbosef(format string, args ...any) {
	if b.opt.Verbosef != nil {
		b.opt.Verbosef(format, args...)
	}
}

func (b *builder) tracef(format string, args ...any) {
	if b.opt.Tracef != nil {
		b.opt.Tracef(format, args...)
	}
}

func (b *builder) debugf(format string, args ...any) {
	if b.opt.Debugf != nil {
		b.opt.Debugf(format, args...)
	}
}

func pruneFiles(e *entry, keep map[*inode]bool) {
	kept := e.children[:0]
	for _, c := range e.children {
		if c.ino.kind == kReg && !keep[c.ino] {
			continue
		}
		if c.ino.kind == kDir {
			pruneFiles(c, keep)
		}
		kept = append(kept, c)
	}
	e.children = kept
}

// collect applies --remove-empty-dirs, counts entries and returns the
// distinct regular inodes in traversal order.
func (b *builder) collect(root *entry) []*inode {
	if b.opt.RemoveEmpty && b.opt.Base == nil {
		removeEmptyDirs(root)
	}
	var files []*inode
	var visit func(e *entry)
	visit = func(e *entry) {
		in := e.ino
		in.nlinks++
		if in.firstEntry == nil {
			in.firstEntry = e
			if in.kind == kReg {
				files = append(files, in)
			}
		}
		for _, c := range e.children {
			visit(c)
		}
	}
	visit(root)
	return files
}

// numbering is the inode order of the image.
type numbering struct {
	root     *entry
	dirs     []*entry // by inode number
	links    []*inode
	regs     []*inode // unique files, then shared grouped by content
	nUnique  int
	shared   []*content // shared contents, in order
	unique   []*content // every distinct content, first-seen order
	devs     []*inode
	specials []*inode
	all      []*inode
}

// number orders the inodes; contents are the base contents (files of
// base images) and then the scanned ones.
func (b *builder) number(root *entry, base, scanned []*content) *numbering {
	contents := append(base[:len(base):len(base)], scanned...)
	n := &numbering{root: root, unique: contents}
	var visit func(e *entry)
	visit = func(e *entry) {
		in := e.ino
		// collect set firstEntry in this same order: the first visit of
		// an inode is at its first entry.
		if in.firstEntry == e {
			switch in.kind {
			case kDir:
				n.dirs = append(n.dirs, e)
			case kLink:
				n.links = append(n.links, in)
			case kDev:
				n.devs = append(n.devs, in)
			case kSpecial:
				n.specials = append(n.specials, in)
			}
		}
		for _, c := range e.children {
			visit(c)
		}
	}
	visit(root)
	for _, c := range contents {
		if len(c.inodes) == 1 {
			n.regs = append(n.regs, c.inodes[0])
		} else {
			b.stats.DupFiles += len(c.inodes) - 1
			b.stats.DupBytes += int64(len(c.inodes)-1) * c.size
		}
	}
	n.nUnique = len(n.regs)
	for _, c := range contents {
		if len(c.inodes) > 1 {
			n.shared = append(n.shared, c)
			n.regs = append(n.regs, c.inodes...)
		}
	}
	for _, e := range n.dirs {
		n.all = append(n.all, e.ino)
	}
	n.all = append(n.all, n.links...)
	n.all = append(n.all, n.regs...)
	n.all = append(n.all, n.devs...)
	n.all = append(n.all, n.specials...)
	for i, in := range n.all {
		in.num = uint32(i)
	}
	b.stats.Dirs = len(n.dirs)
	b.stats.Symlinks = len(n.links)
	b.stats.Files = len(n.regs)
	b.stats.Devices = len(n.devs)
	b.stats.Specials = len(n.specials)
	for _, in := range n.regs {
		b.stats.Hardlinks += int(in.nlinks) - 1
	}
	for _, c := range contents {
		b.stats.InputBytes += c.size
	}
	for _, in := range n.regs {
		b.stats.TreeBytes += in.size
	}
	return n
}

// report passes the running totals to opt.Progress. Callers hold b.sc.mu
// while other goroutines may change b.stats.
func (b *builder) report() {
	if b.opt.Progress != nil {
		b.opt.Progress(b.stats)
	}
}

// relPath is the path of f below the input root, for progress displays.
func (f *inode) relPath() string {
	if f.firstEntry != nil {
		return f.firstEntry.rel()
	}
	return f.osPath()
}

// since returns the time since *t and restarts it, for phase timings.
func since(t *time.Time) time.Duration {
	now := time.Now()
	d := now.Sub(*t).Round(time.Microsecond)
	*t = now
	return d
}

package dedup

import (
	"context"
	"errors"
	"fmt"
	"github.com/godwarfs/godwarfs/internal/version"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs/metadata"
)

type builder struct {
	opt   *Options
	stats Stats
	sc    *scanner
	bufs  sync.Pool // 1 MiB read buffers
	// segBuf is reused for reading files below the mmap threshold.
	segBuf []byte
}

// Build scans opt.Input, writes all blocks to sink (in block-number order)
// and returns the metadata for the image.
func Build(ctx context.Context, opt Options, sink BlockSink) (*metadata.Metadata, Stats, error) {
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
		opt.OpenFile = os.Open
	}
	b := &builder{opt: &opt}
	b.bufs.New = func() any { buf := make([]byte, 1<<20); return &buf }
	warn := func(format string, args ...any) {
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, "warning: "+format+"\n", args...)
		}
	}
	b.sc = &scanner{opt: &opt, root: opt.Input, links: map[devIno]*inode{}, stats: &b.stats, warn: warn}
	var root *entry
	var err error
	if opt.InputList != nil {
		root, err = b.sc.fromList(opt.InputList)
	} else {
		root, err = b.sc.walk(ctx)
	}
	if err != nil {
		return nil, b.stats, err
	}
	files := b.collect(root)
	hashOn := opt.FileHash != nil
	if files, err = b.scanFiles(ctx, files); err != nil {
		return nil, b.stats, err
	}
	if b.stats.Errors > 0 {
		// Unreadable files were dropped: remove their entries too.
		keep := map[*inode]bool{}
		for _, f := range files {
			keep[f] = true
		}
		pruneFiles(root, keep)
		if opt.RemoveEmpty {
			removeEmptyDirs(root)
		}
	}
	order := b.number(root, files, hashOn)
	contents := orderContents(order.unique, opt.Order)
	if err := b.segmentAll(ctx, contents, sink); err != nil {
		return nil, b.stats, err
	}
	md, err := b.metadata(order)
	if err != nil {
		return nil, b.stats, err
	}
	return md, b.stats, nil
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
	if b.opt.RemoveEmpty {
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

func (b *builder) number(root *entry, files []*inode, hashOn bool) *numbering {
	// Reset per-inode link counts: pruning may have changed the tree.
	contents := groupContents(files, hashOn)
	n := &numbering{root: root, unique: contents}
	seen := map[*inode]bool{}
	var visit func(e *entry)
	visit = func(e *entry) {
		in := e.ino
		if !seen[in] {
			seen[in] = true
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
	// chunk_table order: unique inodes, then shared contents.
	idx := 0
	for _, in := range n.regs[:n.nUnique] {
		in.content.index = idx
		idx++
	}
	for _, c := range n.shared {
		c.index = idx
		idx++
	}
	b.stats.Dirs = len(n.dirs)
	b.stats.Symlinks = len(n.links)
	b.stats.Files = len(n.regs)
	b.stats.Devices = len(n.devs)
	b.stats.Specials = len(n.specials)
	for _, in := range n.regs {
		b.stats.Hardlinks += in.nlinks - 1
	}
	for _, c := range contents {
		b.stats.InputBytes += c.size
	}
	return n
}

// segmentAll feeds every distinct content through the segmenter in order.
func (b *builder) segmentAll(ctx context.Context, contents []*content, sink BlockSink) error {
	seg := newSegmenter(ctx, b.opt, sink, &b.stats)
	var progMu sync.Mutex
	for _, c := range contents {
		if err := ctx.Err(); err != nil {
			return err
		}
		if c.size == 0 {
			continue
		}
		if err := b.segmentFile(seg, c); err != nil {
			var se *segmenterError
			if ctx.Err() != nil || !b.opt.ContinueOnErr || errors.As(err, &se) {
				return err
			}
			// As the reference does with a file that fails while being
			// read: keep it, empty, and report the error.
			b.sc.warn("%v; storing it as an empty file", err)
			b.stats.Errors++
			c.chunks, c.size = nil, 0
			for _, in := range append(c.inodes, c.rep) {
				in.size = 0
			}
			continue
		}
		if b.opt.Progress != nil {
			progMu.Lock()
			b.opt.Progress(b.stats)
			progMu.Unlock()
		}
	}
	return seg.finish()
}

// segmenterError marks a segmentFile error after which the segmenter
// cannot go on: the block sink failed. It always ends the build; other
// errors are the input's.
type segmenterError struct{ err error }

func (e *segmenterError) Error() string { return e.err.Error() }
func (e *segmenterError) Unwrap() error { return e.err }

// segmentFile maps the file (falling back to reading it) and segments its
// data extents; a file that shrinks while mapped is caught as a fault.
func (b *builder) segmentFile(seg *segmenter, c *content) (err error) {
	f := c.rep
	fh, err := b.opt.OpenFile(f.osPath)
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", f.osPath, err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return fmt.Errorf("cannot stat %s: %w", f.osPath, err)
	}
	if fi.Size() != f.size {
		return fmt.Errorf("%s: %w (expected %d bytes, now %d)", f.osPath, errSizeChanged, f.size, fi.Size())
	}
	var data []byte
	if f.size >= 1<<20 && f.size == int64(int(f.size)) {
		m, merr := unix.Mmap(int(fh.Fd()), 0, int(f.size), unix.PROT_READ, unix.MAP_SHARED)
		if merr == nil {
			data = m
			defer unix.Munmap(m)
			// A truncation while mapped raises SIGBUS; turn it into an error.
			old := debug.SetPanicOnFault(true)
			defer func() {
				debug.SetPanicOnFault(old)
				if r := recover(); r != nil {
					// An input error, not a segmenter one: the segmenter
					// reads the mapped input before changing any state,
					// and appendLiteral's copy is assigned to the block
					// only once complete, so a fault leaves it consistent.
					err = fmt.Errorf("%s: %w, or unreadable (fault while reading the mapped file: %v)", f.osPath, errSizeChanged, r)
				}
			}()
		}
	}
	if data == nil {
		// Segmenting is sequential and copies what it keeps, so one
		// growing buffer serves all small files.
		if int64(cap(b.segBuf)) < f.size {
			b.segBuf = make([]byte, f.size)
		}
		data = b.segBuf[:f.size]
		n, rerr := io.ReadFull(fh, data)
		if rerr != nil {
			if errors.Is(rerr, io.ErrUnexpectedEOF) || errors.Is(rerr, io.EOF) {
				return fmt.Errorf("%s: %w (expected %d bytes, read %d)", f.osPath, errSizeChanged, f.size, n)
			}
			return fmt.Errorf("cannot read %s: %w", f.osPath, rerr)
		}
		var one [1]byte
		if m, _ := fh.Read(one[:]); m > 0 {
			return fmt.Errorf("%s: %w (grew beyond %d bytes)", f.osPath, errSizeChanged, f.size)
		}
	}
	var out []pchunk
	if f.extents == nil {
		out, err = seg.add(data, out)
	} else {
		var pos int64
		for _, e := range f.extents {
			if e.off > pos {
				out = append(out, pchunk{hole: true, holeLen: e.off - pos})
				b.stats.HoleBytes += e.off - pos
			}
			if out, err = seg.add(data[e.off:e.off+e.len], out); err != nil {
				break
			}
			pos = e.off + e.len
		}
		if err == nil && pos < f.size {
			out = append(out, pchunk{hole: true, holeLen: f.size - pos})
			b.stats.HoleBytes += f.size - pos
		}
	}
	if err != nil {
		return &segmenterError{err}
	}
	// Catch files that grew (or were replaced) while being read.
	if fi, err := fh.Stat(); err != nil {
		return fmt.Errorf("cannot stat %s: %w", f.osPath, err)
	} else if fi.Size() != f.size {
		return fmt.Errorf("%s: %w (expected %d bytes, now %d)", f.osPath, errSizeChanged, f.size, fi.Size())
	}
	c.chunks = out
	return nil
}

// metadata assembles the metadata model (§3, §6).
func (b *builder) metadata(n *numbering) (*metadata.Metadata, error) {
	opt := b.opt
	md := &metadata.Metadata{
		BlockSize:           1 << opt.BlockSizeBits,
		HasDirEntries:       true,
		HasSharedFilesTable: true,
		HasDevices:          true,
		HasFeatures:         true,
		Features:            []string{},
		Options:             &metadata.FsOptions{MtimeOnly: !opt.KeepAllTimes, InodesHaveNlink: !opt.NoHardlinks},
	}
	ver := version.Get().Name()
	md.DwarfsVersion = &ver
	sep := uint32('/')
	md.PreferredPathSeparator = &sep
	if !opt.NoCreateTime {
		t := uint64(max(opt.Now().Unix(), 0))
		md.CreateTimestamp = &t
	}

	// Names: deduplicated, sorted; index 0 is used by the root entry.
	nameSet := map[string]struct{}{}
	var walkNames func(e *entry)
	walkNames = func(e *entry) {
		for _, c := range e.children {
			nameSet[c.name] = struct{}{}
			walkNames(c)
		}
	}
	walkNames(n.root)
	names, nameIdx := sortedIndex(nameSet)

	// Directory entries in directory-inode order.
	selfEntry := map[*entry]uint32{n.root: 0}
	md.DirEntries = append(md.DirEntries, metadata.DirEntry{NameIndex: 0, InodeNum: 0})
	for _, d := range n.dirs {
		parent := uint32(0)
		if d.parent != nil {
			parent = selfEntry[d.parent]
		}
		md.Directories = append(md.Directories, metadata.Directory{
			ParentEntry: parent,
			FirstEntry:  uint32(len(md.DirEntries)),
			SelfEntry:   selfEntry[d],
		})
		for _, c := range d.children {
			if c.ino.kind == kDir {
				selfEntry[c] = uint32(len(md.DirEntries))
			}
			md.DirEntries = append(md.DirEntries, metadata.DirEntry{NameIndex: nameIdx[c.name], InodeNum: c.ino.num})
		}
	}
	md.Directories = append(md.Directories, metadata.Directory{FirstEntry: uint32(len(md.DirEntries))})

	// Symlinks: deduplicated, sorted targets.
	tset := map[string]struct{}{}
	for _, l := range n.links {
		tset[l.target] = struct{}{}
	}
	targets, tIdx := sortedIndex(tset)
	md.SymlinkTable = make([]uint32, 0, len(n.links))
	for _, l := range n.links {
		md.SymlinkTable = append(md.SymlinkTable, tIdx[l.target])
	}

	// Chunks.
	holeIdx := uint32(b.stats.Blocks)
	var maxData uint32
	hasHoles := false
	contentsInTable := make([]*content, 0, len(n.regs))
	for _, in := range n.regs[:n.nUnique] {
		contentsInTable = append(contentsInTable, in.content)
	}
	contentsInTable = append(contentsInTable, n.shared...)
	for _, c := range contentsInTable {
		for _, ch := range c.chunks {
			if ch.hole {
				hasHoles = true
			} else {
				maxData = max(maxData, ch.size)
			}
		}
	}
	holes := metadata.NewHoleEncoder(holeIdx, uint32(1)<<opt.BlockSizeBits, maxData)
	md.ChunkTable = make([]uint32, 0, len(contentsInTable)+1)
	for _, c := range contentsInTable {
		md.ChunkTable = append(md.ChunkTable, uint32(len(md.Chunks)))
		for _, ch := range c.chunks {
			if ch.hole {
				md.Chunks = append(md.Chunks, holes.Chunk(uint64(ch.holeLen)))
			} else {
				md.Chunks = append(md.Chunks, metadata.Chunk{Block: ch.block, Offset: ch.off, Size: ch.size})
			}
		}
	}
	md.ChunkTable = append(md.ChunkTable, uint32(len(md.Chunks)))
	if hasHoles {
		md.HoleBlockIndex = &holeIdx
		md.Features = []string{"sparsefiles"}
		// The reference sets large_hole_size, empty or not, in every
		// sparse image.
		md.LargeHoleSize, md.HasLargeHoleSize = holes.Sizes, true
	}
	sc, err := md.SizeCache(md.ChunkTable, metadata.SizeCacheMinChunks)
	if err != nil {
		return nil, err
	}
	md.RegFileSizeCache = sc
	for i, c := range n.shared {
		for range c.inodes {
			md.SharedFilesTable = append(md.SharedFilesTable, uint32(i))
		}
	}
	if md.SharedFilesTable == nil {
		md.SharedFilesTable = []uint32{}
	}

	// Devices.
	md.Devices = make([]uint64, 0, len(n.devs))
	for _, d := range n.devs {
		md.Devices = append(md.Devices, d.rdev)
	}

	// Inodes: modes, owners, times.
	if err := b.inodes(md, n); err != nil {
		return nil, err
	}

	// Sizes.
	var total, hard, alloc uint64
	for _, l := range n.links {
		total += uint64(len(l.target))
		alloc += uint64(len(l.target))
	}
	for _, in := range n.regs {
		total += uint64(in.size)
		hard += uint64(in.size) * uint64(in.nlinks-1)
		a := uint64(in.size)
		for _, ch := range in.content.chunks {
			if ch.hole {
				a -= uint64(ch.holeLen)
			}
		}
		alloc += a
	}
	md.TotalFsSize = total
	if hard > 0 {
		md.TotalHardlinkSize = &hard
	}
	if hasHoles {
		md.TotalAllocatedFsSize = &alloc
	}

	packTables(md, names, targets, *opt.Pack)
	return md, nil
}

// inodes stores every inode's mode, owner, group and times as the policy
// says.
func (b *builder) inodes(md *metadata.Metadata, n *numbering) error {
	opt := b.opt
	modeIdx := map[uint32]uint32{}
	uidIdx := map[uint32]uint32{}
	gidIdx := map[uint32]uint32{}
	idx := func(m map[uint32]uint32, tab *[]uint32, v uint32) uint32 {
		if i, ok := m[v]; ok {
			return i
		}
		i := uint32(len(*tab))
		m[v] = i
		*tab = append(*tab, v)
		return i
	}
	md.Inodes = make([]metadata.InodeData, len(n.all))
	times := make([]inodeTimes, len(n.all))
	for i, in := range n.all {
		d := &md.Inodes[i]
		d.ModeIndex = idx(modeIdx, &md.Modes, in.mode)
		d.OwnerIndex = idx(uidIdx, &md.Uids, in.uid)
		d.GroupIndex = idx(gidIdx, &md.Gids, in.gid)
		if in.kind == kReg && !opt.NoHardlinks {
			d.NlinkMinusOne = uint32(in.nlinks - 1)
		}
		times[i] = inodeTimes{in.atime, in.mtime, in.ctime, {}}
		for k := range 3 {
			if opt.SetTime != nil {
				times[i][k] = timespec{sec: *opt.SetTime}
			}
			if times[i][k].sec < 0 {
				times[i][k] = timespec{} // before the epoch: not representable
			}
		}
	}
	opt.applyOwners(md)
	opt.applyChmod(md)
	encodeTimes(md, times, opt.TimeResolution, !opt.KeepAllTimes)
	return nil
}

// sortedIndex returns the set's strings in byte order (the reference sorts
// and deduplicates its string tables) and each string's position.
func sortedIndex(set map[string]struct{}) ([]string, map[string]uint32) {
	strs := make([]string, 0, len(set))
	for s := range set {
		strs = append(strs, s)
	}
	sort.Strings(strs)
	idx := make(map[string]uint32, len(strs))
	for i, s := range strs {
		idx[s] = uint32(i)
	}
	return strs, idx
}

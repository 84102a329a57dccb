package dedup

import (
	"slices"
	"sort"
	"strings"

	"github.com/godwarfs/godwarfs/internal/version"
	"github.com/godwarfs/godwarfs/metadata"
)

// metadata assembles the metadata model (§3, §6).
func (b *builder) metadata(n *numbering) (*metadata.Metadata, error) {
	opt := b.opt
	md := &metadata.Metadata{
		BlockSize:           b.blockSize(),
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

	// Directory entries in directory-inode order; names deduplicated and
	// sorted (index 0 is used by the root entry), by sorting the entries'
	// names rather than through a map, which costs several times as much
	// per entry.
	// The tables are allocated at their final size: grown by appending,
	// their copies would add up to more than they hold.
	nents := 0
	for _, d := range n.dirs {
		nents += len(d.children)
	}
	selfEntry := make(map[*entry]uint32, len(n.dirs))
	selfEntry[n.root] = 0
	md.DirEntries = make([]metadata.DirEntry, 1, 1+nents)
	md.Directories = make([]metadata.Directory, 0, len(n.dirs)+1)
	entryNames := make([]string, 0, nents)
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
			md.DirEntries = append(md.DirEntries, metadata.DirEntry{InodeNum: c.ino.num})
			entryNames = append(entryNames, c.name)
		}
	}
	md.Directories = append(md.Directories, metadata.Directory{FirstEntry: uint32(len(md.DirEntries))})
	names := sortNames(entryNames, md.DirEntries[1:])
	b.dropTree(n)

	// Symlinks: deduplicated, sorted targets.
	tset := map[string]struct{}{}
	for _, l := range n.links {
		tset[l.target()] = struct{}{}
	}
	targets, tIdx := sortedIndex(tset)
	md.SymlinkTable = make([]uint32, 0, len(n.links))
	for _, l := range n.links {
		md.SymlinkTable = append(md.SymlinkTable, tIdx[l.target()])
	}

	// Chunks.
	holeIdx := uint32(b.blockBase + b.stats.Blocks)
	if b.blockOrder != nil {
		holeIdx = uint32(len(b.blockOrder))
	}
	var maxData uint32
	hasHoles := false
	contentsInTable := make([]*content, 0, len(n.regs))
	for _, in := range n.regs[:n.nUnique] {
		contentsInTable = append(contentsInTable, in.content)
	}
	contentsInTable = append(contentsInTable, n.shared...)
	for _, c := range contentsInTable {
		for _, ch := range c.chunks {
			if ch.isHole() {
				hasHoles = true
			} else {
				maxData = max(maxData, ch.size)
			}
		}
	}
	holes := metadata.NewHoleEncoder(holeIdx, md.BlockSize, maxData)
	md.ChunkTable = make([]uint32, 0, len(contentsInTable)+1)
	nchunks := 0
	for _, c := range contentsInTable {
		nchunks += len(c.chunks)
	}
	if nchunks > 0 {
		md.Chunks = make([]metadata.Chunk, 0, nchunks)
	}
	for _, c := range contentsInTable {
		md.ChunkTable = append(md.ChunkTable, uint32(len(md.Chunks)))
		for _, ch := range c.chunks {
			if ch.isHole() {
				md.Chunks = append(md.Chunks, holes.Chunk(uint64(ch.holeSize())))
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
		md.Devices = append(md.Devices, d.rdev())
	}

	// Inodes: modes, owners, times.
	if err := b.inodes(md, n); err != nil {
		return nil, err
	}

	// Sizes.
	var total, hard, alloc uint64
	for _, l := range n.links {
		total += uint64(len(l.target()))
		alloc += uint64(len(l.target()))
	}
	for _, in := range n.regs {
		total += uint64(in.size)
		hard += uint64(in.size) * uint64(in.nlinks-1)
		a := uint64(in.size)
		for _, ch := range in.content.chunks {
			if ch.isHole() {
				a -= uint64(ch.holeSize())
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

// dropTree lets the tree's entries go once the directory tables hold
// them: what is left to store is in the inodes, and with many small
// files the entries are a third of what the build holds, live while the
// inode table, the largest, is made. Paths cannot be named past here.
func (b *builder) dropTree(n *numbering) {
	for _, in := range n.all {
		in.firstEntry = nil
	}
	n.root, n.dirs = nil, nil
	b.scanRoot = nil
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
	for i, in := range n.all {
		d := &md.Inodes[i]
		d.ModeIndex = idx(modeIdx, &md.Modes, in.mode)
		d.OwnerIndex = idx(uidIdx, &md.Uids, in.uid)
		d.GroupIndex = idx(gidIdx, &md.Gids, in.gid)
		if in.kind == kReg && !opt.NoHardlinks {
			d.NlinkMinusOne = in.nlinks - 1
		}
	}
	timeOf := func(i int) inodeTimes {
		a, m, c := n.all[i].times()
		t := inodeTimes{a, m, c, {}}
		for k := range 3 {
			if opt.SetTime != nil {
				t[k] = timespec{sec: *opt.SetTime}
			}
			if t[k].sec < 0 {
				t[k] = timespec{} // before the epoch: not representable
			}
		}
		return t
	}
	opt.applyOwners(md)
	opt.applyChmod(md)
	encodeTimes(md, timeOf, opt.TimeResolution, !opt.KeepAllTimes)
	return nil
}

// sortNames returns the distinct names in byte order and sets each
// entry's NameIndex to its name's position (ents[i] has names[i]).
func sortNames(names []string, ents []metadata.DirEntry) []string {
	perm := make([]int32, len(names))
	for i := range perm {
		perm[i] = int32(i)
	}
	slices.SortFunc(perm, func(a, b int32) int { return strings.Compare(names[a], names[b]) })
	var out []string
	for k, i := range perm {
		if k == 0 || names[i] != names[perm[k-1]] {
			out = append(out, names[i])
		}
		ents[i].NameIndex = uint32(len(out) - 1)
	}
	return out
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

// blockSize is the image's block_size: that of new blocks, or that of the
// largest base image's blocks if larger, so that every block fits it.
func (b *builder) blockSize() uint32 {
	bs := uint32(1) << b.opt.BlockSizeBits
	if b.opt.Base != nil {
		for _, t := range b.opt.Base.Trees {
			bs = max(bs, t.FS.BlockSize())
		}
	}
	return bs
}

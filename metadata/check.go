package metadata

import (
	"fmt"
	"math/bits"
	"sort"
)

// Check performs the full consistency check of §3.16 (what upstream runs
// in dwarfsck and for v1 images) on top of what NewFS already validated.
// The error names the first violated rule.
func (f *FS) Check() error {
	checks := []func() error{f.checkSizes, f.checkDirs, f.checkEntries, f.checkChunks, f.checkFiles, f.checkStrings, f.checkInodes}
	for _, c := range checks {
		if err := c(); err != nil {
			return err
		}
	}
	return nil
}

func (f *FS) checkSizes() error {
	md := f.orig
	nIn := len(md.Inodes)
	switch {
	case len(md.Inodes) == 0:
		return fmt.Errorf("metadata: check: inodes empty")
	case len(md.Directories) == 0:
		return fmt.Errorf("metadata: check: directories empty")
	case len(md.ChunkTable) == 0:
		return fmt.Errorf("metadata: check: chunk_table empty")
	case len(md.Modes) == 0:
		return fmt.Errorf("metadata: check: modes empty")
	case len(md.Modes) > nIn:
		return fmt.Errorf("metadata: check: %d modes for %d inodes", len(md.Modes), nIn)
	case len(md.Uids) > nIn:
		return fmt.Errorf("metadata: check: %d uids for %d inodes", len(md.Uids), nIn)
	case len(md.Gids) > nIn:
		return fmt.Errorf("metadata: check: %d gids for %d inodes", len(md.Gids), nIn)
	case len(md.Directories) > nIn+1:
		return fmt.Errorf("metadata: check: %d directories for %d inodes", len(md.Directories), nIn)
	case len(md.ChunkTable) > nIn:
		return fmt.Errorf("metadata: check: %d chunk_table entries for %d inodes", len(md.ChunkTable), nIn)
	}
	if f.v23 && nIn > len(md.DirEntries) {
		return fmt.Errorf("metadata: check: %d inodes but only %d dir_entries", nIn, len(md.DirEntries))
	}
	if !f.v23 && len(md.EntryTableV22) == 0 {
		return fmt.Errorf("metadata: check: entry_table_v2_2 empty")
	}
	return nil
}

// checkDirs validates the stored (not the rebuilt) directory table.
func (f *FS) checkDirs() error {
	md := f.orig
	if !f.v23 || f.opts().PackedDirectories || (md.Options != nil && md.Options.PackedDirectories) {
		return nil
	}
	dirs := md.Directories
	nd := len(dirs) - 1
	ne := uint32(len(md.DirEntries))
	// Images before 0.11 store no self entries at all.
	hasSelf := false
	for _, d := range dirs[:nd] {
		if d.SelfEntry != 0 {
			hasSelf = true
			break
		}
	}
	for i, d := range dirs[:nd] {
		if d.ParentEntry >= ne {
			return fmt.Errorf("metadata: check: directories[%d].parent_entry %d out of range", i, d.ParentEntry)
		}
		if d.FirstEntry == d.ParentEntry && i > 0 {
			return fmt.Errorf("metadata: check: directories[%d]: first_entry == parent_entry", i)
		}
		if i == 0 {
			if d.ParentEntry != 0 || d.SelfEntry != 0 {
				return fmt.Errorf("metadata: check: root directory has parent/self entry %d/%d", d.ParentEntry, d.SelfEntry)
			}
			continue
		}
		if want := f.selfEnt[f.parent[i]]; d.ParentEntry != want {
			return fmt.Errorf("metadata: check: directories[%d].parent_entry %d, tree says %d", i, d.ParentEntry, want)
		}
		if hasSelf {
			if d.SelfEntry != f.selfEnt[i] {
				return fmt.Errorf("metadata: check: directories[%d].self_entry %d, tree says %d", i, d.SelfEntry, f.selfEnt[i])
			}
			if d.FirstEntry == d.SelfEntry || d.SelfEntry == d.ParentEntry {
				return fmt.Errorf("metadata: check: directories[%d]: self_entry collides with first/parent entry", i)
			}
		}
	}
	return nil
}

func (f *FS) checkEntries() error {
	// Every inode must be reachable and every directory's names sorted and
	// unique (lookups binary-search them).
	seen := make([]bool, f.n)
	seen[0] = true
	for d := range f.rank[1] {
		ents := f.ents[f.dirFirst[d]:f.dirFirst[d+1]]
		for i, e := range ents {
			seen[e.ino] = true
			if i > 0 && f.names[ents[i-1].name] >= f.names[e.name] {
				return fmt.Errorf("metadata: check: directory %d: entries %q and %q not strictly sorted", d, f.names[ents[i-1].name], f.names[e.name])
			}
			if n := f.names[e.name]; n == "" || n == "." || n == ".." {
				return fmt.Errorf("metadata: check: directory %d: invalid name %q", d, n)
			}
		}
	}
	for ino, ok := range seen {
		if !ok {
			return fmt.Errorf("metadata: check: inode %d not referenced by any entry", ino)
		}
	}
	// Directories must form a tree rooted at 0: every one reachable (each
	// has exactly one parent entry, so unreachable ones would be cycles).
	reached := make([]bool, f.rank[1])
	reached[0] = true
	queue := []uint32{0}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		for _, e := range f.ents[f.dirFirst[d]:f.dirFirst[d+1]] {
			if e.ino < f.rank[1] && !reached[e.ino] {
				reached[e.ino] = true
				queue = append(queue, e.ino)
			}
		}
	}
	for d, ok := range reached {
		if !ok {
			return fmt.Errorf("metadata: check: directory %d not reachable from root", d)
		}
	}
	// Entries outside every directory's range would be orphans.
	want := uint32(len(f.ents))
	if f.dirFirst[f.rank[1]] != want {
		return fmt.Errorf("metadata: check: directories cover %d of %d entries", f.dirFirst[f.rank[1]], want)
	}
	return nil
}

func (f *FS) checkChunks() error {
	md := f.md
	bs := md.BlockSize
	if bs == 0 || bits.OnesCount32(bs) != 1 {
		return fmt.Errorf("metadata: check: block_size %d is not a power of two", bs)
	}
	sparse := false
	for _, feat := range md.Features {
		if feat == "sparsefiles" {
			sparse = true
		}
	}
	if sparse != (md.HoleBlockIndex != nil) {
		return fmt.Errorf("metadata: check: feature sparsefiles (%v) without matching hole_block_index (%v)", sparse, md.HoleBlockIndex != nil)
	}
	for i, c := range md.Chunks {
		if f.holes && c.Block == f.holeBlk {
			if c.Offset == largeHoleOffset {
				if int(c.Size) >= len(md.LargeHoleSize) {
					return fmt.Errorf("metadata: check: chunks[%d]: large hole index %d out of range", i, c.Size)
				}
			} else if c.Offset >= bs {
				return fmt.Errorf("metadata: check: chunks[%d]: hole offset %d >= block size", i, c.Offset)
			}
			continue
		}
		if f.holes && c.Block > f.holeBlk {
			return fmt.Errorf("metadata: check: chunks[%d]: block %d beyond hole block %d", i, c.Block, f.holeBlk)
		}
		if uint64(c.Offset)+uint64(c.Size) > uint64(bs) {
			return fmt.Errorf("metadata: check: chunks[%d]: %d+%d exceeds block size %d", i, c.Offset, c.Size, bs)
		}
	}
	ct := f.chunkTbl
	for i := 1; i < len(ct); i++ {
		if ct[i] < ct[i-1] {
			return fmt.Errorf("metadata: check: chunk_table not sorted at %d", i)
		}
	}
	if ct[len(ct)-1] != uint32(len(md.Chunks)) {
		return fmt.Errorf("metadata: check: chunk_table ends at %d, have %d chunks", ct[len(ct)-1], len(md.Chunks))
	}
	return nil
}

func (f *FS) checkFiles() error {
	sh := f.shared
	distinct := uint32(0)
	for i := 0; i < len(sh); {
		j := i
		for j < len(sh) && sh[j] == sh[i] {
			j++
		}
		if sh[i] != distinct {
			return fmt.Errorf("metadata: check: shared_files_table value %d out of order (want %d)", sh[i], distinct)
		}
		if j-i < 2 {
			return fmt.Errorf("metadata: check: shared content %d used by only one inode", sh[i])
		}
		distinct++
		i = j
	}
	regs := f.rank[3] - f.rank[2]
	if got := uint64(len(f.chunkTbl)) - 1; got != uint64(f.unique)+uint64(distinct) {
		return fmt.Errorf("metadata: check: chunk_table has %d entries, want %d unique + %d shared contents", got, f.unique, distinct)
	}
	if c := f.md.RegFileSizeCache; c != nil {
		for _, kv := range c.SizeLookup {
			if uint64(kv.Key)+1 >= uint64(len(f.chunkTbl)) {
				return fmt.Errorf("metadata: check: size cache key %d out of range", kv.Key)
			}
			b, e := f.chunkTbl[kv.Key], f.chunkTbl[kv.Key+1]
			if uint64(e-b) < c.MinChunkCount {
				return fmt.Errorf("metadata: check: size cache key %d has %d < %d chunks", kv.Key, e-b, c.MinChunkCount)
			}
			var sum uint64
			for _, ch := range f.md.Chunks[b:e] {
				r, err := f.chunkRef(ch)
				if err != nil {
					return fmt.Errorf("metadata: check: %w", err)
				}
				sum += r.Size
			}
			if sum != kv.Value {
				return fmt.Errorf("metadata: check: size cache key %d says %d, chunks sum to %d", kv.Key, kv.Value, sum)
			}
		}
	}
	if f.opts().InodesHaveNlink {
		cnt := make([]uint32, regs)
		for _, e := range f.ents {
			if e.ino >= f.rank[2] && e.ino < f.rank[3] {
				cnt[e.ino-f.rank[2]]++
			}
		}
		for r, c := range cnt {
			ino := f.rank[2] + uint32(r)
			if got := uint64(f.attr(ino).NlinkMinusOne) + 1; got != uint64(c) {
				return fmt.Errorf("metadata: check: inode %d: nlink %d but %d entries", ino, got, c)
			}
		}
	}
	return nil
}

func (f *FS) checkStrings() error {
	md := f.orig
	if md.CompactNames != nil && len(md.Names) > 0 {
		return fmt.Errorf("metadata: check: both names and compact_names populated")
	}
	if md.CompactSymlinks != nil && len(md.Symlinks) > 0 {
		return fmt.Errorf("metadata: check: both symlinks and compact_symlinks populated")
	}
	for _, st := range []*StringTable{md.CompactNames, md.CompactSymlinks} {
		if st == nil || st.PackedIndex {
			continue
		}
		if len(st.Index) > 0 && st.Index[0] != 0 {
			return fmt.Errorf("metadata: check: string table index starts at %d", st.Index[0])
		}
		if !sort.SliceIsSorted(st.Index, func(i, j int) bool { return st.Index[i] < st.Index[j] }) {
			return fmt.Errorf("metadata: check: string table index not sorted")
		}
		if n := len(st.Index); n > 0 && st.Index[n-1] != uint32(len(st.Buffer)) {
			return fmt.Errorf("metadata: check: string table index ends at %d, buffer has %d bytes", st.Index[n-1], len(st.Buffer))
		}
	}
	for _, st := range []*StringTable{md.CompactNames, md.CompactSymlinks} {
		if st == nil || !st.PackedIndex {
			continue
		}
		var sum uint64
		for _, l := range st.Index {
			sum += uint64(l)
		}
		if sum != uint64(len(st.Buffer)) {
			return fmt.Errorf("metadata: check: packed string index sums to %d, buffer has %d bytes", sum, len(st.Buffer))
		}
	}
	if f.v23 {
		maxName := -1
		for _, e := range f.ents[1:] {
			maxName = max(maxName, int(e.name))
		}
		if len(f.ents) > 1 && maxName+1 != len(f.names) {
			return fmt.Errorf("metadata: check: %d names but highest name index %d", len(f.names), maxName)
		}
	}
	maxLink := -1
	for _, s := range md.SymlinkTable {
		maxLink = max(maxLink, int(s))
	}
	if maxLink+1 != len(f.links) {
		return fmt.Errorf("metadata: check: %d symlink strings but highest index %d", len(f.links), maxLink)
	}
	for _, s := range f.names {
		if len(s) > maxNameLen {
			return fmt.Errorf("metadata: check: name of %d bytes exceeds %d", len(s), maxNameLen)
		}
	}
	for _, s := range f.links {
		if len(s) > maxSymlinkLen {
			return fmt.Errorf("metadata: check: symlink of %d bytes exceeds %d", len(s), maxSymlinkLen)
		}
	}
	return nil
}

func (f *FS) checkInodes() error {
	if f.mult >= 1e9 {
		return fmt.Errorf("metadata: check: subsecond multiplier %d >= 1e9", f.mult)
	}
	if f.mult > 0 && f.res != 1 {
		return fmt.Errorf("metadata: check: subsecond times with time resolution %d s", f.res)
	}
	if f.mult > 0 {
		lim := 1e9 / f.mult
		for i, in := range f.md.Inodes {
			if in.MtimeSubsec >= lim || in.AtimeSubsec >= lim || in.CtimeSubsec >= lim || in.BtimeSubsec >= lim {
				return fmt.Errorf("metadata: check: inodes[%d]: sub-second value out of range", i)
			}
		}
	}
	for ino := f.rank[2]; ino < f.rank[3]; ino++ {
		if _, _, _, err := f.chunkRange(ino); err != nil {
			return fmt.Errorf("metadata: check: %w", err)
		}
	}
	return nil
}

package metadata

import (
	"bytes"
	"fmt"
	"math/bits"
	"runtime"
	"sort"

	"golang.org/x/sync/errgroup"
)

// Check performs the full consistency check of §3.16 (what upstream runs
// in dwarfsck and for v1 images) on top of what NewFS already validated.
// The error names the first violated rule, with the table, the index and
// the bad value. The check runs once; later calls return its result.
func (f *FS) Check() error {
	f.checkOnce.Do(func() {
		f.checkErr = f.check(true)
		f.allDirs.Store(f.checkErr == nil)
	})
	return f.checkErr
}

// CheckLazy is Check for serving an image. It leaves out the rules that
// take a pass over every entry or name of the image and that serving
// does not rely on elsewhere:
//   - the entries and names of each directory (an existing inode and
//     name, a directory named only by its own entry; names inside the
//     buffer of a compressed table, of valid FSST codes, sorted, unique,
//     none "", "." or ".."), which are checked when the directory is
//     first used instead: ReadDir, LookupPath, Walk and CheckDir then
//     fail with the error Check reports for it (or another of its
//     faults), and Lookup finds nothing;
//   - each inode's mode, owner and group indexes and that its type is of
//     its rank, checked when the inode is used (Inode and Mode fail);
//   - that a compact string table's index describes exactly its buffer;
//   - each file's chunk range, checked when the file is used (FileChunks
//     and Inode fail for it);
//   - that the shared files table counts up, each content shared;
//   - that every inode is named by an entry (one that is not is never
//     reached);
//   - that each file's link count equals its entries (the count served
//     is the stored one, as the reference serves it).
//
// It must be called before the FS is used.
func (f *FS) CheckLazy() error {
	return f.check(false)
}

// CheckDir checks the entries and names of directory dir unless Check
// has passed, once; it returns nil for other inodes. ReadDir, Lookup,
// LookupPath and Walk call it before they read a directory, so that an
// FS only CheckLazy (or a failed Check) has seen never reads a bad entry.
// Lookup cannot report its error: callers that need it call CheckDir
// first.
func (f *FS) CheckDir(dir uint32) error {
	if dir >= f.rank[1] || f.allDirs.Load() {
		return nil
	}
	w, bit := &f.dirOK[dir/32], uint32(1)<<(dir%32)
	if w.Load()&bit != 0 {
		return nil
	}
	if err := runCheck(func() error { return f.checkNameOrder(dir, dir+1) }); err != nil {
		return err
	}
	w.Or(bit)
	return nil
}

// CheckTables checks what NewFS leaves to the first use of each part:
// every inode's indexes and rank, every entry (an existing inode and
// name, a directory named only by its own entry), that each directory's
// own entry names it, and where every name lies and its codes. Check
// runs it first. A caller that reads the tables whole (Metadata, Tables,
// Names) without Check runs it instead: with it, every index in the
// tables is in range.
func (f *FS) CheckTables() error {
	if err := f.checkInodeAttrs(); err != nil {
		return err
	}
	// The stored own entries first: a wrong one is the fault to name,
	// rather than the entry it disowns.
	if err := f.checkSelfEntries(); err != nil {
		return err
	}
	if err := f.checkEntries(); err != nil {
		return err
	}
	return f.validateNames()
}

// check runs the rules of Check; without full, those CheckLazy runs.
func (f *FS) check(full bool) error {
	if full {
		// What NewFS leaves to first use runs first, as it once ran in
		// NewFS.
		if err := f.CheckTables(); err != nil {
			return err
		}
	}
	// The checks only read the tables, so they run side by side; each
	// records its first error in its own slot, and the first slot with
	// an error wins: the result is the one a check in sequence reports.
	// The name order check needs to know whether the names table itself
	// is sorted, so it runs in a second round.
	parts := 2 * runtime.GOMAXPROCS(0)
	const nameSlot = 2
	tree := func() error { return f.checkTree(full) }
	files := func() error { return f.checkFiles(full) }
	strs := func() error { return f.checkStrings(full) }
	inodes := func() error { return f.checkInodes(full) }
	slots := []func() error{f.checkSizes, f.checkDirs, nil, tree, f.checkChunks, files, strs, inodes}
	errs := make([]error, len(slots))
	var scans []*nameScan
	if full {
		scans = f.nameTableScans(parts)
	}
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for _, sc := range scans {
		g.Go(func() error {
			sc.err = runCheck(sc.run)
			return nil
		})
	}
	for i, c := range slots {
		if c != nil {
			g.Go(func() error {
				errs[i] = runCheck(c)
				return nil
			})
		}
	}
	_ = g.Wait() // the tasks report through errs and scans
	// Otherwise, directories are checked on first use (CheckLazy).
	if full {
		errs[nameSlot] = f.checkNames(&g, parts, scans)
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkNames finishes the name order check once the names table scans
// are done: the order of each directory's names, in about parts tasks.
func (f *FS) checkNames(g *errgroup.Group, parts int, scans []*nameScan) error {
	sorted, bad, err := mergeNameScans(scans)
	if err != nil {
		return err
	}
	tasks := f.nameOrderTasks(parts, sorted, bad)
	nameErrs := make([]error, len(tasks))
	for i, t := range tasks {
		g.Go(func() error {
			nameErrs[i] = runCheck(t)
			return nil
		})
	}
	_ = g.Wait()
	for _, err := range nameErrs {
		if err != nil {
			return err
		}
	}
	return nil
}

// runCheck runs one check, turning a panic (a rule an earlier check
// enforces did not hold, or a bug) into an error: it happens on a
// goroutine of its own, where nothing else would recover it.
func runCheck(c func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("metadata: check: internal error (panic): %v", p)
		}
	}()
	return c()
}

func (f *FS) checkSizes() error {
	md := f.orig
	nIn := md.InodeCount()
	switch {
	case nIn == 0:
		return fmt.Errorf("metadata: check: inodes empty")
	case len(md.Directories) == 0:
		return fmt.Errorf("metadata: check: directories empty")
	case md.chunkTableLen() == 0:
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
	case md.chunkTableLen() > nIn:
		return fmt.Errorf("metadata: check: %d chunk_table entries for %d inodes", md.chunkTableLen(), nIn)
	}
	if md.HasDevices || f.rank[4] > f.rank[3] {
		if len(md.Devices) != int(f.rank[4]-f.rank[3]) {
			return fmt.Errorf("metadata: check: devices: %d entries for %d device inodes", len(md.Devices), f.rank[4]-f.rank[3])
		}
	}
	if n := f.ents.len(); uint64(n) >= 1<<32-1 {
		return fmt.Errorf("metadata: check: %d directory entries, limit %d", n, uint32(1<<32-2))
	}
	if e := f.ents.at(0); e.NameIndex > 0 && uint64(e.NameIndex) >= uint64(f.names.len()) {
		return fmt.Errorf("metadata: check: entry 0: name index %d out of range (%d names)", e.NameIndex, f.names.len())
	}
	if !f.v23 {
		// Each legacy entry carries its own mode; it must be of the same
		// type as the inode it names.
		for i, in := range md.Inodes {
			r, want := rankOf(md.Modes[in.ModeIndex]), rankOf(f.mode(in.InodeV22))
			if r != want {
				return fmt.Errorf("metadata: check: inodes[%d].inode_v2_2 %d: entry mode %#o, inode mode %#o", i, in.InodeV22, md.Modes[in.ModeIndex], f.mode(in.InodeV22))
			}
		}
	}
	if f.v23 && nIn > f.ents.len() {
		return fmt.Errorf("metadata: check: %d inodes but only %d dir_entries", nIn, f.ents.len())
	}
	if !f.v23 && len(md.EntryTableV22) == 0 {
		return fmt.Errorf("metadata: check: entry_table_v2_2 empty")
	}
	return nil
}

// checkDirs validates the stored (not the rebuilt) directory table.
func (f *FS) checkDirs() error {
	md := f.orig
	dirs := md.Directories
	if md.Options != nil && md.Options.PackedDirectories {
		// Packed tables store only first-entry deltas; the rest is rebuilt.
		for i, d := range dirs {
			if d.ParentEntry != 0 || d.SelfEntry != 0 {
				return fmt.Errorf("metadata: check: directories[%d]: parent_entry %d / self_entry %d set in packed table", i, d.ParentEntry, d.SelfEntry)
			}
		}
		return nil
	}
	nd := len(dirs) - 1
	ne := uint32(f.ents.len())
	// Images before 0.11 store no self entries at all.
	hasSelf := false
	for _, d := range dirs[:nd] {
		if d.SelfEntry != 0 {
			hasSelf = true
			break
		}
	}
	for i, d := range dirs {
		switch {
		case d.FirstEntry > ne:
			return fmt.Errorf("metadata: check: directories[%d].first_entry %d out of range (%d entries)", i, d.FirstEntry, ne)
		case d.SelfEntry > ne:
			return fmt.Errorf("metadata: check: directories[%d].self_entry %d out of range (%d entries)", i, d.SelfEntry, ne)
		case d.ParentEntry >= ne:
			return fmt.Errorf("metadata: check: directories[%d].parent_entry %d out of range (%d entries)", i, d.ParentEntry, ne)
		case d.FirstEntry == d.ParentEntry:
			return fmt.Errorf("metadata: check: directories[%d]: first_entry == parent_entry == %d", i, d.FirstEntry)
		}
		if i == 0 || i == nd {
			if d.ParentEntry != 0 {
				return fmt.Errorf("metadata: check: directories[%d].parent_entry %d, must be 0 for the root and the sentinel", i, d.ParentEntry)
			}
			if i == 0 && d.SelfEntry != 0 {
				return fmt.Errorf("metadata: check: directories[0].self_entry %d, must be 0 for the root", d.SelfEntry)
			}
			continue
		}
		// The stored links must agree with the tree the entries describe
		// (2.3+: entry indexes; older images: the parent directory inode).
		want := f.parent[i]
		if f.v23 {
			want = f.selfEnt[want]
		}
		if d.ParentEntry != want {
			return fmt.Errorf("metadata: check: directories[%d].parent_entry %d, entries say %d", i, d.ParentEntry, want)
		}
		if hasSelf {
			if d.SelfEntry != f.selfEnt[i] {
				return fmt.Errorf("metadata: check: directories[%d].self_entry %d, entries say %d", i, d.SelfEntry, f.selfEnt[i])
			}
			if d.FirstEntry == d.SelfEntry || d.SelfEntry == d.ParentEntry {
				return fmt.Errorf("metadata: check: directories[%d]: self_entry %d collides with first/parent entry", i, d.SelfEntry)
			}
		}
	}
	return nil
}

// nameScan is one part of the scan of the names table: whether names
// lo..hi-1 are each greater than the one before, and which of them are
// invalid as entry names.
type nameScan struct {
	run    func() error
	sorted bool
	bad    []uint32
	err    error
}

// nameTableScans splits the scan of the names table into parts.
func (f *FS) nameTableScans(parts int) []*nameScan {
	n := uint32(f.names.len())
	var scans []*nameScan
	for k := range parts {
		lo, hi := uint32(uint64(n)*uint64(k)/uint64(parts)), uint32(uint64(n)*uint64(k+1)/uint64(parts))
		if lo == hi {
			continue
		}
		sc := &nameScan{}
		sc.run = func() error {
			sc.sorted, sc.bad = f.scanNames(lo, hi)
			return nil
		}
		scans = append(scans, sc)
	}
	return scans
}

// scanNames reports whether names lo..hi-1 are each strictly greater
// than the one before (name lo is compared with name lo-1) and returns
// the invalid ones ("", ".", ".."; a sorted table holds at most three).
func (f *FS) scanNames(lo, hi uint32) (sorted bool, bad []uint32) {
	prev, cur := make([]byte, 0, 2*maxNameLen), make([]byte, 0, 2*maxNameLen)
	if lo > 0 {
		prev = f.names.appendName(prev, lo-1)
	}
	sorted = true
	for i := lo; i < hi; i++ {
		cur = f.names.appendName(cur[:0], i)
		if i > 0 && bytes.Compare(prev, cur) >= 0 {
			return false, nil
		}
		if len(cur) <= 2 {
			if n := string(cur); n == "" || n == "." || n == ".." {
				bad = append(bad, i)
			}
		}
		prev, cur = cur, prev
	}
	return sorted, bad
}

// mergeNameScans combines the parts' results.
func mergeNameScans(scans []*nameScan) (sorted bool, bad []uint32, err error) {
	sorted = true
	for _, sc := range scans {
		if sc.err != nil {
			return false, nil, sc.err
		}
		sorted = sorted && sc.sorted
		bad = append(bad, sc.bad...)
	}
	if !sorted {
		bad = nil
	}
	return sorted, bad, nil
}

// nameOrderTasks splits the name order check into about parts tasks of
// whole directories with similar numbers of entries. sorted says the
// names table is strictly sorted, bad lists its invalid names then.
func (f *FS) nameOrderTasks(parts int, sorted bool, bad []uint32) []func() error {
	nd := f.rank[1]
	ne := uint64(f.dirFirst[nd])
	var tasks []func() error
	lo := uint32(0)
	for k := 1; k <= parts && lo < nd; k++ {
		hi := nd
		if k < parts {
			target := uint32(ne * uint64(k) / uint64(parts))
			hi = uint32(sort.Search(int(nd), func(d int) bool { return f.dirFirst[d] >= target }))
			hi = max(hi, lo+1)
		}
		d0, d1 := lo, hi
		if sorted {
			tasks = append(tasks, func() error { return f.checkNameIndexOrder(d0, d1, bad) })
		} else {
			tasks = append(tasks, func() error { return f.checkNameOrder(d0, d1) })
		}
		lo = hi
	}
	return tasks
}

// checkNameIndexOrder is checkNameOrder for a strictly sorted names
// table, where names are in order exactly when their indexes are, and
// bad holds the table's invalid names: no name needs decoding.
func (f *FS) checkNameIndexOrder(d0, d1 uint32, bad []uint32) error {
	var nb [batchLen]uint32
	for d := d0; d < d1; d++ {
		b, e := f.dirFirst[d], f.dirFirst[d+1]
		var prev uint32
		for lo := b; lo < e; lo += batchLen {
			n := min(batchLen, e-lo)
			f.ents.fillNameIndexes(lo, nb[:n])
			for k, ni := range nb[:n] {
				if lo+uint32(k) > b && ni <= prev {
					return fmt.Errorf("metadata: check: directory %d: entries %q and %q not strictly sorted", d, f.names.at(prev), f.names.at(ni))
				}
				for _, x := range bad {
					if ni == x {
						return fmt.Errorf("metadata: check: directory %d: invalid name %q", d, f.names.at(ni))
					}
				}
				prev = ni
			}
		}
	}
	return nil
}

// validateNames checks where every name of an FSST names table lies,
// when NewFS left that to it, and its codes: the error is the first a
// scan in order meets, as resolveStrings reports with validate.
func (f *FS) validateNames() error {
	if f.names.dec == nil {
		return nil
	}
	st, n := f.md.CompactNames, f.names.len()
	bad, rangeErr := n, error(nil)
	if f.names.idx != nil {
		bad, rangeErr = st.offsets(n, nil, "compact_names")
	}
	if err := validateFSST(&f.names, st, bad, "compact_names", maxNameLen); err != nil {
		return err
	}
	return rangeErr
}

// checkNameOrder checks that the names of directories d0..d1-1 are valid,
// sorted and unique (lookups binary-search them). Each name is decoded
// once and compared with the one before it; compressed names have their
// place and codes checked first, since after CheckLazy nothing else has.
func (f *FS) checkNameOrder(d0, d1 uint32) error {
	// On the stack: the driver checks each directory on its first lookup,
	// and two heap buffers per directory were the largest part of what
	// its own code allocated in a cold stat of many files.
	var pb, cb [2 * maxNameLen]byte
	prev, cur := pb[:0], cb[:0]
	for d := d0; d < d1; d++ {
		b, e := f.dirFirst[d], f.dirFirst[d+1]
		for i := b; i < e; i++ {
			ni, err := f.checkDirEntry(i)
			if err != nil {
				return err
			}
			if f.names.dec != nil {
				if err := f.names.checkSpan(ni, "compact_names"); err != nil {
					return err
				}
				if err := f.names.dec.validate(f.names.bytesAt(ni), maxNameLen); err != nil {
					return fmt.Errorf("metadata: compact_names: string %d: %w", ni, err)
				}
			}
			cur = f.names.appendName(cur[:0], ni)
			if i > b && bytes.Compare(prev, cur) >= 0 {
				return fmt.Errorf("metadata: check: directory %d: entries %q and %q not strictly sorted", d, string(prev), string(cur))
			}
			if len(cur) <= 2 {
				if n := string(cur); n == "" || n == "." || n == ".." {
					return fmt.Errorf("metadata: check: directory %d: invalid name %q", d, n)
				}
			}
			prev, cur = cur, prev
		}
	}
	return nil
}

// appendName appends string i to b, whatever the kind of table.
func (s *strTab) appendName(b []byte, i uint32) []byte {
	if s.dec != nil {
		return s.appendAt(b, i)
	}
	return append(b, s.at(i)...)
}

// checkTree checks that the directories form one tree and that no entry
// lies outside them; with full, also that every inode is named by an
// entry.
func (f *FS) checkTree(full bool) error {
	if full {
		if err := f.checkReferenced(); err != nil {
			return err
		}
	}
	// Directories must form a tree rooted at 0: every one reachable. Each
	// has exactly one parent entry (NewFS), so a directory is reachable
	// when following parents leads to the root, and unreachable ones sit
	// on or below a cycle.
	const (
		unknown = iota
		onPath
		reached
		cut
	)
	state := make([]uint8, f.rank[1])
	state[0] = reached
	var path []uint32
	for d := range f.rank[1] {
		path = path[:0]
		c := d
		for state[c] == unknown {
			state[c] = onPath
			path = append(path, c)
			c = f.parent[c]
		}
		res := uint8(reached)
		if state[c] != reached {
			res = cut // a cycle, or a path into one
		}
		for _, p := range path {
			state[p] = res
		}
		if state[d] != reached {
			return fmt.Errorf("metadata: check: directory %d not reachable from root", d)
		}
	}
	// Entries outside every directory's range would be orphans.
	want := uint32(f.ents.len())
	if f.dirFirst[f.rank[1]] != want {
		return fmt.Errorf("metadata: check: directories cover %d of %d entries", f.dirFirst[f.rank[1]], want)
	}
	return nil
}

// checkInodeAttrs checks every inode's indexes and rank, which NewFS
// checks only for legacy images (see rankByBisection).
func (f *FS) checkInodeAttrs() error {
	if !f.v23 {
		return nil
	}
	var rk [6]uint32
	if err := f.scanInodes(&rk); err != nil {
		return err
	}
	if rk != f.rank {
		return fmt.Errorf("metadata: check: inode ranks start at %v, not %v", rk, f.rank)
	}
	return nil
}

// checkSelfEntries checks that each directory's own entry names it
// (NewFS took them from the directories table unread, see selfFromTable).
func (f *FS) checkSelfEntries() error {
	for c := uint32(1); c < f.rank[1]; c++ {
		if ino := f.ents.inodeNum(f.selfEnt[c]); ino != c {
			return fmt.Errorf("metadata: directories[%d].self_entry %d names inode %d", c, f.selfEnt[c], ino)
		}
	}
	return nil
}

// checkReferenced checks that every inode is named by an entry (that a
// directory is named only by its own, checkEntries does).
func (f *FS) checkReferenced() error {
	seen := make([]bool, f.n)
	seen[0] = true
	var ib [batchLen]uint32
	for lo, hi := f.dirFirst[0], f.dirFirst[f.rank[1]]; lo < hi; lo += batchLen {
		c := min(batchLen, hi-lo)
		f.ents.fillInodeNums(lo, ib[:c])
		for _, ino := range ib[:c] {
			seen[ino] = true
		}
	}
	for ino, ok := range seen {
		if !ok {
			return fmt.Errorf("metadata: check: inode %d not referenced by any entry", ino)
		}
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
	var bb, ob, sb [batchLen]uint32
	nc := md.ChunkCount()
	for lo := 0; lo < nc; lo += batchLen {
		n := min(batchLen, nc-lo)
		md.chunkColumn(0, lo, bb[:n])
		md.chunkColumn(1, lo, ob[:n])
		md.chunkColumn(2, lo, sb[:n])
		for k := range n {
			i, c := lo+k, Chunk{Block: bb[k], Offset: ob[k], Size: sb[k]}
			if f.holes && c.Block == f.holeBlk {
				if c.Offset == LargeHoleOffset {
					if uint64(c.Size) >= uint64(len(md.LargeHoleSize)) {
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
			if c.Offset >= bs {
				return fmt.Errorf("metadata: check: chunks[%d]: offset %d out of range (block size %d)", i, c.Offset, bs)
			}
			if uint64(c.Offset)+uint64(c.Size) > uint64(bs) {
				return fmt.Errorf("metadata: check: chunks[%d]: %d+%d exceeds block size %d", i, c.Offset, c.Size, bs)
			}
		}
	}
	ct := &f.chunkTbl
	var tb [batchLen]uint32
	prev := uint32(0)
	for lo := 0; lo < ct.len(); lo += batchLen {
		n := min(batchLen, ct.len()-lo)
		ct.fill(lo, tb[:n])
		for k, x := range tb[:n] {
			if lo+k > 0 && x < prev {
				return fmt.Errorf("metadata: check: chunk_table not sorted at %d", lo+k)
			}
			prev = x
		}
	}
	if last := ct.at(ct.len() - 1); last != uint32(md.ChunkCount()) {
		return fmt.Errorf("metadata: check: chunk_table ends at %d, have %d chunks", last, md.ChunkCount())
	}
	return nil
}

// checkFiles checks the size cache; with full, also the shared files
// table and each file's link count.
func (f *FS) checkFiles(full bool) error {
	if full {
		if err := f.checkSharedTable(); err != nil {
			return err
		}
	}
	if c := f.md.RegFileSizeCache; c != nil {
		for _, kv := range c.SizeLookup {
			if uint64(kv.Key)+1 >= uint64(f.chunkTbl.len()) {
				return fmt.Errorf("metadata: check: size cache key %d out of range", kv.Key)
			}
			b, e := f.chunkTbl.at(int(kv.Key)), f.chunkTbl.at(int(kv.Key+1))
			if uint64(e-b) < c.MinChunkCount {
				return fmt.Errorf("metadata: check: size cache key %d has %d < %d chunks", kv.Key, e-b, c.MinChunkCount)
			}
			var sum uint64
			for k := b; k < e; k++ {
				ch := f.md.ChunkAt(int(k))
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
	if full {
		return f.checkNlinks()
	}
	return nil
}

// checkSharedTable checks that the shared files table counts up from
// 0, each content shared by at least two files, and that the chunk table
// has an entry for each content. Serving relies on none of it: a file's
// index into the shared contents is checked when the file is used.
func (f *FS) checkSharedTable() error {
	// The table must count up from 0, each value at least twice: read
	// in batches, run by run.
	distinct, run := uint32(0), 0
	var sb [batchLen]uint32
	for lo, n := 0, f.shared.len(); lo < n; lo += batchLen {
		c := min(batchLen, n-lo)
		f.shared.fill(lo, sb[:c])
		for _, v := range sb[:c] {
			if run > 0 && v == distinct-1 {
				run++
				continue
			}
			if run == 1 {
				return fmt.Errorf("metadata: check: shared content %d used by only one inode", distinct-1)
			}
			if v != distinct {
				return fmt.Errorf("metadata: check: shared_files_table value %d out of order (want %d)", v, distinct)
			}
			distinct++
			run = 1
		}
	}
	if run == 1 {
		return fmt.Errorf("metadata: check: shared content %d used by only one inode", distinct-1)
	}
	if got := uint64(f.chunkTbl.len()) - 1; got != uint64(f.unique)+uint64(distinct) {
		return fmt.Errorf("metadata: check: chunk_table has %d entries, want %d unique + %d shared contents", got, f.unique, distinct)
	}
	return nil
}

// checkNlinks checks that each file's stored link count equals the
// number of entries naming it.
func (f *FS) checkNlinks() error {
	if !f.opts().InodesHaveNlink {
		return nil
	}
	regs := f.rank[3] - f.rank[2]
	// One byte per file counts its entries: hard links beyond 255
	// are rare and counted on in a map. The counts are garbage once
	// opened; kept small, they add less to the process.
	cnt := make([]uint8, regs)
	var over map[uint32]uint32
	var ib [batchLen]uint32
	for lo, ne := uint32(0), uint32(f.ents.len()); lo < ne; lo += batchLen {
		n := min(batchLen, ne-lo)
		f.ents.fillInodeNums(lo, ib[:n])
		for _, ino := range ib[:n] {
			if ino >= f.rank[2] && ino < f.rank[3] {
				r := ino - f.rank[2]
				if cnt[r] == 255 {
					if over == nil {
						over = map[uint32]uint32{}
					}
					over[r]++
					continue
				}
				cnt[r]++
			}
		}
	}
	for r, c8 := range cnt {
		c := uint64(c8) + uint64(over[uint32(r)])
		ino := f.rank[2] + uint32(r)
		if r%batchLen == 0 && f.v23 {
			// 2.3+: inode ino's attributes are element ino.
			f.md.inodeColumn(fNlink, int(ino), ib[:min(batchLen, len(cnt)-r)])
		}
		var nl uint32
		if f.v23 {
			nl = ib[r%batchLen]
		} else {
			nl = f.md.inodeField(f.attrIndex(ino), fNlink)
		}
		if got := uint64(nl) + 1; got != c {
			return fmt.Errorf("metadata: check: inode %d: nlink %d but %d entries", ino, got, c)
		}
	}
	return nil
}

// checkStrings checks the string tables; without full, a compact
// table's index only for its length, since its ranges were checked in
// NewFS or are checked as they are used.
func (f *FS) checkStrings(full bool) error {
	md := f.orig
	if md.CompactNames != nil && len(md.Names) > 0 {
		return fmt.Errorf("metadata: check: both names and compact_names populated")
	}
	if md.CompactSymlinks != nil && len(md.Symlinks) > 0 {
		return fmt.Errorf("metadata: check: both symlinks and compact_symlinks populated")
	}
	// How many strings each table must hold: one more than the highest
	// index pointing into it (names: -1, unknown, without full, which
	// runs checkEntries).
	wantNames := -1
	if full {
		wantNames = 0
		if f.v23 {
			if f.ents.len() > 1 {
				wantNames = f.namesUsed
			}
		} else if len(md.Inodes) > 1 {
			for _, in := range md.Inodes {
				wantNames = max(wantNames, int(in.NameIndexV22)+1)
			}
		}
	}
	wantLinks := 0
	for _, s := range md.SymlinkTable {
		wantLinks = max(wantLinks, int(s)+1)
	}
	if err := checkStringTable("names", md.Names, md.namesSpan, md.CompactNames, wantNames, maxNameLen, full); err != nil {
		return err
	}
	if err := checkStringTable("symlinks", md.Symlinks, md.symlinksSpan, md.CompactSymlinks, wantLinks, maxSymlinkLen, full); err != nil {
		return err
	}
	// FSST tables are held to these limits as their codes are checked
	// (NewFS for symlinks, validateNames and CheckDir for names).
	if f.names.dec == nil {
		for i := range f.names.len() {
			if n := f.names.strLen(uint32(i)); n > maxNameLen {
				return fmt.Errorf("metadata: check: names[%d]: %d bytes exceeds %d", i, n, maxNameLen)
			}
		}
	}
	if f.links.dec == nil {
		for i := range f.links.len() {
			if s := f.links.at(uint32(i)); len(s) > maxSymlinkLen {
				return fmt.Errorf("metadata: check: symlinks[%d]: %d bytes exceeds %d", i, len(s), maxSymlinkLen)
			}
		}
	}
	return nil
}

// checkStringTable checks one string table (plain or compact) against the
// number of strings the indexes into it need and against its own sizes:
// a compact table's buffer must be exactly what its index or packed
// lengths describe (only with full), a plain table's strings must lie
// back to back.
func checkStringTable(what string, plain []string, span plainSpan, st *StringTable, want, maxLen int, full bool) error {
	if st == nil {
		if want >= 0 && len(plain) != want {
			return fmt.Errorf("metadata: check: %s: %d strings, indexes need %d", what, len(plain), want)
		}
		var total int64
		for i, s := range plain {
			if len(s) > maxLen {
				return fmt.Errorf("metadata: check: %s[%d]: %d bytes exceeds %d", what, i, len(s), maxLen)
			}
			total += int64(len(s))
		}
		if span.known && len(plain) > 0 && span.span != total {
			return fmt.Errorf("metadata: check: %s: strings total %d bytes but their data spans %d bytes", what, total, span.span)
		}
		return nil
	}
	ctab := "compact_" + what
	ni := st.indexLen()
	n := ni
	if !st.PackedIndex {
		if n == 0 && want > 0 {
			return fmt.Errorf("metadata: check: %s: empty index", ctab)
		}
		if n > 0 {
			n--
		}
	}
	if want >= 0 && n != want {
		return fmt.Errorf("metadata: check: %s: %d strings, indexes need %d", ctab, n, want)
	}
	if !full {
		return nil
	}
	var size uint64
	longest, at := uint64(0), 0
	var tb [batchLen]uint32
	if st.PackedIndex {
		for lo := 0; lo < ni; lo += batchLen {
			c := min(batchLen, ni-lo)
			st.indexFill(lo, tb[:c])
			for k, l := range tb[:c] {
				size += uint64(l)
				if uint64(l) > longest {
					longest, at = uint64(l), lo+k
				}
			}
		}
	} else if ni > 0 {
		prev := st.indexAt(0)
		if prev != 0 {
			return fmt.Errorf("metadata: check: %s: index[0] is %d, not 0", ctab, prev)
		}
		for lo := 1; lo < ni; lo += batchLen {
			c := min(batchLen, ni-lo)
			st.indexFill(lo, tb[:c])
			for k, v := range tb[:c] {
				i := lo + k
				if v < prev {
					return fmt.Errorf("metadata: check: %s: index[%d] %d below index[%d] %d", ctab, i, v, i-1, prev)
				}
				if l := uint64(v - prev); l > longest {
					longest, at = l, i-1
				}
				prev = v
			}
		}
		size = uint64(prev)
	}
	if size != uint64(len(st.Buffer)) {
		return fmt.Errorf("metadata: check: %s: index describes %d bytes, buffer has %d", ctab, size, len(st.Buffer))
	}
	if longest > uint64(maxLen) {
		return fmt.Errorf("metadata: check: %s[%d]: stored length %d exceeds %d", ctab, at, longest, maxLen)
	}
	return nil
}

// checkInodes checks the inodes' sub-second times; with full, also each
// file's chunk range, which serving checks when the file is used.
func (f *FS) checkInodes(full bool) error {
	if f.mult >= 1e9 {
		return fmt.Errorf("metadata: check: subsecond multiplier %d >= 1e9", f.mult)
	}
	if f.mult > 0 && f.res != 1 {
		return fmt.Errorf("metadata: check: subsecond times with time resolution %d s", f.res)
	}
	if f.mult > 0 {
		lim := 1e9 / f.mult
		for i := range f.md.InodeCount() {
			in := f.md.InodeAt(i)
			if in.MtimeSubsec >= lim || in.AtimeSubsec >= lim || in.CtimeSubsec >= lim || in.BtimeSubsec >= lim {
				return fmt.Errorf("metadata: check: inodes[%d]: sub-second value out of range", i)
			}
		}
	}
	if full {
		return f.checkChunkRanges()
	}
	return nil
}

// checkChunkRanges checks every regular file's range of chunks.
func (f *FS) checkChunkRanges() error {
	// Files with their own content (the first f.unique regular files)
	// use consecutive chunk_table entries: those are read a batch at a
	// time; shared ones go through chunkRange.
	var tb [batchLen + 1]uint32
	ctl, nc := uint64(f.chunkTbl.len()), uint64(f.md.ChunkCount())
	for lo := uint32(0); lo < f.unique; lo += batchLen {
		n := min(batchLen, f.unique-lo)
		if uint64(lo)+uint64(n) >= ctl {
			for ino := f.rank[2] + lo; ino < f.rank[2]+lo+n; ino++ {
				if _, _, _, err := f.chunkRange(ino); err != nil {
					return fmt.Errorf("metadata: check: %w", err)
				}
			}
			continue
		}
		f.chunkTbl.fill(int(lo), tb[:n+1])
		for k := range n {
			if b, e := tb[k], tb[k+1]; b > e || uint64(e) > nc {
				return fmt.Errorf("metadata: check: metadata: inode %d: chunk range %d..%d invalid (%d chunks)", f.rank[2]+lo+k, b, e, nc)
			}
		}
	}
	// Shared files: the ranges of their contents are checked once, a
	// batch at a time, and then each file's index into them (in a tree of
	// many empty files, millions use one content). Should either fail,
	// chunkRange goes file by file, for the error naming the first inode.
	if f.sharedOK(ctl, nc) {
		return nil
	}
	for ino := f.rank[2] + f.unique; ino < f.rank[3]; ino++ {
		if _, _, _, err := f.chunkRange(ino); err != nil {
			return fmt.Errorf("metadata: check: %w", err)
		}
	}
	return nil
}

// sharedOK reports whether every shared file's chunk range is valid: the
// chunk_table entries of the shared contents, and each file's index into
// them, in the order chunkRange checks them.
func (f *FS) sharedOK(ctl, nc uint64) bool {
	var tb [batchLen + 1]uint32
	for lo := uint64(f.unique); lo+1 < ctl; lo += batchLen {
		n := min(batchLen, ctl-1-lo)
		f.chunkTbl.fill(int(lo), tb[:n+1])
		for k := range n {
			if b, e := tb[k], tb[k+1]; b > e || uint64(e) > nc {
				return false
			}
		}
	}
	var sb [batchLen]uint32
	for lo, ns := 0, f.shared.len(); lo < ns; lo += batchLen {
		n := min(batchLen, ns-lo)
		f.shared.fill(lo, sb[:n])
		for _, v := range sb[:n] {
			if idx := f.unique + v; idx < f.unique || uint64(idx)+1 >= ctl {
				return false
			}
		}
	}
	return true
}

// BlockNeed is how much of one data block the chunks use: the highest
// chunk end and the chunk that reaches it (-1: no chunk uses the block).
type BlockNeed struct {
	End   uint64
	Chunk int
}

// BlockNeeds checks that every data chunk names one of the image's
// nblocks blocks and returns, per block, the extent the chunks need. The
// block sizes are only known once a block is decompressed, so callers
// compare each block against its need when they first load it.
func (f *FS) BlockNeeds(nblocks int) ([]BlockNeed, error) {
	need := make([]BlockNeed, nblocks)
	for i := range need {
		need[i].Chunk = -1
	}
	var bb, ob, sb [batchLen]uint32
	nc := f.md.ChunkCount()
	for lo := 0; lo < nc; lo += batchLen {
		n := min(batchLen, nc-lo)
		f.md.chunkColumn(0, lo, bb[:n])
		f.md.chunkColumn(1, lo, ob[:n])
		f.md.chunkColumn(2, lo, sb[:n])
		for k := range n {
			blk := bb[k]
			if f.holes && blk == f.holeBlk {
				continue
			}
			if int64(blk) >= int64(nblocks) {
				return nil, fmt.Errorf("metadata: check: chunks[%d]: block %d out of range (%d blocks)", lo+k, blk, nblocks)
			}
			if end := uint64(ob[k]) + uint64(sb[k]); need[blk].Chunk < 0 || end > need[blk].End {
				need[blk] = BlockNeed{End: end, Chunk: lo + k}
			}
		}
	}
	return need, nil
}

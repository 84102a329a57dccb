package metadata

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// File type bits of st_mode, as DwarFS stores them (the Linux values);
// every package that interprets Inode.Mode uses these.
const (
	ModeType    = 0o170000 // mask of the type bits
	ModeSocket  = 0o140000
	ModeSymlink = 0o120000
	ModeRegular = 0o100000
	ModeBlock   = 0o060000
	ModeDir     = 0o040000
	ModeChar    = 0o020000
	ModeFIFO    = 0o010000
)

// Limits of compact string tables enforced by upstream's full check.
const (
	maxNameLen    = 512
	maxSymlinkLen = 4096
)

// knownFeatures lists the metadata features this reader implements.
var knownFeatures = map[string]bool{"sparsefiles": true}

// Time is a timestamp with nanosecond part.
type Time struct {
	Sec  int64
	Nsec uint32
}

// Inode holds the attributes of one inode as the dwarfs FUSE driver
// reports them.
type Inode struct {
	Num                        uint32
	Mode                       uint32 // full st_mode (type bits + permissions)
	Uid, Gid                   uint32
	Nlink                      uint32
	Size                       int64 // regular: file size; symlink: target length; dir: number of entries; others 0
	AllocatedSize              int64 // regular: size minus holes
	Atime, Mtime, Ctime, Btime Time
	HasBtime                   bool
	Rdev                       uint64 // devices only
}

// Entry is one directory entry.
type Entry struct {
	Name string
	Ino  uint32
}

// ChunkRef is one piece of a regular file's content. Hole: Size bytes of
// zeros, Block/Offset meaningless.
type ChunkRef struct {
	Block  uint32
	Offset uint32
	Size   uint64
	Hole   bool
}

// FS is a read-only filesystem view over decoded metadata. All tables are
// validated or normalised in NewFS so that accessors cannot index out of
// range.
type FS struct {
	md        *Metadata
	orig      *Metadata
	v23       bool
	n         uint32    // number of inodes
	rank      [6]uint32 // first inode of ranks 0..4, then n
	ents      entTab    // the 2.3+ model's dir_entries, or built from legacy inodes
	dirFirst  []uint32  // len numDirs+1
	parent    []uint32  // parent inode per directory
	selfEnt   []uint32  // own entry index per directory
	names     strTab
	links     strTab
	chunkTbl  u32Tab
	shared    u32Tab
	unique    uint32   // U: regular files with their own chunk_table entry
	namesUsed int      // one more than the highest name index of any entry (checkEntries)
	nlinks    []uint32 // per regular file, counted from entries (nil if stored)
	res       uint64
	mult      uint64
	sizes     map[uint32]uint64
	allocs    map[uint32]uint64
	holes     bool
	holeBlk   uint32
	winSep    bool

	checkOnce sync.Once
	checkErr  error
	// dirOK has bit d set once directory d's entries and names are
	// checked (CheckDir); allDirs is set once Check has passed, which
	// checks them all.
	dirOK   []atomic.Uint32
	allDirs atomic.Bool

	thawOnce sync.Once
	thawed   *Metadata // Metadata's result
}

// NewFS validates and normalises md (unpacking packed tables, rebuilding
// parent/self entries, resolving string tables) and returns a view. md is
// not modified. Images using unknown features are refused.
//
// It reads as little of a large image as it can, so that a mount starts
// without reading every inode and entry: what it leaves is checked by
// Check, and each part as it is used (an inode by Inode and Mode, a
// directory's entries and names by CheckDir, which every reader of a
// directory calls first, a file's chunks by FileChunks). An FS no Check
// has passed never reads a part that is out of range.
func NewFS(md *Metadata) (*FS, error) {
	if md == nil {
		return nil, errors.New("metadata: nil metadata")
	}
	var unknown []string
	for _, f := range md.Features {
		if !knownFeatures[f] {
			unknown = append(unknown, f)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("metadata: file system uses unsupported features: %s", strings.Join(unknown, ", "))
	}
	f := &FS{orig: md, v23: md.HasDirEntries, res: 1}
	nm := *md
	f.md = &nm
	if md.Options != nil {
		o := *md.Options
		nm.Options = &o
	}
	// The inodes and the string tables are independent and, in a large
	// image, each a pass over a few MiB: they are read side by side. An
	// error of the inodes wins, as it would in sequence.
	strs := make(chan error, 1)
	go func() { strs <- runCheck(f.initStrings) }()
	err := f.initInodes()
	if serr := <-strs; err == nil {
		err = serr
	}
	if err != nil {
		return nil, err
	}
	steps := []func() error{f.initEntries, f.initDirs, f.initFiles, f.initMisc}
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, err
		}
	}
	f.dirOK = make([]atomic.Uint32, (f.rank[1]+31)/32)
	return f, nil
}

func (f *FS) opts() *FsOptions {
	if f.md.Options == nil {
		return &FsOptions{}
	}
	return f.md.Options
}

// attrIndex returns the index of the inode_data element carrying inode
// ino's attributes.
func (f *FS) attrIndex(ino uint32) int {
	if f.v23 {
		return int(ino)
	}
	return int(f.md.EntryTableV22[ino])
}

// attr returns the inode_data element carrying inode ino's attributes.
func (f *FS) attr(ino uint32) InodeData { return f.md.InodeAt(f.attrIndex(ino)) }

func (f *FS) mode(ino uint32) uint32 { return f.md.Modes[f.md.inodeField(f.attrIndex(ino), fMode)] }

func rankOf(mode uint32) int {
	switch mode & ModeType {
	case ModeDir:
		return 0
	case ModeSymlink:
		return 1
	case ModeRegular:
		return 2
	case ModeChar, ModeBlock:
		return 3
	case ModeSocket, ModeFIFO:
		return 4
	}
	return -1
}

func (f *FS) initInodes() error {
	md := f.md
	var n int
	if f.v23 {
		n = md.InodeCount()
	} else {
		n = len(md.EntryTableV22)
		for ino, e := range md.EntryTableV22 {
			if uint64(e) >= uint64(len(md.Inodes)) {
				return fmt.Errorf("metadata: entry_table_v2_2[%d] = %d out of range (%d inodes)", ino, e, len(md.Inodes))
			}
		}
	}
	if n == 0 {
		return errors.New("metadata: no inodes")
	}
	if uint64(n) > 1<<32-1 {
		return fmt.Errorf("metadata: too many inodes (%d)", n)
	}
	f.n = uint32(n)
	if f.v23 {
		if err := f.rankByBisection(); err != nil {
			return err
		}
	} else if err := f.scanInodes(&f.rank); err != nil {
		return err
	}
	if f.rank[1] == 0 {
		return errors.New("metadata: root inode is not a directory")
	}
	err := f.checkRankCounts()
	if err != nil && f.v23 {
		// Ranks out of order are the likelier fault, and bisection does
		// not see it: a scan names the inode.
		var rk [6]uint32
		if serr := f.scanInodes(&rk); serr != nil {
			return serr
		}
	}
	return err
}

// checkRankCounts makes the four cheap count checks upstream performs on
// every open (§3.3).
func (f *FS) checkRankCounts() error {
	md := f.md
	if len(md.Directories)-1 != int(f.rank[1]) {
		return fmt.Errorf("metadata: directories: %d entries for %d directories (+1 sentinel)", len(md.Directories), f.rank[1])
	}
	if len(md.SymlinkTable) != int(f.rank[2]-f.rank[1]) {
		return fmt.Errorf("metadata: symlink_table: %d entries for %d symlinks", len(md.SymlinkTable), f.rank[2]-f.rank[1])
	}
	if !md.HasSharedFilesTable && md.chunkTableLen()-1 != int(f.rank[3]-f.rank[2]) {
		return fmt.Errorf("metadata: chunk_table: %d entries for %d regular files (+1 sentinel)", md.chunkTableLen(), f.rank[3]-f.rank[2])
	}
	if md.HasDevices && len(md.Devices) != int(f.rank[4]-f.rank[3]) {
		return fmt.Errorf("metadata: devices: %d entries for %d device inodes", len(md.Devices), f.rank[4]-f.rank[3])
	}
	return nil
}

// scanInodes checks every inode's mode, owner and group index and that
// the inodes are in rank order, and stores where each rank starts in rk.
// NewFS runs it for legacy images; for others, whose ranks it finds by
// bisection, Check does (checkInodeAttrs).
func (f *FS) scanInodes(rk *[6]uint32) error {
	md := f.md
	// In 2.3+ images inode i's attributes are element i, so the ranks
	// are found in the same pass as the index checks; an index error
	// still wins over a rank error found earlier.
	var rankErr error
	cur := 0
	rank := func(ino uint32, m uint32) {
		r := rankOf(m)
		switch {
		case r < 0:
			rankErr = fmt.Errorf("metadata: inode %d has unknown file type %#o", ino, m&ModeType)
		case r < cur:
			rankErr = fmt.Errorf("metadata: inode %d (rank %d) out of rank order", ino, r)
		}
		for ; cur < r; cur++ {
			rk[cur+1] = ino
		}
	}
	var mb, ob, gb [batchLen]uint32
	mb0, r0 := uint32(0), -1 // the type and rank of the last inode ranked
	cnt := md.InodeCount()
	for lo := 0; lo < cnt; lo += batchLen {
		nb := min(batchLen, cnt-lo)
		md.inodeColumn(fMode, lo, mb[:nb])
		md.inodeColumn(fOwner, lo, ob[:nb])
		md.inodeColumn(fGroup, lo, gb[:nb])
		for k := range nb {
			i := lo + k
			if m := mb[k]; uint64(m) >= uint64(len(md.Modes)) {
				return fmt.Errorf("metadata: inodes[%d].mode_index %d out of range (%d modes)", i, m, len(md.Modes))
			}
			if o := ob[k]; len(md.Uids) > 0 && uint64(o) >= uint64(len(md.Uids)) {
				return fmt.Errorf("metadata: inodes[%d].owner_index %d out of range (%d uids)", i, o, len(md.Uids))
			}
			if g := gb[k]; len(md.Gids) > 0 && uint64(g) >= uint64(len(md.Gids)) {
				return fmt.Errorf("metadata: inodes[%d].group_index %d out of range (%d gids)", i, g, len(md.Gids))
			}
			// Most inodes are of the type of the one before.
			if m := md.Modes[mb[k]]; f.v23 && rankErr == nil && (m&ModeType != mb0 || r0 < 0) {
				rank(uint32(i), m)
				mb0, r0 = m&ModeType, rankOf(m)
			}
		}
	}
	if !f.v23 {
		for ino := range f.n {
			if rankErr == nil {
				rank(ino, f.mode(ino))
			}
		}
	}
	if rankErr != nil {
		return rankErr
	}
	for ; cur < 5; cur++ {
		rk[cur+1] = f.n
	}
	return nil
}

// rankByBisection finds where each rank starts in a 2.3+ image by
// bisection over the inodes' types, which the format keeps in rank
// order: it reads a few inodes instead of all of them. Each inode is
// checked against its rank, and its indexes, when it is used (Inode,
// Mode); Check checks them all.
func (f *FS) rankByBisection() error {
	var err error
	rankAt := func(ino uint32) int {
		r, e := f.inodeRank(ino)
		if e != nil && err == nil {
			err = e
		}
		return r
	}
	// The root first: it must be a directory, and its mode index is
	// the one a table without modes reports.
	_ = rankAt(0)
	if err != nil {
		return err
	}
	lo := uint32(0)
	for r := 1; r <= 4; r++ {
		lo += uint32(sort.Search(int(f.n-lo), func(k int) bool { return err != nil || rankAt(lo+uint32(k)) >= r }))
		if err != nil {
			return err
		}
		f.rank[r] = lo
	}
	f.rank[5] = f.n
	return nil
}

// checkMode checks inode ino's mode index mi and that its type is of the
// rank the inode's number says; with its owner and group indexes, what
// rankByBisection leaves to an inode's use.
func (f *FS) checkMode(ino, mi uint32) error {
	r, err := f.modeRank(ino, mi)
	if err != nil {
		return err
	}
	if ino < f.rank[r] || ino >= f.rank[r+1] {
		return fmt.Errorf("metadata: inode %d (rank %d) out of rank order", ino, r)
	}
	return nil
}

// checkAttrs is checkMode with the owner and group indexes.
func (f *FS) checkAttrs(ino uint32, a *InodeData) error {
	if err := f.checkMode(ino, a.ModeIndex); err != nil {
		return err
	}
	md := f.md
	if len(md.Uids) > 0 && uint64(a.OwnerIndex) >= uint64(len(md.Uids)) {
		return fmt.Errorf("metadata: inodes[%d].owner_index %d out of range (%d uids)", f.attrIndex(ino), a.OwnerIndex, len(md.Uids))
	}
	if len(md.Gids) > 0 && uint64(a.GroupIndex) >= uint64(len(md.Gids)) {
		return fmt.Errorf("metadata: inodes[%d].group_index %d out of range (%d gids)", f.attrIndex(ino), a.GroupIndex, len(md.Gids))
	}
	return nil
}

// inodeRank returns the rank of inode ino's type, checking its mode
// index.
func (f *FS) inodeRank(ino uint32) (int, error) {
	return f.modeRank(ino, f.md.inodeField(f.attrIndex(ino), fMode))
}

// modeRank returns the rank of the type of inode ino, whose mode index
// is mi, checking mi.
func (f *FS) modeRank(ino, mi uint32) (int, error) {
	md := f.md
	if uint64(mi) >= uint64(len(md.Modes)) {
		return 0, fmt.Errorf("metadata: inodes[%d].mode_index %d out of range (%d modes)", f.attrIndex(ino), mi, len(md.Modes))
	}
	m := md.Modes[mi]
	r := rankOf(m)
	if r < 0 {
		return 0, fmt.Errorf("metadata: inode %d has unknown file type %#o", ino, m&ModeType)
	}
	return r, nil
}

// u32Tab is a list of uint32: a slice, or the packed list (DecodeLazy).
type u32Tab struct {
	list []uint32
	view *inodeView
}

func (t *u32Tab) len() int {
	if t.view != nil {
		return t.view.n
	}
	return len(t.list)
}

func (t *u32Tab) at(i int) uint32 {
	if t.view != nil {
		return uint32(t.view.get(i, 0))
	}
	return t.list[i]
}

// fill stores elements lo, lo+1, ... in dst.
func (t *u32Tab) fill(lo int, dst []uint32) {
	if t.view != nil {
		t.view.fill(0, lo, dst)
		return
	}
	copy(dst, t.list[lo:])
}

// entTab is the directory entries table: a slice, or the packed list
// (DecodeLazy), which is 8 bytes an entry less.
type entTab struct {
	list []DirEntry
	view *inodeView
}

func (t *entTab) len() int {
	if t.view != nil {
		return t.view.n
	}
	return len(t.list)
}

func (t *entTab) at(i uint32) DirEntry {
	if t.view != nil {
		return t.view.dirEntry(int(i))
	}
	return t.list[i]
}

// nameIndex returns entry i's name index alone.
func (t *entTab) nameIndex(i uint32) uint32 {
	if t.view != nil {
		return uint32(t.view.get(int(i), 0))
	}
	return t.list[i].NameIndex
}

// inodeNum returns entry i's inode number alone.
func (t *entTab) inodeNum(i uint32) uint32 {
	if t.view != nil {
		return uint32(t.view.get(int(i), 1))
	}
	return t.list[i].InodeNum
}

// fillNameIndexes stores the name indexes of entries lo, lo+1, ... in
// dst; fillInodeNums their inode numbers.
func (t *entTab) fillNameIndexes(lo uint32, dst []uint32) {
	if t.view != nil {
		t.view.fill(0, int(lo), dst)
		return
	}
	for k := range dst {
		dst[k] = t.list[int(lo)+k].NameIndex
	}
}

func (t *entTab) fillInodeNums(lo uint32, dst []uint32) {
	if t.view != nil {
		t.view.fill(1, int(lo), dst)
		return
	}
	for k := range dst {
		dst[k] = t.list[int(lo)+k].InodeNum
	}
}

// rng yields entries b..e-1, numbered from 0.
func (t *entTab) rng(b, e uint32) iter.Seq2[int, DirEntry] {
	return func(yield func(int, DirEntry) bool) {
		for i := b; i < e; i++ {
			if !yield(int(i-b), t.at(i)) {
				return
			}
		}
	}
}

// all yields every entry.
func (t *entTab) all() iter.Seq2[int, DirEntry] { return t.rng(0, uint32(t.len())) }

// strTab is a resolved string table. Plain tables keep their strings.
// Compact tables without FSST are copied into one string that the elements
// are slices of, which costs the text plus four bytes per string instead
// of a string header and an allocation each. FSST-compressed tables stay
// compressed (validated once) and are decoded on access: decoded names of
// a large image are several times the compressed buffer, and a lookup
// decodes only the few names its binary search touches.
type strTab struct {
	list []string   // plain table
	all  string     // compact table: the strings back to back
	off  []uint32   // compact table: string i is all[off[i]:off[i+1]] (or buf's, with dec)
	idx  *inodeView // FSST table with a packed plain index: off, read in place
	buf  []byte     // FSST table: the compressed strings back to back
	dec  *fsstDecoder
	max  int // FSST table: longest decoded string
}

func (s *strTab) len() int {
	if s.idx != nil {
		return s.idx.n - 1
	}
	if s.list != nil || len(s.off) == 0 {
		return len(s.list)
	}
	return len(s.off) - 1
}

// span returns where string i of a compact table starts and ends. An
// index read in place may not have been checked yet (see resolveStrings):
// a string outside the buffer is then empty.
func (s *strTab) span(i uint32) (uint32, uint32) {
	if s.idx != nil {
		a, b := s.rawSpan(i)
		if a > b || b > uint32(len(s.buf)) {
			return 0, 0
		}
		return a, b
	}
	return s.off[i], s.off[i+1]
}

// rawSpan is span of an index read in place, as stored.
func (s *strTab) rawSpan(i uint32) (uint32, uint32) {
	return uint32(s.idx.get(int(i), 0)), uint32(s.idx.get(int(i)+1, 0))
}

// checkSpan checks that string i of an index read in place lies in the
// buffer; other tables were checked when they were resolved.
func (s *strTab) checkSpan(i uint32, what string) error {
	if s.idx == nil {
		return nil
	}
	if a, b := s.rawSpan(i); a > b || b > uint32(len(s.buf)) {
		return fmt.Errorf("metadata: %s: string %d range %d..%d outside buffer of %d bytes", what, i, a, b, len(s.buf))
	}
	return nil
}

// fillOffsets stores the offsets lo, lo+1, ... of a compact table in dst
// (string i lies from offset i to offset i+1).
func (s *strTab) fillOffsets(lo int, dst []uint32) {
	if s.idx != nil {
		s.idx.fill(0, lo, dst)
		return
	}
	copy(dst, s.off[lo:])
}

// bytesAt returns the stored bytes of string i of an FSST table.
func (s *strTab) bytesAt(i uint32) []byte {
	a, b := s.span(i)
	return s.buf[a:b]
}

// appendAt appends string i to b (compressed tables only). The string's
// codes were validated before: symlinks when the table was resolved,
// names by Check or, for the names of one directory, CheckDir.
func (s *strTab) appendAt(b []byte, i uint32) []byte {
	return s.dec.appendValid(b, s.bytesAt(i))
}

func (s *strTab) at(i uint32) string {
	if s.list != nil {
		return s.list[i]
	}
	if s.dec != nil {
		var tmp [256]byte
		return string(s.appendAt(tmp[:0], i))
	}
	return s.all[s.off[i]:s.off[i+1]]
}

// cmp compares string i with name without allocating.
func (s *strTab) cmp(i uint32, name string) int {
	if s.dec == nil {
		return strings.Compare(s.at(i), name)
	}
	return s.dec.compareValid(s.bytesAt(i), name)
}

// cmpKey compares string i of a compressed table with key[:n], which
// keyPad zero bytes follow (see fsstDecoder.compareKey).
func (s *strTab) cmpKey(i uint32, key []byte, n int) int {
	return s.dec.compareKey(s.bytesAt(i), key, n)
}

// compare compares strings i and j without allocating.
func (s *strTab) compare(i, j uint32) int {
	if s.dec == nil {
		return strings.Compare(s.at(i), s.at(j))
	}
	var a, b [256]byte
	return bytes.Compare(s.appendAt(a[:0], i), s.appendAt(b[:0], j))
}

// strLen returns the length of string i without allocating.
func (s *strTab) strLen(i uint32) int {
	if s.dec == nil {
		return len(s.at(i))
	}
	var tmp [256]byte
	return len(s.appendAt(tmp[:0], i))
}

// strings returns the table as a slice (allocated for compact tables).
func (s *strTab) strings() []string {
	if s.list != nil || s.len() == 0 {
		return s.list
	}
	out := make([]string, s.len())
	for i := range out {
		out[i] = s.at(uint32(i))
	}
	return out
}

// resolveStrings returns the strings of a plain or compact table. With
// validate, the codes of an FSST table are checked too (see
// validateFSST). Without, an FSST table whose index is read in place is
// not read at all: where its strings lie is checked with their codes
// (FS.validateNames, and checkSpan for the names of one directory).
func resolveStrings(plain []string, st *StringTable, what string, maxLen int, validate bool) (strTab, error) {
	if st == nil {
		return strTab{list: plain}, nil
	}
	n := st.indexLen()
	if !st.PackedIndex {
		if n == 0 {
			return strTab{}, nil
		}
		n--
	}
	if uint64(len(st.Buffer)) > math.MaxUint32 {
		return strTab{}, fmt.Errorf("metadata: %s: buffer larger than 4 GiB", what)
	}
	var dec *fsstDecoder
	if st.Symtab != nil {
		var err error
		if dec, err = newFSSTDecoder(st.Symtab); err != nil {
			return strTab{}, fmt.Errorf("metadata: %s: %w", what, err)
		}
	}
	var out strTab
	if dec != nil && st.packed() && !st.PackedIndex {
		// The index holds the offsets themselves: they are checked here
		// and read in place, not copied.
		out.idx = st.index
	} else {
		out.off = make([]uint32, n+1)
	}
	if out.idx != nil && !validate {
		out.buf, out.dec, out.max = st.Buffer, dec, maxLen
		return out, nil
	}
	bad, rangeErr := st.offsets(n, out.off, what)
	if dec != nil {
		out.buf, out.dec, out.max = st.Buffer, dec, maxLen
		if validate {
			if err := validateFSST(&out, st, bad, what, maxLen); err != nil {
				return strTab{}, err
			}
		}
	}
	if rangeErr != nil {
		return strTab{}, rangeErr
	}
	if dec != nil {
		return out, nil
	}
	// The strings lie back to back: one copy of their span, which the
	// offsets then count from.
	base := out.off[0]
	out.all = string(st.Buffer[base:out.off[n]])
	if base != 0 {
		for i := range out.off {
			out.off[i] -= base
		}
	}
	return out, nil
}

// offsets checks that the n strings of the table lie in the buffer and
// stores in off (unless nil) where they start and end: string i is
// Buffer[off[i]:off[i+1]], from the index or running sums of the packed
// lengths, read in batches. It stops at the first string outside the
// buffer and returns its number and the error; else n and nil.
func (st *StringTable) offsets(n int, off []uint32, what string) (int, error) {
	shift, a := 0, uint64(0)
	if !st.PackedIndex {
		shift, a = 1, uint64(st.indexAt(0))
	}
	size := uint64(len(st.Buffer))
	if off != nil {
		off[0] = uint32(min(a, size))
	}
	var tb [batchLen]uint32
	for lo := 0; lo < n; lo += batchLen {
		c := min(batchLen, n-lo)
		st.indexFill(lo+shift, tb[:c])
		for k, v := range tb[:c] {
			b := uint64(v)
			if st.PackedIndex {
				b += a
			}
			if a > b || b > size {
				return lo + k, fmt.Errorf("metadata: %s: string %d range %d..%d outside buffer of %d bytes", what, lo+k, a, b, size)
			}
			if off != nil {
				off[lo+k+1] = uint32(b)
			}
			a = b
		}
	}
	return n, nil
}

// validateFSST validates the first bad strings of an FSST-compressed
// table, whose offsets are known, in parts side by side (the names of a
// large image are several MiB): the error is the one a scan in order
// meets first.
func validateFSST(out *strTab, st *StringTable, bad int, what string, maxLen int) error {
	parts := min(runtime.GOMAXPROCS(0), max(bad/(64<<10), 1))
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for k := range parts {
		lo, hi := bad*k/parts, bad*(k+1)/parts
		wg.Go(func() {
			errs[k] = runCheck(func() error {
				var ob [batchLen + 1]uint32
				for b := lo; b < hi; b += batchLen {
					c := min(batchLen, hi-b)
					out.fillOffsets(b, ob[:c+1])
					for j := range c {
						if err := out.dec.validate(st.Buffer[ob[j]:ob[j+1]], maxLen); err != nil {
							return fmt.Errorf("metadata: %s: string %d: %w", what, b+j, err)
						}
					}
				}
				return nil
			})
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (f *FS) initStrings() error {
	md := f.md
	var err error
	// The names' codes are checked by Check, or directory by directory
	// after CheckLazy (CheckDir): all of them is a pass over every name
	// of the image, which a mount need not wait for.
	if f.names, err = resolveStrings(md.Names, md.CompactNames, "compact_names", maxNameLen, false); err != nil {
		return err
	}
	if f.links, err = resolveStrings(md.Symlinks, md.CompactSymlinks, "compact_symlinks", maxSymlinkLen, true); err != nil {
		return err
	}
	for i, s := range md.SymlinkTable {
		if uint64(s) >= uint64(f.links.len()) {
			return fmt.Errorf("metadata: symlink_table[%d] = %d out of range (%d symlinks)", i, s, f.links.len())
		}
	}
	return nil
}

func (f *FS) initEntries() error {
	md := f.md
	if f.v23 {
		f.ents = entTab{list: md.DirEntries}
		if md.DirEntries == nil {
			f.ents.view = md.dirEnts
		}
	} else {
		list := make([]DirEntry, len(md.Inodes))
		for i, e := range md.Inodes {
			list[i] = DirEntry{NameIndex: e.NameIndexV22, InodeNum: e.InodeV22}
		}
		f.ents = entTab{list: list}
	}
	if f.ents.len() == 0 {
		return errors.New("metadata: no directory entries")
	}
	if f.ents.at(0).InodeNum != 0 {
		return fmt.Errorf("metadata: root entry refers to inode %d", f.ents.at(0).InodeNum)
	}
	return nil
}

// checkEntries checks that every entry names an inode and a name that
// exist, and a directory only as its own entry, and notes the highest
// name index. NewFS leaves it to Check, and to CheckDir for the entries
// of one directory (checkDirEntry): all of them is a pass over every
// entry of the image.
func (f *FS) checkEntries() error {
	var top uint32 // highest name index
	var nb, ib [batchLen]uint32
	ne, nn := uint32(f.ents.len()), f.names.len()
	for lo := uint32(0); lo < ne; lo += batchLen {
		c := min(batchLen, ne-lo)
		f.ents.fillNameIndexes(lo, nb[:c])
		f.ents.fillInodeNums(lo, ib[:c])
		for k := range c {
			if err := f.entryErr(lo+k, ib[k], nb[k], nn); err != nil {
				return err
			}
			top = max(top, nb[k])
		}
	}
	f.namesUsed = int(top) + 1
	return nil
}

// entryErr checks entry i, naming inode ino and name ni of nn: both must
// exist, and a directory may only be named by its own entry (the root's
// entry names no name). A second link, or a wrong stored self entry (see
// selfFromTable), fails the last rule.
func (f *FS) entryErr(i, ino, ni uint32, nn int) error {
	switch {
	case ino >= f.n:
		return fmt.Errorf("metadata: entry %d: inode %d out of range (%d inodes)", i, ino, f.n)
	case i > 0 && uint64(ni) >= uint64(nn):
		return fmt.Errorf("metadata: entry %d: name index %d out of range (%d names)", i, ni, nn)
	case ino < f.rank[1] && f.selfEnt[ino] != i:
		return fmt.Errorf("metadata: entry %d names directory inode %d, whose own entry is %d", i, ino, f.selfEnt[ino])
	}
	return nil
}

// checkDirEntry is checkEntries for entry i alone; it returns the entry's
// name index.
func (f *FS) checkDirEntry(i uint32) (uint32, error) {
	e := f.ents.at(i)
	return e.NameIndex, f.entryErr(i, e.InodeNum, e.NameIndex, f.names.len())
}

func (f *FS) initDirs() error {
	md := f.md
	nd := f.rank[1]
	first := make([]uint32, nd+1)
	packed := f.opts().PackedDirectories
	var sum uint64
	for i, d := range md.Directories {
		if packed {
			sum += uint64(d.FirstEntry)
			if sum > uint64(f.ents.len()) {
				return fmt.Errorf("metadata: directories: packed first_entry sum exceeds %d entries", f.ents.len())
			}
			first[i] = uint32(sum)
		} else {
			first[i] = d.FirstEntry
		}
	}
	for d := range nd {
		if first[d] > first[d+1] {
			return fmt.Errorf("metadata: directories[%d].first_entry %d > next %d", d, first[d], first[d+1])
		}
	}
	if uint64(first[nd]) > uint64(f.ents.len()) {
		return fmt.Errorf("metadata: directories sentinel first_entry %d exceeds %d entries", first[nd], f.ents.len())
	}
	f.dirFirst = first
	f.parent = make([]uint32, nd)
	f.selfEnt = make([]uint32, nd)
	if ok, err := f.selfFromTable(); ok || err != nil {
		if err != nil {
			return err
		}
		f.normaliseDirs()
		return nil
	}
	found := make([]bool, nd)
	found[0] = true
	var ib [batchLen]uint32
	for d := range nd {
		for lo := first[d]; lo < first[d+1]; lo += batchLen {
			bn := min(batchLen, first[d+1]-lo)
			f.ents.fillInodeNums(lo, ib[:bn])
			for k, c := range ib[:bn] {
				if c >= nd {
					continue
				}
				e := lo + uint32(k)
				if found[c] {
					return fmt.Errorf("metadata: directory inode %d referenced by more than one entry", c)
				}
				found[c] = true
				f.parent[c] = d
				f.selfEnt[c] = e
			}
		}
	}
	for d, ok := range found {
		if !ok {
			return fmt.Errorf("metadata: directory inode %d has no directory entry", d)
		}
	}
	f.normaliseDirs()
	return nil
}

// selfFromTable takes each directory's own entry from a directories
// table that stores them (2.3+ images, unpacked, written since 0.11)
// instead of finding it among every entry of the image: each is checked
// to lie in a directory, whose parent is the directory holding it. That
// it names its directory is checked by Check (checkSelfEntries) and, for
// every directory reached, by CheckDir of its parent, which refuses an
// entry naming a directory other than as that directory's own entry (a
// second link, or a stored self entry that is wrong). It reads no entry:
// on a mount they are not in memory yet. It returns false for a table
// that does not store them.
func (f *FS) selfFromTable() (bool, error) {
	nd, first, dirs := f.rank[1], f.dirFirst, f.md.Directories
	if !f.v23 || f.opts().PackedDirectories || nd < 2 {
		return false, nil
	}
	for _, d := range dirs[1:nd] {
		if d.SelfEntry == 0 {
			return false, nil
		}
	}
	for c := uint32(1); c < nd; c++ {
		s := dirs[c].SelfEntry
		if s < first[0] || s >= first[nd] {
			return false, fmt.Errorf("metadata: directories[%d].self_entry %d outside the directories' entries %d..%d", c, s, first[0], first[nd])
		}
		// The directory whose entries hold s: the last one starting at
		// or before it (empty directories start there too).
		d := sort.Search(int(nd), func(k int) bool { return first[k+1] > s })
		f.parent[c], f.selfEnt[c] = uint32(d), s
	}
	return true, nil
}

// normaliseDirs replaces the directories table with its normalised form.
func (f *FS) normaliseDirs() {
	md, nd, first := f.md, f.rank[1], f.dirFirst
	// Normalised table: unpacked first entries, rebuilt parent/self entries
	// (legacy: parent inode), clean sentinel.
	dirs := make([]Directory, nd+1)
	for d := range nd {
		if f.v23 {
			dirs[d] = Directory{ParentEntry: f.selfEnt[f.parent[d]], FirstEntry: first[d], SelfEntry: f.selfEnt[d]}
		} else {
			dirs[d] = Directory{ParentEntry: f.parent[d], FirstEntry: first[d]}
		}
	}
	dirs[nd] = Directory{FirstEntry: first[nd]}
	md.Directories = dirs
	if md.Options != nil {
		md.Options.PackedDirectories = false
	}
}

func (f *FS) initFiles() error {
	md := f.md
	o := f.opts()
	if o.PackedChunkTable {
		ct := make([]uint32, md.chunkTableLen())
		var sum uint64
		for i := range ct {
			sum += uint64(md.chunkTableAt(i))
			if sum > uint64(md.ChunkCount()) {
				return fmt.Errorf("metadata: chunk_table: packed sum exceeds %d chunks", md.ChunkCount())
			}
			ct[i] = uint32(sum)
		}
		md.Options.PackedChunkTable = false
		md.ChunkTable, md.chunkTbl = ct, nil
	}
	f.chunkTbl = u32Tab{list: md.ChunkTable}
	if md.ChunkTable == nil {
		f.chunkTbl.view = md.chunkTbl
	}
	regs := f.rank[3] - f.rank[2]
	sh := u32Tab{list: md.SharedFilesTable}
	if md.SharedFilesTable == nil {
		sh.view = md.sharedTbl
	}
	if md.HasSharedFilesTable && o.PackedSharedFilesTable {
		var total uint64
		for i := range sh.len() {
			total += uint64(sh.at(i)) + 2
		}
		if total > uint64(regs) {
			return fmt.Errorf("metadata: shared_files_table: packed table expands to %d entries for %d regular files", total, regs)
		}
		full := make([]uint32, 0, total)
		for k := range sh.len() {
			for range uint64(sh.at(k)) + 2 {
				full = append(full, uint32(k))
			}
		}
		md.Options.PackedSharedFilesTable = false
		md.SharedFilesTable, md.sharedTbl = full, nil
		sh = u32Tab{list: full}
	}
	if uint64(sh.len()) > uint64(regs) {
		return fmt.Errorf("metadata: shared_files_table: %d entries for %d regular files", sh.len(), regs)
	}
	f.shared = sh
	f.unique = regs - uint32(sh.len())
	if !o.InodesHaveNlink {
		f.nlinks = make([]uint32, regs)
		for _, e := range f.ents.all() {
			if e.InodeNum >= f.rank[2] && e.InodeNum < f.rank[3] {
				f.nlinks[e.InodeNum-f.rank[2]]++
			}
		}
	}
	if c := md.RegFileSizeCache; c != nil {
		f.sizes = make(map[uint32]uint64, len(c.SizeLookup))
		for _, kv := range c.SizeLookup {
			f.sizes[kv.Key] = kv.Value
		}
		f.allocs = make(map[uint32]uint64, len(c.AllocatedSizeLookup))
		for _, kv := range c.AllocatedSizeLookup {
			f.allocs[kv.Key] = kv.Value
		}
	}
	if md.HoleBlockIndex != nil {
		f.holes = true
		f.holeBlk = *md.HoleBlockIndex
	}
	return nil
}

func (f *FS) initMisc() error {
	o := f.opts()
	if o.TimeResolutionSec != nil {
		if *o.TimeResolutionSec == 0 {
			return errors.New("metadata: options.time_resolution_sec is 0")
		}
		f.res = uint64(*o.TimeResolutionSec)
	}
	if o.SubsecondResolutionNsecMultiplier != nil {
		f.mult = uint64(*o.SubsecondResolutionNsecMultiplier)
	}
	if p := f.md.PreferredPathSeparator; p != nil && *p == '\\' {
		f.winSep = true
	}
	return nil
}

// Metadata returns the normalised metadata: packed tables unpacked (their
// option flags cleared), directories with rebuilt parent/self entries, the
// inodes table thawed (for metadata from DecodeLazy, on the first call).
func (f *FS) Metadata() *Metadata {
	f.thawOnce.Do(func() { f.thawed = f.md.Thawed() })
	return f.thawed
}

// Tables is Metadata without thawing the inodes table: for metadata from
// DecodeLazy, Inodes is nil and InodeAt reads the packed table.
func (f *FS) Tables() *Metadata { return f.md }

// StoredOptions returns the options as the image stores them, or nil:
// Tables' copy marks the tables NewFS unpacked as plain.
func (f *FS) StoredOptions() *FsOptions { return f.orig.Options }

// InodeCount returns the number of inodes.
func (f *FS) InodeCount() int { return int(f.n) }

// BlockSize returns the block size in bytes.
func (f *FS) BlockSize() uint32 { return f.md.BlockSize }

// TimeResolution returns the timestamp resolution in seconds and the
// nanosecond multiplier of sub-second parts (0: none stored).
func (f *FS) TimeResolution() (sec uint32, nsecMultiplier uint32) {
	return uint32(f.res), uint32(f.mult)
}

// Names returns the resolved names table.
func (f *FS) Names() []string { return f.names.strings() }

// Symlinks returns the resolved symlink targets table.
func (f *FS) Symlinks() []string { return f.links.strings() }

func (f *FS) checkIno(ino uint32) error {
	if ino >= f.n {
		return fmt.Errorf("metadata: inode %d out of range (%d inodes): %w", ino, f.n, fs.ErrNotExist)
	}
	return nil
}

// Mode returns the raw st_mode of inode ino, what path resolution needs,
// without reading its other attributes (Inode sums a file's chunks).
func (f *FS) Mode(ino uint32) (uint32, error) {
	if err := f.checkIno(ino); err != nil {
		return 0, err
	}
	mi := f.md.inodeField(f.attrIndex(ino), fMode)
	if err := f.checkMode(ino, mi); err != nil {
		return 0, err
	}
	return f.md.Modes[mi], nil
}

// IsDir reports whether ino is a directory.
func (f *FS) IsDir(ino uint32) bool { return ino < f.rank[1] }

func (f *FS) time(off, sub uint64) Time {
	sec := f.res * (f.md.TimestampBase + off)
	var ns uint64
	if f.mult > 0 {
		ns = sub * f.mult
		sec += ns / 1e9
		ns %= 1e9
	}
	return Time{Sec: int64(sec), Nsec: uint32(ns)}
}

// Inode returns the attributes of inode ino as upstream's getattr does. In
// <= 2.2 images attributes are stored per directory entry; the
// entry_table_v2_2 representative is used, so hard-linked entries may
// differ from what per-entry tools (dwarfsextract) show.
func (f *FS) Inode(ino uint32) (Inode, error) {
	if err := f.checkIno(ino); err != nil {
		return Inode{}, err
	}
	md := f.md
	o := f.opts()
	a := md.inodeAttrs(f.attrIndex(ino), !o.MtimeOnly, o.HasBtime)
	if err := f.checkAttrs(ino, &a); err != nil {
		return Inode{}, err
	}
	in := Inode{Num: ino, Mode: md.Modes[a.ModeIndex], Uid: a.OwnerIndex, Gid: a.GroupIndex, Nlink: 1}
	if len(md.Uids) > 0 {
		in.Uid = md.Uids[a.OwnerIndex]
	}
	if len(md.Gids) > 0 {
		in.Gid = md.Gids[a.GroupIndex]
	}
	in.Mtime = f.time(a.MtimeOffset, a.MtimeSubsec)
	if o.MtimeOnly {
		in.Atime, in.Ctime = in.Mtime, in.Mtime
	} else {
		in.Atime = f.time(a.AtimeOffset, a.AtimeSubsec)
		in.Ctime = f.time(a.CtimeOffset, a.CtimeSubsec)
	}
	if o.HasBtime {
		in.HasBtime = true
		in.Btime = f.time(a.BtimeOffset, a.BtimeSubsec)
	}
	switch {
	case ino < f.rank[1]:
		in.Size = int64(f.dirFirst[ino+1] - f.dirFirst[ino])
	case ino < f.rank[2]:
		in.Size = int64(len(f.links.at(md.SymlinkTable[ino-f.rank[1]])))
	case ino < f.rank[3]:
		size, alloc, err := f.sizes2(ino)
		if err != nil {
			return Inode{}, err
		}
		in.Size, in.AllocatedSize = size, alloc
		in.Nlink = f.nlink(ino)
	case ino < f.rank[4]:
		if i := ino - f.rank[3]; uint64(i) < uint64(len(md.Devices)) {
			in.Rdev = md.Devices[i]
		}
	}
	return in, nil
}

func (f *FS) nlink(ino uint32) uint32 {
	if f.nlinks != nil {
		return f.nlinks[ino-f.rank[2]]
	}
	return f.md.inodeField(f.attrIndex(ino), fNlink) + 1
}

// EntryCount returns how many directory entries refer to ino, which is
// what a real filesystem would report as the link count of a regular file.
func (f *FS) EntryCount(ino uint32) int {
	n := 0
	for _, e := range f.ents.all() {
		if e.InodeNum == ino {
			n++
		}
	}
	return n
}

// chunkRange returns the chunk_table index and the [begin,end) chunk range
// of regular file ino.
func (f *FS) chunkRange(ino uint32) (uint32, uint32, uint32, error) {
	if err := f.checkIno(ino); err != nil {
		return 0, 0, 0, err
	}
	if ino < f.rank[2] || ino >= f.rank[3] {
		return 0, 0, 0, fmt.Errorf("metadata: inode %d is not a regular file", ino)
	}
	r := ino - f.rank[2]
	idx := r
	if r >= f.unique {
		idx = f.unique + f.shared.at(int(r-f.unique))
		if idx < f.unique {
			return 0, 0, 0, fmt.Errorf("metadata: inode %d: shared file index overflows", ino)
		}
	}
	if uint64(idx)+1 >= uint64(f.chunkTbl.len()) {
		return 0, 0, 0, fmt.Errorf("metadata: inode %d: chunk_table index %d out of range (%d entries)", ino, idx, f.chunkTbl.len())
	}
	b, e := f.chunkTbl.at(int(idx)), f.chunkTbl.at(int(idx+1))
	if b > e || uint64(e) > uint64(f.md.ChunkCount()) {
		return 0, 0, 0, fmt.Errorf("metadata: inode %d: chunk range %d..%d invalid (%d chunks)", ino, b, e, f.md.ChunkCount())
	}
	return idx, b, e, nil
}

func (f *FS) chunkRef(c Chunk) (ChunkRef, error) {
	if !f.holes || c.Block != f.holeBlk {
		return ChunkRef{Block: c.Block, Offset: c.Offset, Size: uint64(c.Size)}, nil
	}
	n, err := f.md.HoleLength(c)
	if err != nil {
		return ChunkRef{}, err
	}
	return ChunkRef{Size: n, Hole: true}, nil
}

// FileChunks returns the content pieces of regular file ino, holes
// resolved.
func (f *FS) FileChunks(ino uint32) ([]ChunkRef, error) {
	_, b, e, err := f.chunkRange(ino)
	if err != nil {
		return nil, err
	}
	out := make([]ChunkRef, 0, e-b)
	for i := b; i < e; i++ {
		c := f.md.ChunkAt(int(i))
		r, err := f.chunkRef(c)
		if err != nil {
			return nil, fmt.Errorf("metadata: inode %d: %w", ino, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// sizes2 returns the size and allocated size of regular file ino.
func (f *FS) sizes2(ino uint32) (int64, int64, error) {
	idx, b, e, err := f.chunkRange(ino)
	if err != nil {
		return 0, 0, err
	}
	if s, ok := f.sizes[idx]; ok {
		a, ok := f.allocs[idx]
		if !ok {
			a = s
		}
		return int64(s), int64(a), nil
	}
	var size, alloc uint64
	for i := b; i < e; i++ {
		c := f.md.ChunkAt(int(i))
		r, err := f.chunkRef(c)
		if err != nil {
			return 0, 0, fmt.Errorf("metadata: inode %d: %w", ino, err)
		}
		size += r.Size
		if !r.Hole {
			alloc += r.Size
		}
	}
	return int64(size), int64(alloc), nil
}

// FileSize returns the size of regular file ino.
func (f *FS) FileSize(ino uint32) (int64, error) {
	s, _, err := f.sizes2(ino)
	return s, err
}

// RawReadlink returns the symlink target as stored.
func (f *FS) RawReadlink(ino uint32) (string, error) {
	if err := f.checkIno(ino); err != nil {
		return "", err
	}
	if ino < f.rank[1] || ino >= f.rank[2] {
		return "", fmt.Errorf("metadata: inode %d is not a symlink", ino)
	}
	return f.links.at(f.md.SymlinkTable[ino-f.rank[1]]), nil
}

// Readlink returns the symlink target with '\' separators of images made
// on Windows translated to '/'.
func (f *FS) Readlink(ino uint32) (string, error) {
	s, err := f.RawReadlink(ino)
	if err == nil && f.winSep {
		s = strings.ReplaceAll(s, "\\", "/")
	}
	return s, err
}

func (f *FS) dirRange(dir uint32) (uint32, uint32, error) {
	if err := f.checkIno(dir); err != nil {
		return 0, 0, err
	}
	if dir >= f.rank[1] {
		return 0, 0, fmt.Errorf("metadata: inode %d is not a directory", dir)
	}
	return f.dirFirst[dir], f.dirFirst[dir+1], nil
}

// ReadDir returns the entries of directory dir in stored (sorted) order.
func (f *FS) ReadDir(dir uint32) ([]Entry, error) {
	b, e, err := f.dirRange(dir)
	if err != nil {
		return nil, err
	}
	if err := f.CheckDir(dir); err != nil {
		return nil, err
	}
	out := make([]Entry, 0, e-b)
	if f.names.dec == nil {
		for _, en := range f.ents.rng(b, e) {
			out = append(out, Entry{Name: f.names.at(en.NameIndex), Ino: en.InodeNum})
		}
		return out, nil
	}
	// Compressed names: decode the directory's names into one string that
	// the entries slice, one allocation instead of one per name.
	//
	// A directory's names lie all over the table, so reading one costs
	// two cache misses (its offset, its bytes). Reading all offsets
	// first makes those loads independent of the decoding, so the CPU
	// overlaps their misses instead of waiting for them one by one
	// (about twice as fast on a tree of a million files).
	ends := make([]int, e-b)
	spans := make([]uint64, e-b) // start<<32 | end in the compressed buffer
	for k, en := range f.ents.rng(b, e) {
		a, b := f.names.span(en.NameIndex)
		spans[k] = uint64(a)<<32 | uint64(b)
	}
	buf := make([]byte, 0, 16*len(spans))
	for k, sp := range spans {
		buf = f.names.dec.appendValid(buf, f.names.buf[sp>>32:uint32(sp)])
		ends[k] = len(buf)
	}
	all, start := string(buf), 0
	for k, en := range f.ents.rng(b, e) {
		out = append(out, Entry{Name: all[start:ends[k]], Ino: en.InodeNum})
		start = ends[k]
	}
	return out, nil
}

// Lookup finds name in directory dir by binary search.
func (f *FS) Lookup(dir uint32, name string) (uint32, bool) {
	b, e, err := f.dirRange(dir)
	if err != nil || f.CheckDir(dir) != nil {
		return 0, false
	}
	if f.names.dec == nil {
		for b < e {
			m := b + (e-b)/2
			switch c := f.names.cmp(f.ents.nameIndex(m), name); {
			case c == 0:
				return f.ents.inodeNum(m), true
			case c < 0:
				b = m + 1
			default:
				e = m
			}
		}
		return 0, false
	}
	// Compressed names: the name, zero-padded once, is compared with
	// each stored name a symbol at a time (fsstDecoder.compareKey).
	if len(name) > maxNameLen {
		return 0, false // longer than any name the table can hold
	}
	var buf [maxNameLen + keyPad]byte
	key := buf[:len(name)+keyPad]
	copy(key, name)
	for b < e {
		m := b + (e-b)/2
		switch c := f.names.cmpKey(f.ents.nameIndex(m), key, len(name)); {
		case c == 0:
			return f.ents.inodeNum(m), true
		case c < 0:
			b = m + 1
		default:
			e = m
		}
	}
	return 0, false
}

// LookupPath resolves a '/'-separated path relative to the root; "" and
// "." are the root.
func (f *FS) LookupPath(p string) (uint32, error) {
	ino := uint32(0)
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			ino = f.Parent(ino)
			continue
		}
		if !f.IsDir(ino) {
			return 0, fmt.Errorf("metadata: %q: not a directory: %w", p, fs.ErrNotExist)
		}
		if err := f.CheckDir(ino); err != nil {
			return 0, err
		}
		next, ok := f.Lookup(ino, c)
		if !ok {
			return 0, fmt.Errorf("metadata: %q: %w", p, fs.ErrNotExist)
		}
		ino = next
	}
	return ino, nil
}

// Parent returns the parent directory of directory dir (root: 0). For
// non-directories it returns 0.
func (f *FS) Parent(dir uint32) uint32 {
	if dir >= f.rank[1] {
		return 0
	}
	return f.parent[dir]
}

// Walk visits every inode reachable from the root depth-first in
// directory order, the root first with path "". Returning fs.SkipDir from
// fn for a directory skips its children.
func (f *FS) Walk(fn func(path string, ino uint32, e Inode) error) error {
	err := f.walk("", 0, fn)
	if errors.Is(err, fs.SkipDir) {
		return nil
	}
	return err
}

func (f *FS) walk(path string, ino uint32, fn func(string, uint32, Inode) error) error {
	in, err := f.Inode(ino)
	if err != nil {
		return err
	}
	if err := fn(path, ino, in); err != nil {
		return err
	}
	if ino >= f.rank[1] {
		return nil
	}
	if err := f.CheckDir(ino); err != nil {
		return err
	}
	for _, en := range f.ents.rng(f.dirFirst[ino], f.dirFirst[ino+1]) {
		p := f.names.at(en.NameIndex)
		if path != "" {
			p = path + "/" + p
		}
		if err := f.walk(p, en.InodeNum, fn); err != nil {
			if errors.Is(err, fs.SkipDir) && en.InodeNum < f.rank[1] {
				continue
			}
			return err
		}
	}
	return nil
}

package metadata

import (
	"encoding/binary"
	"fmt"
)

// zeroBitSlack is how many zero-bit items an array may claim beyond the
// number of data bits. Zero-bit items cost no storage, so their count can
// only be bounded relative to the data size plus a small constant.
const zeroBitSlack = 4096

// Decode parses the METADATA_V2_SCHEMA payload and thaws the METADATA_V2
// payload with it into a Metadata value. Layout widths come from the schema
// only; every read is range-checked against data.
func Decode(schema, data []byte) (*Metadata, error) {
	s, err := DecodeSchema(schema)
	if err != nil {
		return nil, err
	}
	return DecodeWithSchema(s, data)
}

// DecodeWithSchema thaws data using an already decoded schema.
func DecodeWithSchema(s *Schema, data []byte) (*Metadata, error) {
	return decodeWithSchema(s, data, false)
}

// DecodeLazy is Decode for readers: in 2.3+ images the inodes table, the
// largest by far, is not thawed but read from data on use (InodeAt), so
// Inodes is nil and data must not be modified while md is in use. Thawed
// returns the complete model.
func DecodeLazy(schema, data []byte) (*Metadata, error) {
	s, err := DecodeSchema(schema)
	if err != nil {
		return nil, err
	}
	return decodeWithSchema(s, data, true)
}

func decodeWithSchema(s *Schema, data []byte, lazy bool) (*Metadata, error) {
	if s == nil || s.RootLayout < 0 || int(s.RootLayout) >= len(s.Layouts) {
		return nil, fmt.Errorf("metadata: schema has no root layout")
	}
	for i := range s.Layouts {
		for _, f := range s.Layouts[i].Fields {
			if f.LayoutID < 0 || int(f.LayoutID) >= len(s.Layouts) {
				return nil, fmt.Errorf("metadata: schema: layout %d field %d: layout %d missing", i, f.ID, f.LayoutID)
			}
		}
	}
	nbits := uint64(len(data)) * 8
	t := &thawer{s: s, data: data, nbits: nbits, budget: int64(2*nbits) + 1<<16, lazy: lazy}
	md, err := t.metadata(pos{l: &s.Layouts[s.RootLayout]})
	if err != nil {
		return nil, err
	}
	// The legacy model uses the inodes table as its directory entries:
	// every reader walks all of it, so thaw it.
	if md.Lazy() && !md.HasDirEntries {
		md = md.Thawed()
	}
	return md, nil
}

// pos is a Frozen2 position: the byte origin used for distances and a bit
// offset (which may exceed 7) for inline bits. l == nil means the value has
// no layout and reads as its default.
type pos struct {
	l     *Layout
	start uint64
	bit   uint64
}

type thawer struct {
	s      *Schema
	data   []byte
	nbits  uint64
	budget int64 // remaining items + string bytes we are willing to allocate
	lazy   bool  // leave the inodes table packed (DecodeLazy)
}

func (t *thawer) child(p pos, id int16) pos {
	if p.l == nil {
		return pos{}
	}
	f := p.l.field(id)
	if f == nil {
		return pos{}
	}
	q := pos{l: &t.s.Layouts[f.LayoutID], start: p.start, bit: p.bit}
	if f.Offset < 0 {
		q.bit += uint64(-int64(f.Offset))
	} else {
		q.start += uint64(f.Offset)
	}
	return q
}

func (t *thawer) extract(abs uint64, n uint) uint64 {
	i := abs >> 3
	sh := abs & 7
	var w [16]byte
	copy(w[:], t.data[i:])
	v := binary.LittleEndian.Uint64(w[:8]) >> sh
	if sh > 0 {
		v |= binary.LittleEndian.Uint64(w[8:]) << (64 - sh)
	}
	if n < 64 {
		v &= 1<<n - 1
	}
	return v
}

// absBit returns the absolute bit position of p after checking that n bits
// fit. what+part names the field in errors (concatenated only on error, as
// this is the hot path).
func (t *thawer) absBit(p pos, n uint, what, part string) (uint64, error) {
	if p.start > uint64(len(t.data)) || p.bit > t.nbits {
		return 0, fmt.Errorf("metadata: field %s%s: position out of data", what, part)
	}
	abs := p.start*8 + p.bit
	if abs > t.nbits || uint64(n) > t.nbits-abs {
		return 0, fmt.Errorf("metadata: field %s%s: %d bits at bit %d exceed data (%d bits)", what, part, n, abs, t.nbits)
	}
	return abs, nil
}

// uint reads an unsigned integer whose C++ type is maxBits wide.
func (t *thawer) uint(p pos, maxBits int, what string) (uint64, error) {
	return t.uintPart(p, maxBits, what, "")
}

func (t *thawer) uintPart(p pos, maxBits int, what, part string) (uint64, error) {
	if p.l == nil || p.l.Bits == 0 {
		return 0, nil
	}
	n := int(p.l.Bits)
	if n > maxBits {
		return 0, fmt.Errorf("metadata: field %s%s: width %d bits exceeds %d-bit type", what, part, n, maxBits)
	}
	abs, err := t.absBit(p, uint(n), what, part)
	if err != nil {
		return 0, err
	}
	return t.extract(abs, uint(n)), nil
}

func (t *thawer) u32(p pos, what string) (uint32, error) {
	v, err := t.uint(p, 32, what)
	return uint32(v), err
}

func (t *thawer) u64(p pos, what string) (uint64, error) { return t.uint(p, 64, what) }

func (t *thawer) u8(p pos, what string) (uint8, error) {
	v, err := t.uint(p, 8, what)
	return uint8(v), err
}

func (t *thawer) boolean(p pos, what string) (bool, error) {
	if p.l == nil || p.l.Bits == 0 {
		return false, nil
	}
	abs, err := t.absBit(p, 1, what, "")
	if err != nil {
		return false, err
	}
	return t.extract(abs, 1) != 0, nil
}

func (t *thawer) charge(n uint64, what string) error {
	if n > uint64(t.budget) {
		return fmt.Errorf("metadata: field %s: count %d exceeds data", what, n)
	}
	t.budget -= int64(n)
	return nil
}

// bytes reads a string/binary value: count bytes at start + distance.
func (t *thawer) bytes(p pos, what string) ([]byte, error) {
	if p.l == nil {
		return nil, nil
	}
	n, err := t.uintPart(t.child(p, 2), 64, what, " count")
	if err != nil || n == 0 {
		return nil, err
	}
	d, err := t.uintPart(t.child(p, 1), 64, what, " distance")
	if err != nil {
		return nil, err
	}
	size := uint64(len(t.data))
	if d > size || p.start > size || p.start+d > size || n > size-(p.start+d) {
		return nil, fmt.Errorf("metadata: field %s: string of %d bytes at distance %d exceeds data", what, n, d)
	}
	if err := t.charge(n, what); err != nil {
		return nil, err
	}
	o := p.start + d
	return t.data[o : o+n], nil
}

func (t *thawer) str(p pos, what string) (string, error) {
	b, err := t.bytes(p, what)
	return string(b), err
}

// array decodes a list/set/map header and returns the item count and a
// function yielding the position of item k (§4.3). Bit-packed items all
// share the data block's start as their origin.
func (t *thawer) array(p pos, what string) (int, func(k int) pos, error) {
	if p.l == nil {
		return 0, nil, nil
	}
	n, err := t.uintPart(t.child(p, 2), 64, what, " count")
	if err != nil || n == 0 {
		return 0, nil, err
	}
	d, err := t.uintPart(t.child(p, 1), 64, what, " distance")
	if err != nil {
		return 0, nil, err
	}
	size := uint64(len(t.data))
	if d > size || p.start > size || p.start+d > size {
		return 0, nil, fmt.Errorf("metadata: field %s: distance %d exceeds data", what, d)
	}
	base := p.start + d
	var item *Layout
	if f := p.l.field(3); f != nil {
		item = &t.s.Layouts[f.LayoutID]
	}
	tooMany := fmt.Errorf("metadata: field %s: count %d exceeds data", what, n)
	switch {
	case item != nil && item.Size > 0:
		if n-1 >= (size-base+uint64(item.Size)-1)/uint64(item.Size) {
			return 0, nil, tooMany
		}
	case item != nil && item.Bits > 0:
		if n > (t.nbits-base*8)/uint64(item.Bits) {
			return 0, nil, tooMany
		}
	default:
		if n > t.nbits+zeroBitSlack {
			return 0, nil, tooMany
		}
	}
	if err := t.charge(n, what); err != nil {
		return 0, nil, err
	}
	at := func(k int) pos {
		switch {
		case item == nil:
			return pos{}
		case item.Size > 0:
			return pos{l: item, start: base + uint64(k)*uint64(item.Size)}
		default:
			return pos{l: item, start: base, bit: uint64(k) * uint64(item.Bits)}
		}
	}
	return int(n), at, nil
}

func thawList[T any](t *thawer, p pos, what string, fn func(q pos) (T, error)) ([]T, error) {
	n, at, err := t.array(p, what)
	if err != nil || n == 0 {
		return nil, err
	}
	out := make([]T, n)
	for k := range out {
		if out[k], err = fn(at(k)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (t *thawer) u32List(p pos, what string) ([]uint32, error) {
	// The elements share one layout: checking the first and the last
	// bounds them all, and the column is then read in one loop.
	v, err := t.scalarView(p, what, 32)
	if err != nil || v == nil {
		return nil, err
	}
	out := make([]uint32, v.n)
	v.fill(0, 0, out)
	return out, nil
}

func (t *thawer) u64List(p pos, what string) ([]uint64, error) {
	return thawList(t, p, what, func(q pos) (uint64, error) { return t.u64(q, what) })
}

func (t *thawer) strList(p pos, what string) ([]string, error) {
	return thawList(t, p, what, func(q pos) (string, error) { return t.str(q, what) })
}

// plainStrList reads a list of strings and also reports how far apart its
// first string's data and its last string's end lie. A well-formed table
// stores the strings back to back, so that span equals their total length;
// the full check compares the two (the reference does the same).
func (t *thawer) plainStrList(p pos, what string) ([]string, plainSpan, error) {
	n, at, err := t.array(p, what)
	if err != nil || n == 0 {
		return nil, plainSpan{}, err
	}
	out := make([]string, n)
	for k := range out {
		if out[k], err = t.str(at(k), what); err != nil {
			return nil, plainSpan{}, err
		}
	}
	// str succeeded for every item, so these reads are in range.
	dataAt := func(k int) (uint64, bool) {
		q := at(k)
		if len(out[k]) == 0 {
			return 0, false
		}
		d, _ := t.uintPart(t.child(q, 1), 64, what, " distance")
		return q.start + d, true
	}
	sp := plainSpan{known: true, span: -1}
	first, ok1 := dataAt(0)
	last, ok2 := dataAt(n - 1)
	switch {
	case ok1 && ok2 && last+uint64(len(out[n-1])) >= first:
		sp.span = int64(last + uint64(len(out[n-1])) - first)
	case !ok1 && !ok2:
		// Empty strings at both ends have no data position.
		sp.span = 0
	}
	return out, sp, nil
}

// optional resolves an optional field: the wrapper's sub-field 1 is the
// isset bit, sub-field 2 the value.
func (t *thawer) optional(p pos, id int16, what string) (pos, bool, error) {
	w := t.child(p, id)
	if w.l == nil {
		return pos{}, false, nil
	}
	set, err := t.boolean(t.child(w, 1), what+" isset")
	if err != nil || !set {
		return pos{}, false, err
	}
	return t.child(w, 2), true, nil
}

func (t *thawer) optU32(p pos, id int16, what string) (*uint32, error) {
	q, set, err := t.optional(p, id, what)
	if err != nil || !set {
		return nil, err
	}
	v, err := t.u32(q, what)
	return &v, err
}

func (t *thawer) optU64(p pos, id int16, what string) (*uint64, error) {
	q, set, err := t.optional(p, id, what)
	if err != nil || !set {
		return nil, err
	}
	v, err := t.u64(q, what)
	return &v, err
}

func (t *thawer) optStr(p pos, id int16, what string) (*string, error) {
	q, set, err := t.optional(p, id, what)
	if err != nil || !set {
		return nil, err
	}
	v, err := t.str(q, what)
	return &v, err
}

// errs collects the first error of a sequence of reads so that struct
// thawing reads as a flat list of assignments.
type errs struct{ err error }

func (e *errs) u32(v uint32, err error) uint32 {
	if e.err == nil {
		e.err = err
	}
	return v
}

func (e *errs) u64(v uint64, err error) uint64 {
	if e.err == nil {
		e.err = err
	}
	return v
}

func (e *errs) b(v bool, err error) bool {
	if e.err == nil {
		e.err = err
	}
	return v
}

func (e *errs) set(err error) {
	if e.err == nil {
		e.err = err
	}
}

func (e *errs) u8(v uint8, err error) uint8         { e.set(err); return v }
func (e *errs) pu32(v *uint32, err error) *uint32   { e.set(err); return v }
func (e *errs) pu64(v *uint64, err error) *uint64   { e.set(err); return v }
func (e *errs) pstr(v *string, err error) *string   { e.set(err); return v }
func (e *errs) bs(v []byte, err error) []byte       { e.set(err); return v }
func (e *errs) u32s(v []uint32, err error) []uint32 { e.set(err); return v }
func (e *errs) strs(v []string, err error) []string { e.set(err); return v }
func (e *errs) plain(v []string, sp plainSpan, err error) ([]string, plainSpan) {
	e.set(err)
	return v, sp
}
func (e *errs) kvs(v []KV, err error) []KV                { e.set(err); return v }
func (e *errs) st(v *StringTable, err error) *StringTable { e.set(err); return v }
func (e *errs) opts(v *FsOptions, err error) *FsOptions   { e.set(err); return v }

func (t *thawer) chunk(p pos) (Chunk, error) {
	var e errs
	c := Chunk{
		Block:  e.u32(t.u32(t.child(p, 1), "chunks.block")),
		Offset: e.u32(t.u32(t.child(p, 2), "chunks.offset")),
		Size:   e.u32(t.u32(t.child(p, 3), "chunks.size")),
	}
	return c, e.err
}

func (t *thawer) directory(p pos) (Directory, error) {
	var e errs
	d := Directory{
		ParentEntry: e.u32(t.u32(t.child(p, 1), "directories.parent_entry")),
		FirstEntry:  e.u32(t.u32(t.child(p, 2), "directories.first_entry")),
		SelfEntry:   e.u32(t.u32(t.child(p, 3), "directories.self_entry")),
	}
	return d, e.err
}

func (t *thawer) inode(p pos) (InodeData, error) {
	var e errs
	f := func(id int16, name string) uint32 { return e.u32(t.u32(t.child(p, id), name)) }
	g := func(id int16, name string) uint64 { return e.u64(t.u64(t.child(p, id), name)) }
	in := InodeData{
		NameIndexV22:  f(1, "inodes.name_index_v2_2"),
		ModeIndex:     f(2, "inodes.mode_index"),
		InodeV22:      f(3, "inodes.inode_v2_2"),
		OwnerIndex:    f(4, "inodes.owner_index"),
		GroupIndex:    f(5, "inodes.group_index"),
		AtimeOffset:   g(6, "inodes.atime_offset"),
		MtimeOffset:   g(7, "inodes.mtime_offset"),
		CtimeOffset:   g(8, "inodes.ctime_offset"),
		BtimeOffset:   g(9, "inodes.btime_offset"),
		AtimeSubsec:   g(10, "inodes.atime_subsec"),
		MtimeSubsec:   g(11, "inodes.mtime_subsec"),
		CtimeSubsec:   g(12, "inodes.ctime_subsec"),
		BtimeSubsec:   g(13, "inodes.btime_subsec"),
		NlinkMinusOne: f(14, "inodes.nlink_minus_one"),
	}
	return in, e.err
}

func (t *thawer) dirEntry(p pos) (DirEntry, error) {
	var e errs
	d := DirEntry{
		NameIndex: e.u32(t.u32(t.child(p, 1), "dir_entries.name_index")),
		InodeNum:  e.u32(t.u32(t.child(p, 2), "dir_entries.inode_num")),
	}
	return d, e.err
}

func (t *thawer) fsOptions(p pos, what string) (*FsOptions, error) {
	var e errs
	o := &FsOptions{
		MtimeOnly:                         e.b(t.boolean(t.child(p, 1), what+".mtime_only")),
		TimeResolutionSec:                 e.pu32(t.optU32(p, 2, what+".time_resolution_sec")),
		PackedChunkTable:                  e.b(t.boolean(t.child(p, 3), what+".packed_chunk_table")),
		PackedDirectories:                 e.b(t.boolean(t.child(p, 4), what+".packed_directories")),
		PackedSharedFilesTable:            e.b(t.boolean(t.child(p, 5), what+".packed_shared_files_table")),
		SubsecondResolutionNsecMultiplier: e.pu32(t.optU32(p, 6, what+".subsecond_resolution_nsec_multiplier")),
		HasBtime:                          e.b(t.boolean(t.child(p, 7), what+".has_btime")),
		InodesHaveNlink:                   e.b(t.boolean(t.child(p, 8), what+".inodes_have_nlink")),
	}
	return o, e.err
}

func (t *thawer) optFsOptions(p pos, id int16, what string) (*FsOptions, error) {
	q, set, err := t.optional(p, id, what)
	if err != nil || !set {
		return nil, err
	}
	return t.fsOptions(q, what)
}

func (t *thawer) stringTable(p pos, id int16, what string) (*StringTable, error) {
	q, set, err := t.optional(p, id, what)
	if err != nil || !set {
		return nil, err
	}
	var e errs
	st := &StringTable{}
	st.Buffer = e.bs(t.bytes(t.child(q, 1), what+".buffer"))
	if !t.lazy {
		// DecodeLazy's caller keeps data unchanged; others may not.
		st.Buffer = append([]byte{}, st.Buffer...)
	}
	sq, set, err := t.optional(q, 2, what+".symtab")
	if err != nil {
		return nil, err
	} else if set {
		st.Symtab = append([]byte{}, e.bs(t.bytes(sq, what+".symtab"))...)
	}
	if t.lazy {
		if st.index, err = t.scalarView(t.child(q, 3), what+".index", 32); err != nil {
			return nil, err
		}
	} else {
		st.Index = e.u32s(t.u32List(t.child(q, 3), what+".index"))
	}
	st.PackedIndex = e.b(t.boolean(t.child(q, 4), what+".packed_index"))
	return st, e.err
}

func (t *thawer) kvList(p pos, what string) ([]KV, error) {
	wk, wv := what+".key", what+".value"
	return thawList(t, p, what, func(q pos) (KV, error) {
		var e errs
		kv := KV{Key: e.u32(t.u32(t.child(q, 1), wk)), Value: e.u64(t.u64(t.child(q, 2), wv))}
		return kv, e.err
	})
}

func (t *thawer) sizeCache(p pos, id int16, what string) (*InodeSizeCache, error) {
	q, set, err := t.optional(p, id, what)
	if err != nil || !set {
		return nil, err
	}
	var e errs
	c := &InodeSizeCache{
		SizeLookup:          e.kvs(t.kvList(t.child(q, 1), what+".size_lookup")),
		MinChunkCount:       e.u64(t.u64(t.child(q, 2), what+".min_chunk_count")),
		AllocatedSizeLookup: e.kvs(t.kvList(t.child(q, 3), what+".allocated_size_lookup")),
	}
	return c, e.err
}

func (t *thawer) historyEntry(p pos) (HistoryEntry, error) {
	const what = "metadata_version_history"
	var e errs
	h := HistoryEntry{
		Major:         e.u8(t.u8(t.child(p, 1), what+".major")),
		Minor:         e.u8(t.u8(t.child(p, 2), what+".minor")),
		DwarfsVersion: e.pstr(t.optStr(p, 3, what+".dwarfs_version")),
		BlockSize:     e.u32(t.u32(t.child(p, 4), what+".block_size")),
		Options:       e.opts(t.optFsOptions(p, 5, what+".options")),
	}
	return h, e.err
}

// optList resolves an optional container field, reporting whether it is set.
func optList[T any](t *thawer, p pos, id int16, what string, fn func(q pos, what string) ([]T, error)) ([]T, bool, error) {
	q, set, err := t.optional(p, id, what)
	if err != nil || !set {
		return nil, false, err
	}
	v, err := fn(q, what)
	return v, true, err
}

func (t *thawer) metadata(root pos) (*Metadata, error) {
	var e errs
	c := func(id int16) pos { return t.child(root, id) }
	md := &Metadata{}
	var err error
	if t.lazy {
		if md.chunks, err = t.listView(c(1), "chunks", chunkFields[:]); err != nil {
			return nil, err
		}
	} else if md.Chunks, err = thawList(t, c(1), "chunks", t.chunk); err != nil {
		return nil, err
	}
	if md.Directories, err = thawList(t, c(2), "directories", t.directory); err != nil {
		return nil, err
	}
	if t.lazy {
		if md.inodes, err = t.inodeViewOf(c(3)); err != nil {
			return nil, err
		}
	} else if md.Inodes, err = thawList(t, c(3), "inodes", t.inode); err != nil {
		return nil, err
	}
	if t.lazy {
		if md.chunkTbl, err = t.scalarView(c(4), "chunk_table", 32); err != nil {
			return nil, err
		}
	} else {
		md.ChunkTable = e.u32s(t.u32List(c(4), "chunk_table"))
	}
	md.EntryTableV22 = e.u32s(t.u32List(c(5), "entry_table_v2_2"))
	md.SymlinkTable = e.u32s(t.u32List(c(6), "symlink_table"))
	md.Uids = e.u32s(t.u32List(c(7), "uids"))
	md.Gids = e.u32s(t.u32List(c(8), "gids"))
	md.Modes = e.u32s(t.u32List(c(9), "modes"))
	md.Names, md.namesSpan = e.plain(t.plainStrList(c(10), "names"))
	md.Symlinks, md.symlinksSpan = e.plain(t.plainStrList(c(11), "symlinks"))
	md.TimestampBase = e.u64(t.u64(c(12), "timestamp_base"))
	md.ChunkInodeOffset = e.u32(t.u32(c(13), "chunk_inode_offset"))
	md.LinkInodeOffset = e.u32(t.u32(c(14), "link_inode_offset"))
	md.BlockSize = e.u32(t.u32(c(15), "block_size"))
	md.TotalFsSize = e.u64(t.u64(c(16), "total_fs_size"))
	if e.err != nil {
		return nil, e.err
	}
	if md.Devices, md.HasDevices, err = optList(t, root, 17, "devices", t.u64List); err != nil {
		return nil, err
	}
	if md.Options, err = t.optFsOptions(root, 18, "options"); err != nil {
		return nil, err
	}
	dirEntries := func(q pos, what string) ([]DirEntry, error) { return thawList(t, q, what, t.dirEntry) }
	if t.lazy {
		q, set, err := t.optional(root, 19, "dir_entries")
		if err != nil {
			return nil, err
		}
		if md.HasDirEntries = set; set {
			if md.dirEnts, err = t.listView(q, "dir_entries", dirEntryFields[:]); err != nil {
				return nil, err
			}
		}
	} else if md.DirEntries, md.HasDirEntries, err = optList(t, root, 19, "dir_entries", dirEntries); err != nil {
		return nil, err
	}
	if t.lazy {
		// One element per file whose content others share: in a tree
		// of many empty files, nearly one per file.
		q, set, err := t.optional(root, 20, "shared_files_table")
		if err != nil {
			return nil, err
		}
		if md.HasSharedFilesTable = set; set {
			if md.sharedTbl, err = t.scalarView(q, "shared_files_table", 32); err != nil {
				return nil, err
			}
		}
	} else if md.SharedFilesTable, md.HasSharedFilesTable, err = optList(t, root, 20, "shared_files_table", t.u32List); err != nil {
		return nil, err
	}
	md.TotalHardlinkSize = e.pu64(t.optU64(root, 21, "total_hardlink_size"))
	md.DwarfsVersion = e.pstr(t.optStr(root, 22, "dwarfs_version"))
	md.CreateTimestamp = e.pu64(t.optU64(root, 23, "create_timestamp"))
	md.CompactNames = e.st(t.stringTable(root, 24, "compact_names"))
	md.CompactSymlinks = e.st(t.stringTable(root, 25, "compact_symlinks"))
	md.PreferredPathSeparator = e.pu32(t.optU32(root, 26, "preferred_path_separator"))
	if e.err != nil {
		return nil, e.err
	}
	if md.Features, md.HasFeatures, err = optList(t, root, 27, "features", t.strList); err != nil {
		return nil, err
	}
	if md.CategoryNames, md.HasCategoryNames, err = optList(t, root, 28, "category_names", t.strList); err != nil {
		return nil, err
	}
	if md.BlockCategories, md.HasBlockCategories, err = optList(t, root, 29, "block_categories", t.u32List); err != nil {
		return nil, err
	}
	if md.RegFileSizeCache, err = t.sizeCache(root, 30, "reg_file_size_cache"); err != nil {
		return nil, err
	}
	if md.CategoryMetadataJSON, md.HasCategoryMetadataJSON, err = optList(t, root, 31, "category_metadata_json", t.strList); err != nil {
		return nil, err
	}
	kv32 := func(q pos, what string) ([]KV32, error) {
		wk, wv := what+".key", what+".value"
		return thawList(t, q, what, func(q pos) (KV32, error) {
			var e errs
			kv := KV32{Key: e.u32(t.u32(t.child(q, 1), wk)), Value: e.u32(t.u32(t.child(q, 2), wv))}
			return kv, e.err
		})
	}
	if md.BlockCategoryMetadata, md.HasBlockCategoryMetadata, err = optList(t, root, 32, "block_category_metadata", kv32); err != nil {
		return nil, err
	}
	hist := func(q pos, what string) ([]HistoryEntry, error) { return thawList(t, q, what, t.historyEntry) }
	if md.MetadataVersionHistory, md.HasMetadataVersionHistory, err = optList(t, root, 33, "metadata_version_history", hist); err != nil {
		return nil, err
	}
	md.HoleBlockIndex = e.pu32(t.optU32(root, 34, "hole_block_index"))
	if e.err != nil {
		return nil, e.err
	}
	if md.LargeHoleSize, md.HasLargeHoleSize, err = optList(t, root, 35, "large_hole_size", t.u64List); err != nil {
		return nil, err
	}
	if md.TotalAllocatedFsSize, err = t.optU64(root, 36, "total_allocated_fs_size"); err != nil {
		return nil, err
	}
	return md, nil
}

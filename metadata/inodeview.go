package metadata

import (
	"encoding/binary"
	"fmt"
)

// inodeFields are the thrift ids of the inode_data fields, in the order
// inodeView keeps their positions, and the widths of their C++ types.
var inodeFields = [...]viewField{
	{1, 32, "inodes.name_index_v2_2"},
	{2, 32, "inodes.mode_index"},
	{3, 32, "inodes.inode_v2_2"},
	{4, 32, "inodes.owner_index"},
	{5, 32, "inodes.group_index"},
	{6, 64, "inodes.atime_offset"},
	{7, 64, "inodes.mtime_offset"},
	{8, 64, "inodes.ctime_offset"},
	{9, 64, "inodes.btime_offset"},
	{10, 64, "inodes.atime_subsec"},
	{11, 64, "inodes.mtime_subsec"},
	{12, 64, "inodes.ctime_subsec"},
	{13, 64, "inodes.btime_subsec"},
	{14, 32, "inodes.nlink_minus_one"},
}

// viewField is one field of a packed struct list: its thrift id, the
// width of its C++ type and its name for errors.
type viewField struct {
	id      int16
	maxBits int
	name    string
}

// chunkFields are the chunk fields, in the order of the Chunk struct.
var chunkFields = [...]viewField{
	{1, 32, "chunks.block"},
	{2, 32, "chunks.offset"},
	{3, 32, "chunks.size"},
}

// dirEntryFields are the dir_entries fields, in the order of DirEntry.
var dirEntryFields = [...]viewField{
	{1, 32, "dir_entries.name_index"},
	{2, 32, "dir_entries.inode_num"},
}

// Indexes into inodeView.fields.
const (
	fNameV22 = iota
	fMode
	fInodeV22
	fOwner
	fGroup
	fAtime
	fMtime
	fCtime
	fBtime
	fAtimeSub
	fMtimeSub
	fCtimeSub
	fBtimeSub
	fNlink
)

// inodeView reads elements of the inodes table straight from the frozen
// metadata instead of thawing them: in a Frozen2 list every element has the
// same layout, so field f of element i sits at base + i*stride + off[f].
// The table is the largest in an image (one element per inode, 88 bytes
// thawed against a few bytes frozen), so keeping it packed is what lets
// memory grow with the metadata size rather than with the inode count.
type inodeView struct {
	data   []byte
	n      int
	base   uint64 // absolute bit position of element 0
	stride uint64 // bits from one element to the next
	off    [len(inodeFields)]uint64
	width  [len(inodeFields)]uint8 // 0: the field reads as 0
}

// inodeViewOf validates the inodes list at p and returns a view of it
// (nil for an empty list). Every element's fields are known to lie inside
// data afterwards, so reads need no further checks.
func (t *thawer) inodeViewOf(p pos) (*inodeView, error) {
	return t.listView(p, "inodes", inodeFields[:])
}

// listView validates the list of structs at p and returns a view of the
// given fields (at most len(inodeFields)) of its elements, nil for an
// empty list. inodeView serves any such list, the chunks too.
func (t *thawer) listView(p pos, what string, fields []viewField) (*inodeView, error) {
	n, at, err := t.array(p, what)
	if err != nil || n == 0 {
		return nil, err
	}
	v := &inodeView{data: t.data, n: n}
	abs := func(q pos) uint64 { return q.start*8 + q.bit }
	first, last := at(0), at(n-1)
	v.base = abs(first)
	if n > 1 {
		v.stride = (abs(last) - v.base) / uint64(n-1)
	}
	for i, f := range fields {
		q0 := t.child(first, f.id)
		if q0.l == nil || q0.l.Bits == 0 {
			continue
		}
		w := int(q0.l.Bits)
		if w > f.maxBits {
			return nil, fmt.Errorf("metadata: field %s: width %d bits exceeds %d-bit type", f.name, w, f.maxBits)
		}
		// The first and the last element bound all others.
		for _, q := range []pos{q0, t.child(last, f.id)} {
			if _, err := t.absBit(q, uint(w), f.name, ""); err != nil {
				return nil, err
			}
		}
		v.off[i] = abs(q0) - v.base
		v.width[i] = uint8(w)
	}
	return v, nil
}

// get returns field f of element i.
func (v *inodeView) get(i int, f int) uint64 {
	w := uint(v.width[f])
	if w == 0 {
		return 0
	}
	a := v.base + uint64(i)*v.stride + v.off[f]
	j := a >> 3
	sh := a & 7
	var x uint64
	if j+16 <= uint64(len(v.data)) {
		x = binary.LittleEndian.Uint64(v.data[j:]) >> sh
		if sh+uint64(w) > 64 { // the field reaches into the next word
			x |= binary.LittleEndian.Uint64(v.data[j+8:]) << (64 - sh)
		}
	} else {
		var b [16]byte
		copy(b[:], v.data[j:])
		x = binary.LittleEndian.Uint64(b[:8]) >> sh
		if sh > 0 {
			x |= binary.LittleEndian.Uint64(b[8:]) << (64 - sh)
		}
	}
	if w < 64 {
		x &= 1<<w - 1
	}
	return x
}

// at thaws element i.
func (v *inodeView) at(i int) InodeData {
	return InodeData{
		NameIndexV22:  uint32(v.get(i, fNameV22)),
		ModeIndex:     uint32(v.get(i, fMode)),
		InodeV22:      uint32(v.get(i, fInodeV22)),
		OwnerIndex:    uint32(v.get(i, fOwner)),
		GroupIndex:    uint32(v.get(i, fGroup)),
		AtimeOffset:   v.get(i, fAtime),
		MtimeOffset:   v.get(i, fMtime),
		CtimeOffset:   v.get(i, fCtime),
		BtimeOffset:   v.get(i, fBtime),
		AtimeSubsec:   v.get(i, fAtimeSub),
		MtimeSubsec:   v.get(i, fMtimeSub),
		CtimeSubsec:   v.get(i, fCtimeSub),
		BtimeSubsec:   v.get(i, fBtimeSub),
		NlinkMinusOne: uint32(v.get(i, fNlink)),
	}
}

// InodeCount returns the number of elements of the inodes table, whether
// thawed into Inodes or still packed (DecodeLazy).
func (md *Metadata) InodeCount() int {
	if md.Inodes == nil && md.inodes != nil {
		return md.inodes.n
	}
	return len(md.Inodes)
}

// InodeAt returns element i of the inodes table (0 <= i < InodeCount()).
func (md *Metadata) InodeAt(i int) InodeData {
	if md.Inodes == nil && md.inodes != nil {
		return md.inodes.at(i)
	}
	return md.Inodes[i]
}

// inodeAttrs returns what FS.Inode reads of element i: the mode, owner
// and group indexes and the mtime, plus the atime and ctime with acTimes
// and the btime with bTime. Of a packed table only those fields are read;
// the legacy name/inode numbers and nlink are left zero.
func (md *Metadata) inodeAttrs(i int, acTimes, bTime bool) InodeData {
	v := md.inodes
	if md.Inodes != nil || v == nil {
		return md.Inodes[i]
	}
	a := InodeData{
		ModeIndex:   uint32(v.get(i, fMode)),
		OwnerIndex:  uint32(v.get(i, fOwner)),
		GroupIndex:  uint32(v.get(i, fGroup)),
		MtimeOffset: v.get(i, fMtime),
		MtimeSubsec: v.get(i, fMtimeSub),
	}
	if acTimes {
		a.AtimeOffset, a.AtimeSubsec = v.get(i, fAtime), v.get(i, fAtimeSub)
		a.CtimeOffset, a.CtimeSubsec = v.get(i, fCtime), v.get(i, fCtimeSub)
	}
	if bTime {
		a.BtimeOffset, a.BtimeSubsec = v.get(i, fBtime), v.get(i, fBtimeSub)
	}
	return a
}

// inodeField returns one field of element i without thawing the others.
func (md *Metadata) inodeField(i int, f int) uint32 {
	if md.Inodes == nil && md.inodes != nil {
		return uint32(md.inodes.get(i, f))
	}
	in := &md.Inodes[i]
	switch f {
	case fMode:
		return in.ModeIndex
	case fOwner:
		return in.OwnerIndex
	case fGroup:
		return in.GroupIndex
	case fNlink:
		return in.NlinkMinusOne
	}
	panic("metadata: inodeField: unsupported field")
}

// Lazy reports whether a table is still packed (DecodeLazy): the inodes
// table, with Inodes nil, the chunks, with Chunks nil, the dir_entries,
// with DirEntries nil, the chunk_table, with ChunkTable nil, or a compact
// string table's index.
func (md *Metadata) Lazy() bool {
	return md.Inodes == nil && md.inodes != nil || md.Chunks == nil && md.chunks != nil ||
		md.DirEntries == nil && md.dirEnts != nil || md.ChunkTable == nil && md.chunkTbl != nil ||
		md.SharedFilesTable == nil && md.sharedTbl != nil ||
		md.CompactNames.packed() || md.CompactSymlinks.packed()
}

// Thawed returns md with the inodes table thawed into Inodes, the chunks
// into Chunks, the dir_entries into DirEntries, the chunk_table into
// ChunkTable, the shared_files_table into SharedFilesTable and the string
// tables' indexes into Index: md itself when they already are, else a copy (md is not
// modified, so it stays safe for concurrent readers).
func (md *Metadata) Thawed() *Metadata {
	if !md.Lazy() {
		return md
	}
	c := *md
	if md.Inodes == nil && md.inodes != nil {
		c.Inodes = make([]InodeData, md.inodes.n)
		for i := range c.Inodes {
			c.Inodes[i] = md.inodes.at(i)
		}
	}
	c.inodes = nil
	if md.Chunks == nil && md.chunks != nil {
		c.Chunks = make([]Chunk, md.chunks.n)
		for i := range c.Chunks {
			c.Chunks[i] = md.chunks.chunk(i)
		}
	}
	c.chunks = nil
	if md.DirEntries == nil && md.dirEnts != nil {
		c.DirEntries = make([]DirEntry, md.dirEnts.n)
		for i := range c.DirEntries {
			c.DirEntries[i] = md.dirEnts.dirEntry(i)
		}
	}
	c.dirEnts = nil
	if md.ChunkTable == nil && md.chunkTbl != nil {
		c.ChunkTable = make([]uint32, md.chunkTbl.n)
		for i := range c.ChunkTable {
			c.ChunkTable[i] = md.chunkTableAt(i)
		}
	}
	c.chunkTbl = nil
	if md.SharedFilesTable == nil && md.sharedTbl != nil {
		c.SharedFilesTable = make([]uint32, md.sharedTbl.n)
		md.sharedTbl.fill(0, 0, c.SharedFilesTable)
	}
	c.sharedTbl = nil
	c.CompactNames, c.CompactSymlinks = md.CompactNames.thawed(), md.CompactSymlinks.thawed()
	return &c
}

// DirEntryCount returns the number of dir_entries, whether thawed into
// DirEntries or still packed (DecodeLazy).
func (md *Metadata) DirEntryCount() int {
	if md.DirEntries == nil && md.dirEnts != nil {
		return md.dirEnts.n
	}
	return len(md.DirEntries)
}

// DirEntryAt returns dir_entries element i (0 <= i < DirEntryCount()).
func (md *Metadata) DirEntryAt(i int) DirEntry {
	if md.DirEntries == nil && md.dirEnts != nil {
		return md.dirEnts.dirEntry(i)
	}
	return md.DirEntries[i]
}

// scalarView validates the list of unsigned integers at p and returns a
// view of it (nil for an empty list); get(i, 0) reads element i.
func (t *thawer) scalarView(p pos, what string, maxBits int) (*inodeView, error) {
	n, at, err := t.array(p, what)
	if err != nil || n == 0 {
		return nil, err
	}
	v := &inodeView{data: t.data, n: n}
	abs := func(q pos) uint64 { return q.start*8 + q.bit }
	first, last := at(0), at(n-1)
	v.base = abs(first)
	if n > 1 {
		v.stride = (abs(last) - v.base) / uint64(n-1)
	}
	if first.l == nil || first.l.Bits == 0 {
		return v, nil // every element reads as 0
	}
	w := int(first.l.Bits)
	if w > maxBits {
		return nil, fmt.Errorf("metadata: field %s: width %d bits exceeds %d-bit type", what, w, maxBits)
	}
	for _, q := range []pos{first, last} {
		if _, err := t.absBit(q, uint(w), what, ""); err != nil {
			return nil, err
		}
	}
	v.width[0] = uint8(w)
	return v, nil
}

// chunkTableLen and chunkTableAt read the chunk_table, thawed or packed.
func (md *Metadata) chunkTableLen() int {
	if md.ChunkTable == nil && md.chunkTbl != nil {
		return md.chunkTbl.n
	}
	return len(md.ChunkTable)
}

func (md *Metadata) chunkTableAt(i int) uint32 {
	if md.ChunkTable == nil && md.chunkTbl != nil {
		return uint32(md.chunkTbl.get(i, 0))
	}
	return md.ChunkTable[i]
}

// dirEntry reads element i of a dir_entries view.
func (v *inodeView) dirEntry(i int) DirEntry {
	return DirEntry{NameIndex: uint32(v.get(i, 0)), InodeNum: uint32(v.get(i, 1))}
}

// ChunkCount returns the number of chunks, whether thawed into Chunks or
// still packed (DecodeLazy).
func (md *Metadata) ChunkCount() int {
	if md.Chunks == nil && md.chunks != nil {
		return md.chunks.n
	}
	return len(md.Chunks)
}

// ChunkAt returns chunk i (0 <= i < ChunkCount()).
func (md *Metadata) ChunkAt(i int) Chunk {
	if md.Chunks == nil && md.chunks != nil {
		return md.chunks.chunk(i)
	}
	return md.Chunks[i]
}

// chunk reads element i of a chunks view.
func (v *inodeView) chunk(i int) Chunk {
	return Chunk{Block: uint32(v.get(i, 0)), Offset: uint32(v.get(i, 1)), Size: uint32(v.get(i, 2))}
}

// batchLen is how many elements the table scans of NewFS and Check read
// at a time with fill: reading a column in one tight loop costs a
// fraction of a get call per element, and a million-file image has
// millions of elements per table.
const batchLen = 512

// fill stores field f (at most 32 bits wide) of elements lo,
// lo+1, ... in dst; lo+len(dst) must not exceed v.n.
func (v *inodeView) fill(f, lo int, dst []uint32) {
	w := uint(v.width[f])
	if w == 0 {
		clear(dst)
		return
	}
	mask := uint64(1)<<w - 1
	a := v.base + uint64(lo)*v.stride + v.off[f]
	data := v.data
	k := 0
	// A field of up to 32 bits starting at any bit of byte j lies within
	// the eight bytes from j.
	for ; k < len(dst); k++ {
		j := a >> 3
		if j+8 > uint64(len(data)) {
			break
		}
		dst[k] = uint32(binary.LittleEndian.Uint64(data[j:j+8]) >> (a & 7) & mask)
		a += v.stride
	}
	for ; k < len(dst); k++ {
		dst[k] = uint32(v.get(lo+k, f))
	}
}

// inodeColumn stores field f (fMode, fOwner, fGroup or fNlink) of
// inodes elements lo, lo+1, ... in dst, thawed or packed.
func (md *Metadata) inodeColumn(f, lo int, dst []uint32) {
	if md.Inodes == nil && md.inodes != nil {
		md.inodes.fill(f, lo, dst)
		return
	}
	for k := range dst {
		dst[k] = md.inodeField(lo+k, f)
	}
}

// chunkColumn stores field f (0 block, 1 offset, 2 size) of chunks lo,
// lo+1, ... in dst, thawed or packed.
func (md *Metadata) chunkColumn(f, lo int, dst []uint32) {
	if md.Chunks == nil && md.chunks != nil {
		md.chunks.fill(f, lo, dst)
		return
	}
	for k := range dst {
		c := &md.Chunks[lo+k]
		switch f {
		case 0:
			dst[k] = c.Block
		case 1:
			dst[k] = c.Offset
		default:
			dst[k] = c.Size
		}
	}
}

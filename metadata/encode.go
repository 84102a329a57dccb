package metadata

import (
	"fmt"
	"sort"
)

// Encode freezes md into the METADATA_V2_SCHEMA and METADATA_V2 payloads
// using the upstream Frozen2 layout algorithm (§4.6). For metadata decoded
// from images written by dwarfs >= 0.5 the output is byte-identical to the
// original sections. md is not modified; sets and maps are written sorted
// and deduplicated, as thrift's ordered containers would be.
func Encode(md *Metadata) (schema []byte, data []byte, err error) {
	return EncodeWith(md, EncodeOptions{})
}

// EncodeOptions tunes Encode. The zero value gives the output of
// fbthrift-based releases.
type EncodeOptions struct {
	// SchemaOrder selects the schema's field order; use
	// SchemaOrderAscending to match dwarfs >= 0.15 byte for byte.
	SchemaOrder SchemaFieldOrder
	// WholeBytes lays out the tables of one row per chunk, inode and
	// directory entry in whole bytes per field (where some field needs
	// more than one byte) instead of the fewest bits, so rows start on byte
	// boundaries. The data grows, but compresses much better: LZ
	// compressors match whole bytes, and the rows of similar files repeat.
	// Tables of narrow fields stay bit-packed, where whole bytes cost more
	// than they gain. Every reader takes the widths from the schema, so
	// the output stays readable by all; use it only for compressed
	// metadata.
	WholeBytes bool
}

// EncodeWith is Encode with options.
func EncodeWith(md *Metadata, opt EncodeOptions) (schema []byte, data []byte, err error) {
	if md == nil {
		return nil, nil, fmt.Errorf("metadata: encode: nil metadata")
	}
	root := metadataNode()
	if opt.WholeBytes {
		wide := map[int16]bool{
			fieldChunks:     wideRows(md.Chunks, 3, chunkInts),
			fieldDirEntries: wideRows(md.DirEntries, 2, dirEntryInts),
			fieldInodes:     wideRows(md.Inodes, 14, inodeInts),
		}
		for _, c := range root.children {
			if wide[c.key] {
				tableRows(c.node).setWholeBytes()
			}
		}
	}
	data, err = freeze(root, metadataValue(md))
	if err != nil {
		return nil, nil, fmt.Errorf("metadata: encode: %w", err)
	}
	s, err := buildSchema(root)
	if err != nil {
		return nil, nil, fmt.Errorf("metadata: encode schema: %w", err)
	}
	return EncodeSchemaOrder(s, opt.SchemaOrder), data, nil
}

// The thrift field ids of the tables WholeBytes lays out in bytes.
const (
	fieldChunks     = 1
	fieldInodes     = 3
	fieldDirEntries = 19
)

// wideRows reports whether a field of a row of s needs more than a byte.
func wideRows[T any](s []T, fields int, ints func(e *T, i int) uint64) bool {
	var all uint64
	for k := range s {
		for i := range fields {
			all |= ints(&s[k], i)
		}
	}
	return all > 0xff
}

// tableRows returns the item node of a list field, optional or not.
func tableRows(n *lnode) *lnode {
	if n.kind == lkOptional {
		n = n.children[1].node
	}
	return n.children[2].node
}

// Type tree of thrift/metadata.thrift. Field order is IDL declaration order,
// which determines the bit placement; keys are the thrift field ids.

func u8Node() *lnode  { return intNode(8) }
func u32Node() *lnode { return intNode(32) }
func u64Node() *lnode { return intNode(64) }

func chunkNode() *lnode {
	return structNode(fieldDef{1, u32Node()}, fieldDef{2, u32Node()}, fieldDef{3, u32Node()})
}

func directoryNode() *lnode {
	return structNode(fieldDef{1, u32Node()}, fieldDef{2, u32Node()}, fieldDef{3, u32Node()})
}

// inodeDataNode: the legacy ids 1 and 3 were moved to the end of the IDL.
func inodeDataNode() *lnode {
	return structNode(
		fieldDef{2, u32Node()}, fieldDef{4, u32Node()}, fieldDef{5, u32Node()},
		fieldDef{6, u64Node()}, fieldDef{7, u64Node()}, fieldDef{8, u64Node()},
		fieldDef{9, u64Node()}, fieldDef{10, u64Node()}, fieldDef{11, u64Node()},
		fieldDef{12, u64Node()}, fieldDef{13, u64Node()}, fieldDef{14, u32Node()},
		fieldDef{1, u32Node()}, fieldDef{3, u32Node()},
	)
}

func dirEntryNode() *lnode {
	return structNode(fieldDef{1, u32Node()}, fieldDef{2, u32Node()})
}

func fsOptionsNode() *lnode {
	return structNode(
		fieldDef{1, boolNode()}, fieldDef{2, optNode(u32Node())},
		fieldDef{3, boolNode()}, fieldDef{4, boolNode()}, fieldDef{5, boolNode()},
		fieldDef{6, optNode(u32Node())}, fieldDef{7, boolNode()}, fieldDef{8, boolNode()},
	)
}

func stringTableNode() *lnode {
	return structNode(
		fieldDef{1, strNode()}, fieldDef{2, optNode(strNode())},
		fieldDef{3, arrayNode(u32Node())}, fieldDef{4, boolNode()},
	)
}

func sizeCacheNode() *lnode {
	return structNode(
		fieldDef{1, arrayNode(pairNode(u32Node(), u64Node()))},
		fieldDef{2, u64Node()},
		fieldDef{3, arrayNode(pairNode(u32Node(), u64Node()))},
	)
}

func historyEntryNode() *lnode {
	return structNode(
		fieldDef{1, u8Node()}, fieldDef{2, u8Node()}, fieldDef{3, optNode(strNode())},
		fieldDef{4, u32Node()}, fieldDef{5, optNode(fsOptionsNode())},
	)
}

// metadataNode includes the deprecated ids 13/14 at their historic place;
// they are zero (hence absent from the schema) in every image >= 0.3.
func metadataNode() *lnode {
	list32 := func() *lnode { return arrayNode(u32Node()) }
	return structNode(
		fieldDef{1, arrayNode(chunkNode())},
		fieldDef{2, arrayNode(directoryNode())},
		fieldDef{3, arrayNode(inodeDataNode())},
		fieldDef{4, list32()},
		fieldDef{5, list32()},
		fieldDef{6, list32()},
		fieldDef{7, list32()},
		fieldDef{8, list32()},
		fieldDef{9, list32()},
		fieldDef{10, arrayNode(strNode())},
		fieldDef{11, arrayNode(strNode())},
		fieldDef{12, u64Node()},
		fieldDef{13, u32Node()},
		fieldDef{14, u32Node()},
		fieldDef{15, u32Node()},
		fieldDef{16, u64Node()},
		fieldDef{17, optNode(arrayNode(u64Node()))},
		fieldDef{18, optNode(fsOptionsNode())},
		fieldDef{19, optNode(arrayNode(dirEntryNode()))},
		fieldDef{20, optNode(list32())},
		fieldDef{21, optNode(u64Node())},
		fieldDef{22, optNode(strNode())},
		fieldDef{23, optNode(u64Node())},
		fieldDef{24, optNode(stringTableNode())},
		fieldDef{25, optNode(stringTableNode())},
		fieldDef{26, optNode(u32Node())},
		fieldDef{27, optNode(arrayNode(strNode()))},
		fieldDef{28, optNode(arrayNode(strNode()))},
		fieldDef{29, optNode(list32())},
		fieldDef{30, optNode(sizeCacheNode())},
		fieldDef{31, optNode(arrayNode(strNode()))},
		fieldDef{32, optNode(arrayNode(pairNode(u32Node(), u32Node())))},
		fieldDef{33, optNode(arrayNode(historyEntryNode()))},
		fieldDef{34, optNode(u32Node())},
		fieldDef{35, optNode(arrayNode(u64Node()))},
		fieldDef{36, optNode(u64Node())},
	)
}

// Value builders.

func uv(x uint64) fval { return fval{u: x} }

func bv(b bool) fval {
	if b {
		return fval{u: 1}
	}
	return fval{}
}

func some(v fval) fval { return fval{u: 1, f: []fval{v}} }

func when(present bool, v func() fval) fval {
	if !present {
		return fval{}
	}
	return some(v())
}

func optU32(p *uint32) fval {
	if p == nil {
		return fval{}
	}
	return some(uv(uint64(*p)))
}

func optU64(p *uint64) fval {
	if p == nil {
		return fval{}
	}
	return some(uv(*p))
}

func optStr(p *string) fval {
	if p == nil {
		return fval{}
	}
	return some(fval{s: *p})
}

func optBytes(b []byte) fval {
	if b == nil {
		return fval{}
	}
	return some(fval{s: string(b)})
}

func listOf[T any](s []T, f func(T) fval) fval {
	return fval{n: len(s), item: func(k int) fval { return f(s[k]) }}
}

func u32s(s []uint32) fval { return listOf(s, func(x uint32) fval { return uv(uint64(x)) }) }
func u64s(s []uint64) fval { return listOf(s, uv) }

func strs(s []string) fval {
	return listOf(s, func(x string) fval { return fval{s: x} })
}

// strSet sorts and deduplicates byte-wise, like std::set<std::string>.
func strSet(s []string) fval {
	c := append([]string(nil), s...)
	sort.Strings(c)
	out := c[:0]
	for i, x := range c {
		if i == 0 || x != c[i-1] {
			out = append(out, x)
		}
	}
	return strs(out)
}

func kvMap(m []KV) fval {
	c := sortedUnique(m, func(e KV) uint32 { return e.Key })
	return listOf(c, func(e KV) fval { return fval{f: []fval{uv(uint64(e.Key)), uv(e.Value)}} })
}

func kv32Map(m []KV32) fval {
	c := sortedUnique(m, func(e KV32) uint32 { return e.Key })
	return listOf(c, func(e KV32) fval { return fval{f: []fval{uv(uint64(e.Key)), uv(uint64(e.Value))}} })
}

// sortedUnique returns map entries sorted by key, first occurrence winning
// on duplicate keys (as std::map::insert would).
func sortedUnique[T any](m []T, key func(T) uint32) []T {
	c := append([]T(nil), m...)
	sort.SliceStable(c, func(i, j int) bool { return key(c[i]) < key(c[j]) })
	out := c[:0]
	for i, e := range c {
		if i == 0 || key(e) != key(c[i-1]) {
			out = append(out, e)
		}
	}
	return out
}

func fsOptionsValue(o *FsOptions) fval {
	return fval{f: []fval{
		bv(o.MtimeOnly), optU32(o.TimeResolutionSec),
		bv(o.PackedChunkTable), bv(o.PackedDirectories), bv(o.PackedSharedFilesTable),
		optU32(o.SubsecondResolutionNsecMultiplier), bv(o.HasBtime), bv(o.InodesHaveNlink),
	}}
}

func optFsOptions(o *FsOptions) fval {
	if o == nil {
		return fval{}
	}
	return some(fsOptionsValue(o))
}

func optStringTable(t *StringTable) fval {
	if t == nil {
		return fval{}
	}
	return some(fval{f: []fval{
		{s: string(t.Buffer)}, optBytes(t.Symtab), u32s(t.Index), bv(t.PackedIndex),
	}})
}

func optSizeCache(c *InodeSizeCache) fval {
	if c == nil {
		return fval{}
	}
	return some(fval{f: []fval{kvMap(c.SizeLookup), uv(c.MinChunkCount), kvMap(c.AllocatedSizeLookup)}})
}

func historyValue(h HistoryEntry) fval {
	return fval{f: []fval{
		uv(uint64(h.Major)), uv(uint64(h.Minor)), optStr(h.DwarfsVersion),
		uv(uint64(h.BlockSize)), optFsOptions(h.Options),
	}}
}

// intStructs lists structs of integers without allocating per element
// (the big tables are walked once per layout pass): ints(elem, i) returns
// component i in declaration order.
func intStructs[T any](s []T, ints func(e *T, i int) uint64) fval {
	field := func(k, i int) fval { return uv(ints(&s[k], i)) }
	return fval{n: len(s), item: func(k int) fval { return fval{idx: k, field: field} }}
}

func chunkInts(c *Chunk, i int) uint64 {
	switch i {
	case 0:
		return uint64(c.Block)
	case 1:
		return uint64(c.Offset)
	}
	return uint64(c.Size)
}

func directoryInts(d *Directory, i int) uint64 {
	switch i {
	case 0:
		return uint64(d.ParentEntry)
	case 1:
		return uint64(d.FirstEntry)
	}
	return uint64(d.SelfEntry)
}

// inodeInts follows inodeDataNode's declaration order.
func inodeInts(n *InodeData, i int) uint64 {
	switch i {
	case 0:
		return uint64(n.ModeIndex)
	case 1:
		return uint64(n.OwnerIndex)
	case 2:
		return uint64(n.GroupIndex)
	case 3:
		return n.AtimeOffset
	case 4:
		return n.MtimeOffset
	case 5:
		return n.CtimeOffset
	case 6:
		return n.BtimeOffset
	case 7:
		return n.AtimeSubsec
	case 8:
		return n.MtimeSubsec
	case 9:
		return n.CtimeSubsec
	case 10:
		return n.BtimeSubsec
	case 11:
		return uint64(n.NlinkMinusOne)
	case 12:
		return uint64(n.NameIndexV22)
	}
	return uint64(n.InodeV22)
}

func dirEntryInts(e *DirEntry, i int) uint64 {
	if i == 0 {
		return uint64(e.NameIndex)
	}
	return uint64(e.InodeNum)
}

// metadataValue maps md onto the metadataNode field order.
func metadataValue(md *Metadata) fval {
	return fval{f: []fval{
		intStructs(md.Chunks, chunkInts),
		intStructs(md.Directories, directoryInts),
		intStructs(md.Inodes, inodeInts),
		u32s(md.ChunkTable),
		u32s(md.EntryTableV22),
		u32s(md.SymlinkTable),
		u32s(md.Uids),
		u32s(md.Gids),
		u32s(md.Modes),
		strs(md.Names),
		strs(md.Symlinks),
		uv(md.TimestampBase),
		uv(uint64(md.ChunkInodeOffset)),
		uv(uint64(md.LinkInodeOffset)),
		uv(uint64(md.BlockSize)),
		uv(md.TotalFsSize),
		when(md.HasDevices, func() fval { return u64s(md.Devices) }),
		optFsOptions(md.Options),
		when(md.HasDirEntries, func() fval { return intStructs(md.DirEntries, dirEntryInts) }),
		when(md.HasSharedFilesTable, func() fval { return u32s(md.SharedFilesTable) }),
		optU64(md.TotalHardlinkSize),
		optStr(md.DwarfsVersion),
		optU64(md.CreateTimestamp),
		optStringTable(md.CompactNames),
		optStringTable(md.CompactSymlinks),
		optU32(md.PreferredPathSeparator),
		when(md.HasFeatures, func() fval { return strSet(md.Features) }),
		when(md.HasCategoryNames, func() fval { return strs(md.CategoryNames) }),
		when(md.HasBlockCategories, func() fval { return u32s(md.BlockCategories) }),
		optSizeCache(md.RegFileSizeCache),
		when(md.HasCategoryMetadataJSON, func() fval { return strs(md.CategoryMetadataJSON) }),
		when(md.HasBlockCategoryMetadata, func() fval { return kv32Map(md.BlockCategoryMetadata) }),
		when(md.HasMetadataVersionHistory, func() fval { return listOf(md.MetadataVersionHistory, historyValue) }),
		optU32(md.HoleBlockIndex),
		when(md.HasLargeHoleSize, func() fval { return u64s(md.LargeHoleSize) }),
		optU64(md.TotalAllocatedFsSize),
	}}
}

// Package metadata holds the DwarFS metadata model (the thawed form of the
// thrift "metadata" struct), the Frozen2 codec that reads and writes it, and
// a filesystem view with lookups built on top of it.
package metadata

// Chunk is a byte range of one decompressed BLOCK section. For sparse files a
// chunk whose Block equals Metadata.HoleBlockIndex is a hole.
type Chunk struct {
	Block  uint32
	Offset uint32
	Size   uint32
}

// Directory is one element of the directories table (one per directory inode
// plus a sentinel). In the legacy (<= 2.2) model ParentEntry holds the parent
// inode number.
type Directory struct {
	ParentEntry uint32
	FirstEntry  uint32
	SelfEntry   uint32
}

// InodeData is one element of the inodes table. In the legacy model it is a
// directory entry and NameIndexV22/InodeV22 are used.
type InodeData struct {
	ModeIndex     uint32
	OwnerIndex    uint32
	GroupIndex    uint32
	AtimeOffset   uint64
	MtimeOffset   uint64
	CtimeOffset   uint64
	BtimeOffset   uint64
	AtimeSubsec   uint64
	MtimeSubsec   uint64
	CtimeSubsec   uint64
	BtimeSubsec   uint64
	NlinkMinusOne uint32
	NameIndexV22  uint32
	InodeV22      uint32
}

// DirEntry is one element of dir_entries (2.3+ model).
type DirEntry struct {
	NameIndex uint32
	InodeNum  uint32
}

// FsOptions mirrors the thrift fs_options struct. Pointer fields are
// thrift optionals: nil means unset.
type FsOptions struct {
	MtimeOnly                         bool
	TimeResolutionSec                 *uint32
	PackedChunkTable                  bool
	PackedDirectories                 bool
	PackedSharedFilesTable            bool
	SubsecondResolutionNsecMultiplier *uint32
	HasBtime                          bool
	InodesHaveNlink                   bool
}

// StringTable mirrors the thrift string_table struct (compact names or
// symlinks). Symtab == nil means the strings are stored raw.
type StringTable struct {
	Buffer      []byte
	Symtab      []byte // nil: unset (no FSST)
	Index       []uint32
	PackedIndex bool

	// index is Index still packed (DecodeLazy), with Index nil: a large
	// image's names index is read once, into the offsets its strTab
	// keeps, and a thawed copy would double it.
	index *inodeView
}

// indexLen returns the number of index elements, thawed or packed.
func (st *StringTable) indexLen() int {
	if st.packed() {
		return st.index.n
	}
	return len(st.Index)
}

// indexFill stores index elements lo, lo+1, ... in dst.
func (st *StringTable) indexFill(lo int, dst []uint32) {
	if st.packed() {
		st.index.fill(0, lo, dst)
		return
	}
	copy(dst, st.Index[lo:])
}

// indexAt returns index element i.
func (st *StringTable) indexAt(i int) uint32 {
	if st.packed() {
		return uint32(st.index.get(i, 0))
	}
	return st.Index[i]
}

// packed reports whether the index is still packed.
func (st *StringTable) packed() bool { return st != nil && st.Index == nil && st.index != nil }

// thawed returns st with Index thawed: st itself when it is, else a copy.
func (st *StringTable) thawed() *StringTable {
	if !st.packed() {
		return st
	}
	c := *st
	c.Index = make([]uint32, st.index.n)
	st.index.fill(0, 0, c.Index)
	c.index = nil
	return &c
}

// KV is one entry of a map<u32,u64>, kept sorted by Key.
type KV struct {
	Key   uint32
	Value uint64
}

// InodeSizeCache mirrors thrift inode_size_cache.
type InodeSizeCache struct {
	SizeLookup          []KV
	MinChunkCount       uint64
	AllocatedSizeLookup []KV
}

// HistoryEntry mirrors thrift history_entry (metadata_version_history).
type HistoryEntry struct {
	Major         uint8
	Minor         uint8
	DwarfsVersion *string
	BlockSize     uint32
	Options       *FsOptions
}

// KV32 is one entry of a map<u32,u32>, kept sorted by Key.
type KV32 struct {
	Key   uint32
	Value uint32
}

// Metadata is the complete logical metadata of an image. Optional thrift
// fields use a pointer (scalars, structs) or a Has flag (containers).
type Metadata struct {
	Chunks           []Chunk     // #1
	Directories      []Directory // #2
	Inodes           []InodeData // #3
	ChunkTable       []uint32    // #4
	EntryTableV22    []uint32    // #5
	SymlinkTable     []uint32    // #6
	Uids             []uint32    // #7
	Gids             []uint32    // #8
	Modes            []uint32    // #9
	Names            []string    // #10
	Symlinks         []string    // #11
	TimestampBase    uint64      // #12
	ChunkInodeOffset uint32      // #13 (deprecated)
	LinkInodeOffset  uint32      // #14 (deprecated)
	BlockSize        uint32      // #15
	TotalFsSize      uint64      // #16

	Devices    []uint64 // #17 optional
	HasDevices bool

	Options *FsOptions // #18 optional

	DirEntries    []DirEntry // #19 optional; presence selects the 2.3+ model
	HasDirEntries bool

	SharedFilesTable    []uint32 // #20 optional
	HasSharedFilesTable bool

	TotalHardlinkSize *uint64 // #21
	DwarfsVersion     *string // #22
	CreateTimestamp   *uint64 // #23

	CompactNames    *StringTable // #24
	CompactSymlinks *StringTable // #25

	PreferredPathSeparator *uint32 // #26

	Features    []string // #27 optional set, sorted
	HasFeatures bool

	CategoryNames    []string // #28
	HasCategoryNames bool

	BlockCategories    []uint32 // #29
	HasBlockCategories bool

	RegFileSizeCache *InodeSizeCache // #30

	CategoryMetadataJSON    []string // #31
	HasCategoryMetadataJSON bool

	BlockCategoryMetadata    []KV32 // #32
	HasBlockCategoryMetadata bool

	MetadataVersionHistory    []HistoryEntry // #33
	HasMetadataVersionHistory bool

	HoleBlockIndex *uint32 // #34

	LargeHoleSize    []uint64 // #35
	HasLargeHoleSize bool

	TotalAllocatedFsSize *uint64 // #36

	// Where the plain names/symlinks strings lay in the Frozen2 data; set
	// by Decode only, for the full check.
	namesSpan, symlinksSpan plainSpan

	// The inodes table, the chunks, the dir_entries, the chunk_table and
	// the shared_files_table left packed by DecodeLazy (Inodes, Chunks,
	// DirEntries, ChunkTable and SharedFilesTable are nil then).
	inodes    *inodeView
	chunks    *inodeView
	dirEnts   *inodeView
	chunkTbl  *inodeView
	sharedTbl *inodeView
}

// plainSpan is the distance from a plain string list's first string data
// to its last string's end (-1: an end string is empty and has no data
// position); known is false for metadata not produced by Decode.
type plainSpan struct {
	known bool
	span  int64
}

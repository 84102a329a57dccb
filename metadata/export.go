package metadata

import (
	"encoding/json"
	"fmt"
	"io"
)

// ExportJSON writes md as one JSON object (dwarfsck --export-metadata).
// The shape is stable and mirrors thrift/metadata.thrift: keys are the
// thrift field names in snake_case, values are the stored (not
// normalised) tables, so packed tables appear packed. Optional thrift
// fields that are unset are omitted; required fields are always present
// (empty lists as []).
//
//	{
//	  "chunks":         [{"block": u32, "offset": u32, "size": u32}, ...],
//	  "directories":    [{"parent_entry": u32, "first_entry": u32, "self_entry": u32}, ...],
//	  "inodes":         [{"mode_index", "owner_index", "group_index",
//	                      "atime_offset", "mtime_offset", "ctime_offset",
//	                      "btime_offset", "atime_subsec", "mtime_subsec",
//	                      "ctime_subsec", "btime_subsec", "nlink_minus_one",
//	                      "name_index_v2_2", "inode_v2_2"}, ...],
//	  "chunk_table": [u32], "entry_table_v2_2": [u32], "symlink_table": [u32],
//	  "uids": [u32], "gids": [u32], "modes": [u32],
//	  "names": [string], "symlinks": [string],
//	  "timestamp_base": u64, "chunk_inode_offset": u32, "link_inode_offset": u32,
//	  "block_size": u32, "total_fs_size": u64,
//	  "devices": [u64],                                          (optional)
//	  "options": {"mtime_only": bool, "time_resolution_sec": u32?,
//	              "packed_chunk_table": bool, "packed_directories": bool,
//	              "packed_shared_files_table": bool,
//	              "subsecond_resolution_nsec_multiplier": u32?,
//	              "has_btime": bool, "inodes_have_nlink": bool}, (optional)
//	  "dir_entries": [{"name_index": u32, "inode_num": u32}],     (optional)
//	  "shared_files_table": [u32],                                (optional)
//	  "total_hardlink_size": u64, "dwarfs_version": string,
//	  "create_timestamp": u64,                                    (optional)
//	  "compact_names" / "compact_symlinks":
//	      {"buffer": base64, "symtab": base64 (omitted: no FSST),
//	       "index": [u32], "packed_index": bool},                 (optional)
//	  "preferred_path_separator": u32, "features": [string],
//	  "category_names": [string], "block_categories": [u32],
//	  "reg_file_size_cache": {"size_lookup": {"<u32>": u64},
//	      "min_chunk_count": u64, "allocated_size_lookup": {"<u32>": u64}},
//	  "category_metadata_json": [string],
//	  "block_category_metadata": {"<u32>": u32},
//	  "metadata_version_history": [{"major": u8, "minor": u8,
//	      "dwarfs_version": string?, "block_size": u32, "options": {...}?}],
//	  "hole_block_index": u32, "large_hole_size": [u64],
//	  "total_allocated_fs_size": u64                              (all optional)
//	}
//
// Byte strings (buffer, symtab) are standard base64 with padding; map
// keys are decimal strings, as encoding/json writes integer keys.
func ExportJSON(md *Metadata, w io.Writer) error {
	if md == nil {
		return fmt.Errorf("metadata: export: nil metadata")
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(toJSON(md.Thawed())); err != nil {
		return fmt.Errorf("metadata: export: %w", err)
	}
	return nil
}

type jChunk struct {
	Block  uint32 `json:"block"`
	Offset uint32 `json:"offset"`
	Size   uint32 `json:"size"`
}

type jDirectory struct {
	ParentEntry uint32 `json:"parent_entry"`
	FirstEntry  uint32 `json:"first_entry"`
	SelfEntry   uint32 `json:"self_entry"`
}

type jInode struct {
	ModeIndex     uint32 `json:"mode_index"`
	OwnerIndex    uint32 `json:"owner_index"`
	GroupIndex    uint32 `json:"group_index"`
	AtimeOffset   uint64 `json:"atime_offset"`
	MtimeOffset   uint64 `json:"mtime_offset"`
	CtimeOffset   uint64 `json:"ctime_offset"`
	BtimeOffset   uint64 `json:"btime_offset"`
	AtimeSubsec   uint64 `json:"atime_subsec"`
	MtimeSubsec   uint64 `json:"mtime_subsec"`
	CtimeSubsec   uint64 `json:"ctime_subsec"`
	BtimeSubsec   uint64 `json:"btime_subsec"`
	NlinkMinusOne uint32 `json:"nlink_minus_one"`
	NameIndexV22  uint32 `json:"name_index_v2_2"`
	InodeV22      uint32 `json:"inode_v2_2"`
}

type jDirEntry struct {
	NameIndex uint32 `json:"name_index"`
	InodeNum  uint32 `json:"inode_num"`
}

type jOptions struct {
	MtimeOnly                         bool    `json:"mtime_only"`
	TimeResolutionSec                 *uint32 `json:"time_resolution_sec,omitempty"`
	PackedChunkTable                  bool    `json:"packed_chunk_table"`
	PackedDirectories                 bool    `json:"packed_directories"`
	PackedSharedFilesTable            bool    `json:"packed_shared_files_table"`
	SubsecondResolutionNsecMultiplier *uint32 `json:"subsecond_resolution_nsec_multiplier,omitempty"`
	HasBtime                          bool    `json:"has_btime"`
	InodesHaveNlink                   bool    `json:"inodes_have_nlink"`
}

type jStringTable struct {
	Buffer      []byte   `json:"buffer"`
	Symtab      []byte   `json:"symtab,omitempty"`
	Index       []uint32 `json:"index"`
	PackedIndex bool     `json:"packed_index"`
}

type jSizeCache struct {
	SizeLookup          map[uint32]uint64 `json:"size_lookup"`
	MinChunkCount       uint64            `json:"min_chunk_count"`
	AllocatedSizeLookup map[uint32]uint64 `json:"allocated_size_lookup"`
}

type jHistoryEntry struct {
	Major         uint8     `json:"major"`
	Minor         uint8     `json:"minor"`
	DwarfsVersion *string   `json:"dwarfs_version,omitempty"`
	BlockSize     uint32    `json:"block_size"`
	Options       *jOptions `json:"options,omitempty"`
}

type jMetadata struct {
	Chunks           []jChunk     `json:"chunks"`
	Directories      []jDirectory `json:"directories"`
	Inodes           []jInode     `json:"inodes"`
	ChunkTable       []uint32     `json:"chunk_table"`
	EntryTableV22    []uint32     `json:"entry_table_v2_2"`
	SymlinkTable     []uint32     `json:"symlink_table"`
	Uids             []uint32     `json:"uids"`
	Gids             []uint32     `json:"gids"`
	Modes            []uint32     `json:"modes"`
	Names            []string     `json:"names"`
	Symlinks         []string     `json:"symlinks"`
	TimestampBase    uint64       `json:"timestamp_base"`
	ChunkInodeOffset uint32       `json:"chunk_inode_offset"`
	LinkInodeOffset  uint32       `json:"link_inode_offset"`
	BlockSize        uint32       `json:"block_size"`
	TotalFsSize      uint64       `json:"total_fs_size"`

	Devices                *[]uint64         `json:"devices,omitempty"`
	Options                *jOptions         `json:"options,omitempty"`
	DirEntries             *[]jDirEntry      `json:"dir_entries,omitempty"`
	SharedFilesTable       *[]uint32         `json:"shared_files_table,omitempty"`
	TotalHardlinkSize      *uint64           `json:"total_hardlink_size,omitempty"`
	DwarfsVersion          *string           `json:"dwarfs_version,omitempty"`
	CreateTimestamp        *uint64           `json:"create_timestamp,omitempty"`
	CompactNames           *jStringTable     `json:"compact_names,omitempty"`
	CompactSymlinks        *jStringTable     `json:"compact_symlinks,omitempty"`
	PreferredPathSeparator *uint32           `json:"preferred_path_separator,omitempty"`
	Features               *[]string         `json:"features,omitempty"`
	CategoryNames          *[]string         `json:"category_names,omitempty"`
	BlockCategories        *[]uint32         `json:"block_categories,omitempty"`
	RegFileSizeCache       *jSizeCache       `json:"reg_file_size_cache,omitempty"`
	CategoryMetadataJSON   *[]string         `json:"category_metadata_json,omitempty"`
	BlockCategoryMetadata  map[uint32]uint32 `json:"block_category_metadata,omitempty"`
	MetadataVersionHistory *[]jHistoryEntry  `json:"metadata_version_history,omitempty"`
	HoleBlockIndex         *uint32           `json:"hole_block_index,omitempty"`
	LargeHoleSize          *[]uint64         `json:"large_hole_size,omitempty"`
	TotalAllocatedFsSize   *uint64           `json:"total_allocated_fs_size,omitempty"`
}

func jsonNonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func jsonOptList[T any](s []T, has bool) *[]T {
	if !has {
		return nil
	}
	v := jsonNonNil(s)
	return &v
}

func optionsJSON(o *FsOptions) *jOptions {
	if o == nil {
		return nil
	}
	return &jOptions{o.MtimeOnly, o.TimeResolutionSec, o.PackedChunkTable, o.PackedDirectories,
		o.PackedSharedFilesTable, o.SubsecondResolutionNsecMultiplier, o.HasBtime, o.InodesHaveNlink}
}

func stringTableJSON(t *StringTable) *jStringTable {
	if t == nil {
		return nil
	}
	return &jStringTable{Buffer: jsonNonNil(t.Buffer), Symtab: t.Symtab, Index: jsonNonNil(t.Index), PackedIndex: t.PackedIndex}
}

func jsonKVMap(kvs []KV) map[uint32]uint64 {
	m := make(map[uint32]uint64, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

func toJSON(md *Metadata) *jMetadata {
	j := &jMetadata{
		Chunks:           make([]jChunk, len(md.Chunks)),
		Directories:      make([]jDirectory, len(md.Directories)),
		Inodes:           make([]jInode, len(md.Inodes)),
		ChunkTable:       jsonNonNil(md.ChunkTable),
		EntryTableV22:    jsonNonNil(md.EntryTableV22),
		SymlinkTable:     jsonNonNil(md.SymlinkTable),
		Uids:             jsonNonNil(md.Uids),
		Gids:             jsonNonNil(md.Gids),
		Modes:            jsonNonNil(md.Modes),
		Names:            jsonNonNil(md.Names),
		Symlinks:         jsonNonNil(md.Symlinks),
		TimestampBase:    md.TimestampBase,
		ChunkInodeOffset: md.ChunkInodeOffset,
		LinkInodeOffset:  md.LinkInodeOffset,
		BlockSize:        md.BlockSize,
		TotalFsSize:      md.TotalFsSize,

		Devices:                jsonOptList(md.Devices, md.HasDevices),
		Options:                optionsJSON(md.Options),
		SharedFilesTable:       jsonOptList(md.SharedFilesTable, md.HasSharedFilesTable),
		TotalHardlinkSize:      md.TotalHardlinkSize,
		DwarfsVersion:          md.DwarfsVersion,
		CreateTimestamp:        md.CreateTimestamp,
		CompactNames:           stringTableJSON(md.CompactNames),
		CompactSymlinks:        stringTableJSON(md.CompactSymlinks),
		PreferredPathSeparator: md.PreferredPathSeparator,
		Features:               jsonOptList(md.Features, md.HasFeatures),
		CategoryNames:          jsonOptList(md.CategoryNames, md.HasCategoryNames),
		BlockCategories:        jsonOptList(md.BlockCategories, md.HasBlockCategories),
		CategoryMetadataJSON:   jsonOptList(md.CategoryMetadataJSON, md.HasCategoryMetadataJSON),
		HoleBlockIndex:         md.HoleBlockIndex,
		LargeHoleSize:          jsonOptList(md.LargeHoleSize, md.HasLargeHoleSize),
		TotalAllocatedFsSize:   md.TotalAllocatedFsSize,
	}
	for i, c := range md.Chunks {
		j.Chunks[i] = jChunk(c)
	}
	for i, d := range md.Directories {
		j.Directories[i] = jDirectory(d)
	}
	for i, in := range md.Inodes {
		j.Inodes[i] = jInode(in)
	}
	if md.HasDirEntries {
		des := make([]jDirEntry, len(md.DirEntries))
		for i, e := range md.DirEntries {
			des[i] = jDirEntry(e)
		}
		j.DirEntries = &des
	}
	if c := md.RegFileSizeCache; c != nil {
		j.RegFileSizeCache = &jSizeCache{SizeLookup: jsonKVMap(c.SizeLookup), MinChunkCount: c.MinChunkCount,
			AllocatedSizeLookup: jsonKVMap(c.AllocatedSizeLookup)}
	}
	if md.HasBlockCategoryMetadata {
		j.BlockCategoryMetadata = make(map[uint32]uint32, len(md.BlockCategoryMetadata))
		for _, kv := range md.BlockCategoryMetadata {
			j.BlockCategoryMetadata[kv.Key] = kv.Value
		}
	}
	if md.HasMetadataVersionHistory {
		hs := make([]jHistoryEntry, len(md.MetadataVersionHistory))
		for i, h := range md.MetadataVersionHistory {
			hs[i] = jHistoryEntry{h.Major, h.Minor, h.DwarfsVersion, h.BlockSize, optionsJSON(h.Options)}
		}
		j.MetadataVersionHistory = &hs
	}
	return j
}

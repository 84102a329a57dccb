package metadata

import (
	"bytes"
	"encoding/binary"
	"sort"
	"testing"
)

// fuzzSource turns fuzz bytes into values; it yields zeros when exhausted so
// every input builds some Metadata.
type fuzzSource struct{ b []byte }

func (f *fuzzSource) byte() byte {
	if len(f.b) == 0 {
		return 0
	}
	c := f.b[0]
	f.b = f.b[1:]
	return c
}

// num returns a value whose width is chosen by the input, so layouts of
// every width (0..64 bits) get exercised.
func (f *fuzzSource) num() uint64 {
	sel := f.byte()
	var buf [8]byte
	n := int(sel % 9)
	for i := range n {
		buf[i] = f.byte()
	}
	return binary.LittleEndian.Uint64(buf[:]) >> (sel / 9 % 8)
}

func (f *fuzzSource) u32() uint32 { return uint32(f.num()) }
func (f *fuzzSource) flag() bool  { return f.byte()&1 != 0 }
func (f *fuzzSource) count() int  { return int(f.byte() % 8) }

func (f *fuzzSource) str() string {
	n := int(f.byte() % 12)
	b := make([]byte, n)
	for i := range b {
		b[i] = f.byte()
	}
	return string(b)
}

func (f *fuzzSource) u32s() []uint32 {
	s := make([]uint32, f.count())
	for i := range s {
		s[i] = f.u32()
	}
	return s
}

func (f *fuzzSource) strs() []string {
	s := make([]string, f.count())
	for i := range s {
		s[i] = f.str()
	}
	return s
}

func (f *fuzzSource) optU32() *uint32 {
	if !f.flag() {
		return nil
	}
	v := f.u32()
	return &v
}

func (f *fuzzSource) optU64() *uint64 {
	if !f.flag() {
		return nil
	}
	v := f.num()
	return &v
}

func (f *fuzzSource) optStr() *string {
	if !f.flag() {
		return nil
	}
	v := f.str()
	return &v
}

func (f *fuzzSource) options() *FsOptions {
	if !f.flag() {
		return nil
	}
	return &FsOptions{
		MtimeOnly: f.flag(), TimeResolutionSec: f.optU32(), PackedChunkTable: f.flag(),
		PackedDirectories: f.flag(), PackedSharedFilesTable: f.flag(),
		SubsecondResolutionNsecMultiplier: f.optU32(), HasBtime: f.flag(), InodesHaveNlink: f.flag(),
	}
}

func (f *fuzzSource) stringTable() *StringTable {
	if !f.flag() {
		return nil
	}
	st := &StringTable{Buffer: []byte(f.str()), Index: f.u32s(), PackedIndex: f.flag()}
	if f.flag() {
		st.Symtab = []byte(f.str())
	}
	return st
}

func (f *fuzzSource) kvs() []KV {
	m := map[uint32]uint64{}
	for range f.count() {
		m[f.u32()] = f.num()
	}
	out := make([]KV, 0, len(m))
	for k, v := range m {
		out = append(out, KV{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// fuzzMetadata builds a canonical Metadata (sets and maps sorted and
// unique), so Decode(Encode(md)) must equal md exactly.
func fuzzMetadata(data []byte) *Metadata {
	f := &fuzzSource{b: data}
	md := &Metadata{}
	for range f.count() {
		md.Chunks = append(md.Chunks, Chunk{f.u32(), f.u32(), f.u32()})
	}
	for range f.count() {
		md.Directories = append(md.Directories, Directory{f.u32(), f.u32(), f.u32()})
	}
	for range f.count() {
		md.Inodes = append(md.Inodes, InodeData{
			ModeIndex: f.u32(), OwnerIndex: f.u32(), GroupIndex: f.u32(),
			AtimeOffset: f.num(), MtimeOffset: f.num(), CtimeOffset: f.num(), BtimeOffset: f.num(),
			AtimeSubsec: f.num(), MtimeSubsec: f.num(), CtimeSubsec: f.num(), BtimeSubsec: f.num(),
			NlinkMinusOne: f.u32(), NameIndexV22: f.u32(), InodeV22: f.u32(),
		})
	}
	md.ChunkTable, md.EntryTableV22, md.SymlinkTable = f.u32s(), f.u32s(), f.u32s()
	md.Uids, md.Gids, md.Modes = f.u32s(), f.u32s(), f.u32s()
	md.Names, md.Symlinks = f.strs(), f.strs()
	md.TimestampBase, md.ChunkInodeOffset, md.LinkInodeOffset = f.num(), f.u32(), f.u32()
	md.BlockSize, md.TotalFsSize = f.u32(), f.num()
	if md.HasDevices = f.flag(); md.HasDevices {
		for range f.count() {
			md.Devices = append(md.Devices, f.num())
		}
	}
	md.Options = f.options()
	if md.HasDirEntries = f.flag(); md.HasDirEntries {
		for range f.count() {
			md.DirEntries = append(md.DirEntries, DirEntry{f.u32(), f.u32()})
		}
	}
	if md.HasSharedFilesTable = f.flag(); md.HasSharedFilesTable {
		md.SharedFilesTable = f.u32s()
	}
	md.TotalHardlinkSize, md.DwarfsVersion, md.CreateTimestamp = f.optU64(), f.optStr(), f.optU64()
	md.CompactNames, md.CompactSymlinks = f.stringTable(), f.stringTable()
	md.PreferredPathSeparator = f.optU32()
	if md.HasFeatures = f.flag(); md.HasFeatures {
		set := map[string]bool{}
		for _, s := range f.strs() {
			set[s] = true
		}
		for s := range set {
			md.Features = append(md.Features, s)
		}
		sort.Strings(md.Features)
	}
	if md.HasCategoryNames = f.flag(); md.HasCategoryNames {
		md.CategoryNames = f.strs()
	}
	if md.HasBlockCategories = f.flag(); md.HasBlockCategories {
		md.BlockCategories = f.u32s()
	}
	if f.flag() {
		md.RegFileSizeCache = &InodeSizeCache{SizeLookup: f.kvs(), MinChunkCount: f.num(), AllocatedSizeLookup: f.kvs()}
	}
	if md.HasCategoryMetadataJSON = f.flag(); md.HasCategoryMetadataJSON {
		md.CategoryMetadataJSON = f.strs()
	}
	if md.HasBlockCategoryMetadata = f.flag(); md.HasBlockCategoryMetadata {
		for _, kv := range f.kvs() {
			md.BlockCategoryMetadata = append(md.BlockCategoryMetadata, KV32{kv.Key, uint32(kv.Value)})
		}
	}
	if md.HasMetadataVersionHistory = f.flag(); md.HasMetadataVersionHistory {
		for range f.count() {
			md.MetadataVersionHistory = append(md.MetadataVersionHistory, HistoryEntry{
				Major: f.byte(), Minor: f.byte(), DwarfsVersion: f.optStr(), BlockSize: f.u32(), Options: f.options(),
			})
		}
	}
	md.HoleBlockIndex = f.optU32()
	if md.HasLargeHoleSize = f.flag(); md.HasLargeHoleSize {
		for range f.count() {
			md.LargeHoleSize = append(md.LargeHoleSize, f.num())
		}
	}
	md.TotalAllocatedFsSize = f.optU64()
	return md
}

func FuzzEncodeRoundTrip(f *testing.F) {
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 64))
	f.Add(bytes.Repeat([]byte{7, 1, 0x80, 3, 42}, 200))
	f.Add(bytes.Repeat([]byte{8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1}, 100))
	f.Fuzz(func(t *testing.T, data []byte) {
		md := fuzzMetadata(data)
		schema, frozen, err := Encode(md)
		if err != nil {
			t.Fatalf("Encode: %v", err)
		}
		got, err := Decode(schema, frozen)
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		if !modelEqual(md, got) {
			t.Fatalf("round trip mismatch:\n got %+v\nwant %+v", got, md)
		}
		// Re-encoding a decoded value must be stable byte for byte.
		schema2, frozen2, err := Encode(got)
		if err != nil || !bytes.Equal(schema, schema2) || !bytes.Equal(frozen, frozen2) {
			t.Fatalf("re-encoding differs (err %v)", err)
		}
	})
}

package metadata

import (
	"fmt"
	"strings"
	"testing"
)

// legacyMetadata builds a small format-2.0/2.2 style tree (no dir_entries,
// plain strings): /d/x -> link target "tgt", /f (4 bytes), /l -> "other".
//
// Inodes: 0 root, 1 d (dirs); 2 x, 3 l (symlinks); 4 f (regular).
func legacyMetadata() *Metadata {
	return &Metadata{
		Modes: []uint32{0o40755, 0o120777, 0o100644},
		// Entries in directory order: root, then root's (d, f, l), then d's (x).
		Inodes: []InodeData{
			{ModeIndex: 0, InodeV22: 0},
			{ModeIndex: 0, InodeV22: 1, NameIndexV22: 0},
			{ModeIndex: 2, InodeV22: 4, NameIndexV22: 1},
			{ModeIndex: 1, InodeV22: 3, NameIndexV22: 2},
			{ModeIndex: 1, InodeV22: 2, NameIndexV22: 3},
		},
		EntryTableV22: []uint32{0, 1, 4, 3, 2},
		Names:         []string{"d", "f", "l", "x"},
		Symlinks:      []string{"other", "tgt"},
		SymlinkTable:  []uint32{1, 0},
		Directories:   []Directory{{0, 1, 0}, {0, 4, 0}, {0, 5, 0}},
		ChunkTable:    []uint32{0, 1},
		Chunks:        []Chunk{{0, 0, 4}},
		BlockSize:     4096,
	}
}

// reencode runs md through the Frozen2 encoder and decoder, as an image
// would carry it.
func reencode(t *testing.T, md *Metadata) *Metadata {
	t.Helper()
	schema, data, err := Encode(md)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	got, err := Decode(schema, data)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return got
}

// loadErr returns the error loading md gives: from NewFS or from Check.
func loadErr(md *Metadata) error {
	f, err := NewFS(md)
	if err != nil {
		return err
	}
	return f.Check()
}

func TestCheckGoodModels(t *testing.T) {
	for name, md := range map[string]*Metadata{"legacy": legacyMetadata(), "sample": sampleMetadata()} {
		if err := loadErr(reencode(t, md)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestCheckTables corrupts one rule at a time, encodes the model as an
// image would carry it and asserts the error names the table, the index and
// the bad value.
func TestCheckTables(t *testing.T) {
	sample := func(mut func(*Metadata)) func() *Metadata {
		return func() *Metadata { md := sampleMetadata(); mut(md); return md }
	}
	legacy := func(mut func(*Metadata)) func() *Metadata {
		return func() *Metadata { md := legacyMetadata(); mut(md); return md }
	}
	cases := []struct {
		name string
		md   func() *Metadata
		want string
	}{
		// empty tables
		{"no modes", sample(func(md *Metadata) { md.Modes = nil }), "mode_index 0 out of range (0 modes)"},
		{"no chunk_table", sample(func(md *Metadata) { md.ChunkTable = nil }), "chunk_table"},
		// table sizes against the inode count
		{"too many uids", sample(func(md *Metadata) { md.Uids = make([]uint32, 8) }), "8 uids for 7 inodes"},
		{"too many gids", sample(func(md *Metadata) { md.Gids = make([]uint32, 8) }), "8 gids for 7 inodes"},
		{"more inodes than entries", sample(func(md *Metadata) {
			md.DirEntries = md.DirEntries[:6]
			md.Directories[2].FirstEntry = 6
		}), "7 inodes but only 6 dir_entries"},
		// indexes within bounds
		{"mode index", sample(func(md *Metadata) { md.Inodes[3].ModeIndex = 9 }), "inodes[3].mode_index 9 out of range (3 modes)"},
		{"owner index", sample(func(md *Metadata) { md.Inodes[3].OwnerIndex = 4 }), "inodes[3].owner_index 4 out of range (1 uids)"},
		{"group index", sample(func(md *Metadata) { md.Inodes[4].GroupIndex = 2 }), "inodes[4].group_index 2 out of range (1 gids)"},
		{"entry inode", sample(func(md *Metadata) { md.DirEntries[3].InodeNum = 70 }), "entry 3: inode 70 out of range (7 inodes)"},
		{"entry name", sample(func(md *Metadata) { md.DirEntries[3].NameIndex = 70 }), "entry 3: name index 70 out of range (6 names)"},
		{"root entry name", sample(func(md *Metadata) { md.DirEntries[0].NameIndex = 6 }), "entry 0: name index 6 out of range (6 names)"},
		{"legacy entry table", legacy(func(md *Metadata) { md.EntryTableV22[2] = 9 }), "entry_table_v2_2[2] = 9 out of range (5 inodes)"},
		{"legacy entry name", legacy(func(md *Metadata) { md.Inodes[2].NameIndexV22 = 9 }), "entry 2: name index 9 out of range (4 names)"},
		{"symlink index", sample(func(md *Metadata) { md.SymlinkTable[0] = 4 }), "symlink_table[0] = 4 out of range (1 symlinks)"},
		{"chunk block", sample(func(md *Metadata) { md.Chunks[2].Offset = 1024 }), "chunks[2]: offset 1024 out of range (block size 1024)"},
		{"chunk end", sample(func(md *Metadata) { md.Chunks[0].Size = 5000 }), "chunks[0]: 0+5000 exceeds block size 1024"},
		{"block size", sample(func(md *Metadata) { md.BlockSize = 1000 }), "block_size 1000 is not a power of two"},
		{"large hole index", sample(func(md *Metadata) {
			md.Features, md.HasFeatures = []string{"sparsefiles"}, true
			md.HoleBlockIndex = u32p(2)
			md.Chunks[2] = Chunk{2, 0xFFFFFFFF, 3}
		}), "chunks[2]: large hole index 3 out of range"},
		{"hole without feature", sample(func(md *Metadata) { md.HoleBlockIndex = u32p(7) }), "feature sparsefiles (false) without matching hole_block_index (true)"},
		// string tables: count, lengths, sizes
		{"extra name", sample(func(md *Metadata) { md.Names = append(md.Names, "z") }), "names: 7 strings, indexes need 6"},
		{"extra symlink", sample(func(md *Metadata) { md.Symlinks = append(md.Symlinks, "z") }), "symlinks: 2 strings, indexes need 1"},
		{"legacy extra symlink", legacy(func(md *Metadata) { md.Symlinks = append(md.Symlinks, "z") }), "symlinks: 3 strings, indexes need 2"},
		{"long name", sample(func(md *Metadata) { md.Names[5] = "l" + strings.Repeat("x", 600) }), "names[5]: 601 bytes exceeds 512"},
		{"long symlink", sample(func(md *Metadata) { md.Symlinks[0] = strings.Repeat("x", 5000) }), "symlinks[0]: 5000 bytes exceeds 4096"},
		{"compact index start", sample(func(md *Metadata) {
			md.CompactNames = &StringTable{Buffer: []byte("xaf1f2ghl"), Index: []uint32{1, 2, 4, 6, 7, 8, 9}}
			md.Names = nil
		}), "compact_names: index[0] is 1, not 0"},
		{"compact index unsorted", sample(func(md *Metadata) {
			md.CompactNames = &StringTable{Buffer: []byte("af1f2ghl"), Index: []uint32{0, 1, 3, 2, 6, 7, 8}}
			md.Names = nil
		}), "compact_names: string 2 range 3..2 outside buffer of 8 bytes"},
		{"compact buffer size", sample(func(md *Metadata) {
			md.CompactSymlinks = &StringTable{Buffer: []byte("f1zz"), Index: []uint32{0, 2}}
			md.Symlinks = nil
		}), "compact_symlinks: index describes 2 bytes, buffer has 4"},
		{"compact packed size", sample(func(md *Metadata) {
			md.CompactSymlinks = &StringTable{Buffer: []byte("f1zz"), Index: []uint32{2}, PackedIndex: true}
			md.Symlinks = nil
		}), "compact_symlinks: index describes 2 bytes, buffer has 4"},
		{"compact count", sample(func(md *Metadata) {
			md.CompactSymlinks = &StringTable{Buffer: []byte("f1z"), Index: []uint32{2, 1}, PackedIndex: true}
			md.Symlinks = nil
		}), "compact_symlinks: 2 strings, indexes need 1"},
		{"compact stored length", sample(func(md *Metadata) {
			md.CompactSymlinks = &StringTable{Buffer: make([]byte, 5000), Index: []uint32{5000}, PackedIndex: true}
			md.Symlinks = nil
		}), "compact_symlinks[0]: stored length 5000 exceeds 4096"},
		{"both tables", sample(func(md *Metadata) {
			md.CompactSymlinks = &StringTable{Buffer: []byte("f1"), Index: []uint32{2}, PackedIndex: true}
		}), "both symlinks and compact_symlinks populated"},
		// directories: sorted entries, parent links, self entries
		{"unsorted names", sample(func(md *Metadata) { md.Names[1], md.Names[2] = md.Names[2], md.Names[1] }), `entries "f2" and "f1" not strictly sorted`},
		{"first entries", sample(func(md *Metadata) { md.Directories[1].FirstEntry = 9 }), "directories[1].first_entry 9 > next 7"},
		{"parent entry", sample(func(md *Metadata) { md.Directories[1].ParentEntry = 3 }), "directories[1].parent_entry 3, entries say 0"},
		{"parent out of range", sample(func(md *Metadata) { md.Directories[1].ParentEntry = 7 }), "directories[1].parent_entry 7 out of range (7 entries)"},
		{"self entry", sample(func(md *Metadata) { md.Directories[1].SelfEntry = 2 }), "directories[1].self_entry 2 names inode 3"},
		{"root parent", sample(func(md *Metadata) { md.Directories[0].ParentEntry = 2 }), "directories[0].parent_entry 2, must be 0"},
		{"root self", sample(func(md *Metadata) { md.Directories[0].SelfEntry = 2 }), "directories[0].self_entry 2, must be 0 for the root"},
		{"packed with parent", sample(func(md *Metadata) {
			md.Options.PackedDirectories = true
			md.Directories = []Directory{{0, 1, 0}, {0, 4, 0}, {0, 2, 0}}
			md.Directories[2].ParentEntry = 1
		}), "directories[2]: parent_entry 1 / self_entry 0 set in packed table"},
		{"legacy parent", legacy(func(md *Metadata) { md.Directories[1].ParentEntry = 1 }), "directories[1].parent_entry 1, entries say 0"},
		{"dir twice", sample(func(md *Metadata) { md.DirEntries[5].InodeNum = 1 }), "entry 5 names directory inode 1, whose own entry is 1"},
		// inode ranks by type
		{"rank order", sample(func(md *Metadata) { md.Inodes[2].ModeIndex = 2; md.Inodes[3].ModeIndex = 1 }), "inode 3 (rank 1) out of rank order"},
		{"legacy entry type", legacy(func(md *Metadata) { md.Inodes[3].InodeV22 = 4 }), "inodes[3].inode_v2_2 4: entry mode 0120777, inode mode 0100644"},
		{"dir count", sample(func(md *Metadata) { md.Directories = md.Directories[:2] }), "directories: 2 entries for 2 directories"},
		{"device count", sample(func(md *Metadata) {
			md.Modes = append(md.Modes, 0o20644)
			md.Inodes[6].ModeIndex = 3
			md.SharedFilesTable = nil
			md.HasSharedFilesTable = false
			md.ChunkTable = []uint32{0, 1, 3, 4}
		}), "devices: 0 entries for 1 device inodes"},
		// shared files and hard links against the inode counts
		{"shared single", sample(func(md *Metadata) { md.SharedFilesTable = []uint32{0, 1}; md.ChunkTable = []uint32{0, 1, 3, 4, 4} }), "shared content 0 used by only one inode"},
		{"shared unsorted", sample(func(md *Metadata) { md.SharedFilesTable = []uint32{1, 1} }), "shared_files_table value 1 out of order (want 0)"},
		{"shared count", sample(func(md *Metadata) { md.SharedFilesTable = []uint32{0, 0, 0, 0, 0} }), "shared_files_table: 5 entries for 4 regular files"},
		{"chunk_table count", sample(func(md *Metadata) { md.ChunkTable = []uint32{0, 1, 3, 4, 4} }), "chunk_table has 4 entries, want 2 unique + 1 shared contents"},
		{"chunk_table end", sample(func(md *Metadata) { md.Chunks = append(md.Chunks, Chunk{0, 0, 1}) }), "chunk_table ends at 4, have 5 chunks"},
		{"nlink", sample(func(md *Metadata) { md.Options.InodesHaveNlink = true; md.Inodes[3].NlinkMinusOne = 3 }), "inode 3: nlink 4 but 1 entries"},
		{"size cache", sample(func(md *Metadata) {
			md.RegFileSizeCache = &InodeSizeCache{SizeLookup: []KV{{Key: 1, Value: 99}}, MinChunkCount: 1}
		}), "size cache key 1 says 99, chunks sum to 12"},
		{"subsecond", sample(func(md *Metadata) {
			md.Options.SubsecondResolutionNsecMultiplier = u32p(1000)
			md.Inodes[2].MtimeSubsec = 1000000
		}), "inodes[2]: sub-second value out of range"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			schema, data, err := Encode(c.md())
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			// DecodeLazy leaves the largest tables packed, the string
			// tables' indexes among them: the error must not change.
			for _, dec := range []struct {
				name string
				fn   func(schema, data []byte) (*Metadata, error)
			}{{"Decode", Decode}, {"DecodeLazy", DecodeLazy}} {
				md, err := dec.fn(schema, data)
				if err != nil {
					t.Fatalf("%s: %v", dec.name, err)
				}
				err = loadErr(md)
				if err == nil {
					t.Fatalf("%s: accepted; want error containing %q", dec.name, c.want)
				}
				if !strings.Contains(err.Error(), c.want) {
					t.Fatalf("%s: error %q\nwant it to contain %q", dec.name, err, c.want)
				}
			}
		})
	}
}

// shiftString moves where item k of the plain string list in root field id
// starts, by editing its Frozen2 distance field in data: the shape of the
// corrupt format-2.0 images the reference refuses (a string table whose
// strings do not lie back to back).
func shiftString(t *testing.T, schema, data []byte, id int16, k int, delta int64) []byte {
	t.Helper()
	s, err := DecodeSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	data = append([]byte(nil), data...)
	th := &thawer{s: s, data: data, nbits: uint64(len(data)) * 8, budget: 1 << 30}
	n, at, err := th.array(th.child(pos{l: &s.Layouts[s.RootLayout]}, id), "test")
	if err != nil || k >= n {
		t.Fatalf("list %d: %d items, %v", id, n, err)
	}
	dp := th.child(at(k), 1)
	width := uint(dp.l.Bits)
	abs, err := th.absBit(dp, width, "test", "")
	if err != nil {
		t.Fatal(err)
	}
	v := int64(th.extract(abs, width)) + delta
	if v < 0 || v >= 1<<width {
		t.Fatalf("distance %d does not fit %d bits", v, width)
	}
	for b := range width {
		bit := abs + uint64(b)
		if v>>b&1 != 0 {
			data[bit>>3] |= 1 << (bit & 7)
		} else {
			data[bit>>3] &^= 1 << (bit & 7)
		}
	}
	return data
}

func TestCheckPlainStringSpan(t *testing.T) {
	schema, data, err := Encode(legacyMetadata())
	if err != nil {
		t.Fatal(err)
	}
	md, err := Decode(schema, data)
	if err != nil {
		t.Fatal(err)
	}
	if md.symlinksSpan != (plainSpan{known: true, span: 8}) || md.namesSpan != (plainSpan{known: true, span: 4}) {
		t.Fatalf("spans of a well-formed table: %+v %+v", md.symlinksSpan, md.namesSpan)
	}
	cases := []struct {
		id    int16
		k     int
		delta int64
		want  string
	}{
		// The last symlink target starts one byte early, overlapping the
		// first: every index is in range and the strings decode, so only
		// the size cross-check can tell.
		{11, 1, -1, "symlinks: strings total 8 bytes but their data spans 7 bytes"},
		{11, 1, 1, "symlinks: strings total 8 bytes but their data spans 9 bytes"},
		{10, 3, -1, "names: strings total 4 bytes but their data spans 3 bytes"},
	}
	for _, c := range cases {
		bad := shiftString(t, schema, data, c.id, c.k, c.delta)
		md, err := Decode(schema, bad)
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		f, err := NewFS(md)
		if err != nil {
			t.Fatalf("NewFS refused early (%v); the point is that only the check catches it", err)
		}
		if err := f.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("field %d item %d %+d: err %v, want %q", c.id, c.k, c.delta, err, c.want)
		}
	}
}

// TestCheckInodesShared: the batched check of the shared files' chunk
// ranges reports what checking them one by one reports, through either
// decoder.
func TestCheckInodesShared(t *testing.T) {
	for _, c := range []struct {
		name string
		mut  func(md *Metadata)
		want string // "" for none
	}{
		{"good", func(md *Metadata) {}, ""},
		{"index", func(md *Metadata) { md.SharedFilesTable = []uint32{0, 1} }, "chunk_table index 3 out of range (4 entries)"},
		{"overflow", func(md *Metadata) { md.SharedFilesTable = []uint32{0, 0xFFFFFFFF} }, "shared file index overflows"},
		{"range", func(md *Metadata) { md.ChunkTable = []uint32{0, 1, 4, 3} }, "chunk range 4..3 invalid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			md := sampleMetadata()
			c.mut(md)
			schema, data, err := Encode(md)
			if err != nil {
				t.Fatal(err)
			}
			for _, dec := range []func(schema, data []byte) (*Metadata, error){Decode, DecodeLazy} {
				m, err := dec(schema, data)
				if err != nil {
					t.Fatal(err)
				}
				f, err := NewFS(m)
				if err != nil {
					t.Fatal(err)
				}
				var want error
				for ino := f.rank[2]; ino < f.rank[3] && want == nil; ino++ {
					if _, _, _, err := f.chunkRange(ino); err != nil {
						want = fmt.Errorf("metadata: check: %w", err)
					}
				}
				got := f.checkInodes(true)
				if fmt.Sprint(got) != fmt.Sprint(want) || (c.want == "") != (got == nil) || (got != nil && !strings.Contains(got.Error(), c.want)) {
					t.Fatalf("checkInodes: %v\nfile by file: %v\nwant it to contain %q", got, want, c.want)
				}
				// Served, a file's range is checked when the file is
				// used: a bad shared index passes CheckLazy (a bad chunk
				// table does not) and fails that file's reads.
				g, err := NewFS(m)
				if err != nil {
					t.Fatal(err)
				}
				lerr := g.CheckLazy()
				if (lerr == nil) != (c.name != "range") {
					t.Fatalf("CheckLazy: %v", lerr)
				}
				for ino := g.rank[2]; lerr == nil && ino < g.rank[3]; ino++ {
					_, _, _, rerr := g.chunkRange(ino)
					if _, err := g.FileChunks(ino); fmt.Sprint(err) != fmt.Sprint(rerr) {
						t.Fatalf("inode %d: FileChunks %v, chunkRange %v", ino, err, rerr)
					}
				}
			}
		})
	}
}

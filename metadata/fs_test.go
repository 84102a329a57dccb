package metadata

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"reflect"
	"strings"
	"testing"
)

func u32p(v uint32) *uint32 { return &v }

// sampleMetadata builds a small 2.3+ model tree by hand:
//
//	/a/g, /a/h (shared content), /f1, /f2, /l -> f1
func sampleMetadata() *Metadata {
	return &Metadata{
		Modes:               []uint32{0o40755, 0o120777, 0o100644},
		Inodes:              []InodeData{{ModeIndex: 0}, {ModeIndex: 0}, {ModeIndex: 1}, {ModeIndex: 2, MtimeOffset: 5}, {ModeIndex: 2}, {ModeIndex: 2}, {ModeIndex: 2}},
		Uids:                []uint32{1000},
		Gids:                []uint32{100},
		Names:               []string{"a", "f1", "f2", "g", "h", "l"},
		Symlinks:            []string{"f1"},
		SymlinkTable:        []uint32{0},
		DirEntries:          []DirEntry{{0, 0}, {0, 1}, {1, 3}, {2, 4}, {5, 2}, {3, 5}, {4, 6}},
		HasDirEntries:       true,
		Directories:         []Directory{{0, 1, 0}, {0, 5, 1}, {0, 7, 0}},
		ChunkTable:          []uint32{0, 1, 3, 4},
		Chunks:              []Chunk{{0, 0, 10}, {0, 10, 5}, {1, 0, 7}, {0, 20, 3}},
		SharedFilesTable:    []uint32{0, 0},
		HasSharedFilesTable: true,
		BlockSize:           1024,
		TimestampBase:       100,
		Options:             &FsOptions{MtimeOnly: true},
	}
}

func mustFS(t *testing.T, md *Metadata) *FS {
	t.Helper()
	f, err := NewFS(md)
	if err != nil {
		t.Fatalf("NewFS: %v", err)
	}
	if err := f.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	return f
}

func walkPaths(t *testing.T, f *FS) []string {
	t.Helper()
	var out []string
	if err := f.Walk(func(p string, ino uint32, in Inode) error {
		out = append(out, p)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSampleFS(t *testing.T) {
	f := mustFS(t, sampleMetadata())
	want := []string{"", "a", "a/g", "a/h", "f1", "f2", "l"}
	if got := walkPaths(t, f); !reflect.DeepEqual(got, want) {
		t.Fatalf("walk %q, want %q", got, want)
	}
	ino, err := f.LookupPath("a/h")
	if err != nil || ino != 6 {
		t.Fatalf("LookupPath(a/h) = %d, %v", ino, err)
	}
	if _, err := f.LookupPath("a/zz"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing path error %v", err)
	}
	if _, err := f.LookupPath("f1/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("through-file path error %v", err)
	}
	if f.Parent(1) != 0 {
		t.Fatalf("parent of a = %d", f.Parent(1))
	}
	if sz, _ := f.FileSize(6); sz != 3 {
		t.Fatalf("shared file size %d", sz)
	}
	if sz, _ := f.FileSize(4); sz != 12 {
		t.Fatalf("f2 size %d", sz)
	}
	in, _ := f.Inode(3)
	if in.Mtime.Sec != 105 || in.Atime != in.Mtime || in.Ctime != in.Mtime || in.Uid != 1000 || in.Gid != 100 || in.Nlink != 1 {
		t.Fatalf("inode 3 = %+v", in)
	}
	root, _ := f.Inode(0)
	if root.Size != 4 || root.Nlink != 1 {
		t.Fatalf("root = %+v", root)
	}
	if tgt, _ := f.Readlink(2); tgt != "f1" {
		t.Fatalf("readlink %q", tgt)
	}
	if _, err := f.ReadDir(3); err == nil {
		t.Fatal("ReadDir on a file succeeded")
	}
}

// TestPackedTables uses the packing rules of §3.14: chunk_table deltas,
// directories as first_entry deltas without parent/self, shared files as
// count-2.
func TestPackedTables(t *testing.T) {
	md := sampleMetadata()
	md.ChunkTable = []uint32{0, 1, 2, 1}
	md.Directories = []Directory{{0, 1, 0}, {0, 4, 0}, {0, 2, 0}}
	md.SharedFilesTable = []uint32{0}
	md.Options = &FsOptions{MtimeOnly: true, PackedChunkTable: true, PackedDirectories: true, PackedSharedFilesTable: true}
	f := mustFS(t, md)
	ref := mustFS(t, sampleMetadata())
	got, want := f.Metadata(), ref.Metadata()
	if !reflect.DeepEqual(got.ChunkTable, want.ChunkTable) || !reflect.DeepEqual(got.Directories, want.Directories) ||
		!reflect.DeepEqual(got.SharedFilesTable, want.SharedFilesTable) {
		t.Fatalf("unpacked %v %v %v, want %v %v %v", got.ChunkTable, got.Directories, got.SharedFilesTable,
			want.ChunkTable, want.Directories, want.SharedFilesTable)
	}
	if got.Options.PackedChunkTable || got.Options.PackedDirectories || got.Options.PackedSharedFilesTable {
		t.Fatal("packed flags not cleared")
	}
	if !md.Options.PackedChunkTable || md.ChunkTable[2] != 2 {
		t.Fatal("input metadata modified")
	}
	if !reflect.DeepEqual(walkPaths(t, f), walkPaths(t, ref)) {
		t.Fatal("trees differ")
	}
}

func TestPackedSharedExample(t *testing.T) {
	// Example of §3.14: [0,3,1,0,1] -> [0,0,1,1,1,1,1,2,2,2,3,3,4,4,4].
	md := &Metadata{
		Modes: []uint32{0o40755, 0o100644}, Inodes: make([]InodeData, 16), Names: []string{"x"},
		HasDirEntries: true, Directories: []Directory{{0, 1, 0}, {0, 1, 0}},
		ChunkTable: []uint32{0, 0, 0, 0, 0, 0}, HasSharedFilesTable: true, SharedFilesTable: []uint32{0, 3, 1, 0, 1},
		Options: &FsOptions{PackedSharedFilesTable: true}, BlockSize: 1,
	}
	md.DirEntries = []DirEntry{{0, 0}}
	for i := 1; i < 16; i++ {
		md.Inodes[i].ModeIndex = 1
	}
	f, err := NewFS(md)
	if err != nil {
		t.Fatal(err)
	}
	want := []uint32{0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 3, 3, 4, 4, 4}
	if got := f.Metadata().SharedFilesTable; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v", got)
	}
}

func TestLegacyModel(t *testing.T) {
	// <= 2.2: inodes are entries, empty uid/gid tables mean the index is the id.
	md := &Metadata{
		Modes:         []uint32{0o40755, 0o100644},
		Inodes:        []InodeData{{OwnerIndex: 7, GroupIndex: 9}, {NameIndexV22: 0, ModeIndex: 1, InodeV22: 1, OwnerIndex: 33333, GroupIndex: 44444}, {NameIndexV22: 1, ModeIndex: 1, InodeV22: 1, OwnerIndex: 33333, GroupIndex: 44444}},
		EntryTableV22: []uint32{0, 1},
		Names:         []string{"x", "y"},
		Directories:   []Directory{{0, 1, 0}, {0, 3, 0}},
		ChunkTable:    []uint32{0, 1},
		Chunks:        []Chunk{{0, 0, 4}},
		BlockSize:     4096,
	}
	f := mustFS(t, md)
	in, err := f.Inode(1)
	if err != nil {
		t.Fatal(err)
	}
	if in.Uid != 33333 || in.Gid != 44444 || in.Nlink != 2 || in.Size != 4 {
		t.Fatalf("inode = %+v", in)
	}
	if got := walkPaths(t, f); !reflect.DeepEqual(got, []string{"", "x", "y"}) {
		t.Fatalf("walk %q", got)
	}
}

func TestHoles(t *testing.T) {
	md := sampleMetadata()
	md.Features, md.HasFeatures = []string{"sparsefiles"}, true
	md.HoleBlockIndex = u32p(2)
	md.Chunks[1] = Chunk{2, 5, 3}          // inline hole: 3*1024+5
	md.Chunks[2] = Chunk{2, 0xFFFFFFFF, 0} // large hole
	md.LargeHoleSize, md.HasLargeHoleSize = []uint64{1 << 40}, true
	f := mustFS(t, md)
	cs, err := f.FileChunks(4)
	if err != nil {
		t.Fatal(err)
	}
	want := []ChunkRef{{Size: 3*1024 + 5, Hole: true}, {Size: 1 << 40, Hole: true}}
	if !reflect.DeepEqual(cs, want) {
		t.Fatalf("chunks %+v", cs)
	}
	in, _ := f.Inode(4)
	if in.Size != 3*1024+5+1<<40 || in.AllocatedSize != 0 {
		t.Fatalf("size %d alloc %d", in.Size, in.AllocatedSize)
	}
	md.Chunks[2] = Chunk{2, 0xFFFFFFFF, 1}
	f, err = NewFS(md)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.FileChunks(4); err == nil {
		t.Fatal("bad large hole index accepted")
	}
	if f.Check() == nil {
		t.Fatal("Check accepted bad large hole index")
	}
}

func TestUnknownFeature(t *testing.T) {
	md := sampleMetadata()
	md.Features, md.HasFeatures = []string{"sparsefiles", "warp-drive"}, true
	_, err := NewFS(md)
	if err == nil || !strings.Contains(err.Error(), "warp-drive") {
		t.Fatalf("err = %v", err)
	}
}

func TestNewFSRejects(t *testing.T) {
	cases := map[string]func(md *Metadata){
		"mode index":      func(md *Metadata) { md.Inodes[3].ModeIndex = 9 },
		"rank order":      func(md *Metadata) { md.Inodes[2].ModeIndex = 2; md.Inodes[3].ModeIndex = 1 },
		"dir count":       func(md *Metadata) { md.Directories = md.Directories[:2] },
		"first entry":     func(md *Metadata) { md.Directories[1].FirstEntry = 9 },
		"symlink index":   func(md *Metadata) { md.SymlinkTable[0] = 4 },
		"resolution zero": func(md *Metadata) { md.Options.TimeResolutionSec = u32p(0) },
		"no inodes":       func(md *Metadata) { md.Inodes = nil },
		// Without stored self entries, the entries are searched.
		"dir twice, no self entries": func(md *Metadata) {
			md.DirEntries[5].InodeNum = 1
			for i := range md.Directories {
				md.Directories[i].SelfEntry = 0
			}
		},
	}
	for name, mut := range cases {
		md := sampleMetadata()
		mut(md)
		if _, err := NewFS(md); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestCheckRejects(t *testing.T) {
	cases := map[string]func(md *Metadata){
		"unsorted names": func(md *Metadata) { md.Names[1], md.Names[2] = md.Names[2], md.Names[1] },
		"entry inode":    func(md *Metadata) { md.DirEntries[3].InodeNum = 70 },
		"name index":     func(md *Metadata) { md.DirEntries[3].NameIndex = 70 },
		"dir twice":      func(md *Metadata) { md.DirEntries[5].InodeNum = 1 },
		"chunk bounds":   func(md *Metadata) { md.Chunks[0].Size = 5000 },
		"block size":     func(md *Metadata) { md.BlockSize = 1000 },
		"shared single":  func(md *Metadata) { md.SharedFilesTable = []uint32{0, 1}; md.ChunkTable = []uint32{0, 1, 3, 4, 4} },
		"nlink":          func(md *Metadata) { md.Options.InodesHaveNlink = true; md.Inodes[3].NlinkMinusOne = 3 },
		"parent entry":   func(md *Metadata) { md.Directories[1].ParentEntry = 3 },
		"sparse feature": func(md *Metadata) { md.HoleBlockIndex = u32p(7) },
	}
	for name, mut := range cases {
		md := sampleMetadata()
		mut(md)
		f, err := NewFS(md)
		if err != nil {
			continue
		}
		if err := f.Check(); err == nil {
			t.Errorf("%s: Check accepted", name)
		}
	}
}

func TestTimes(t *testing.T) {
	md := sampleMetadata()
	md.Options = &FsOptions{SubsecondResolutionNsecMultiplier: u32p(1000), HasBtime: true}
	md.Inodes[3] = InodeData{ModeIndex: 2, AtimeOffset: 1, MtimeOffset: 2, CtimeOffset: 3, BtimeOffset: 4, MtimeSubsec: 999999, BtimeSubsec: 5}
	f := mustFS(t, md)
	in, _ := f.Inode(3)
	if in.Atime.Sec != 101 || in.Mtime != (Time{102, 999999000}) || in.Ctime.Sec != 103 || !in.HasBtime || in.Btime != (Time{104, 5000}) {
		t.Fatalf("%+v", in)
	}
	md = sampleMetadata()
	md.Options = &FsOptions{TimeResolutionSec: u32p(60), MtimeOnly: true}
	f = mustFS(t, md)
	in, _ = f.Inode(3)
	if in.Mtime.Sec != 60*105 || in.Atime.Sec != 60*105 {
		t.Fatalf("%+v", in)
	}
	if s, m := f.TimeResolution(); s != 60 || m != 0 {
		t.Fatalf("resolution %d %d", s, m)
	}
}

func TestWinSeparator(t *testing.T) {
	md := sampleMetadata()
	md.Symlinks = []string{`..\f1`}
	md.PreferredPathSeparator = u32p('\\')
	f := mustFS(t, md)
	if s, _ := f.Readlink(2); s != "../f1" {
		t.Fatalf("Readlink %q", s)
	}
	if s, _ := f.RawReadlink(2); s != `..\f1` {
		t.Fatalf("RawReadlink %q", s)
	}
}

// buildSymtab exports an FSST table in the layout of §3.13.
func buildSymtab(zeroTerm bool, syms []string) []byte {
	var hist [8]byte
	for _, s := range syms {
		hist[len(s)-1]++
	}
	if zeroTerm {
		hist[0]++
	}
	b := binary.LittleEndian.AppendUint64(nil, uint64(fsstImportVersion)<<32|uint64(len(syms))<<8|1)
	if zeroTerm {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = append(b, hist[:]...)
	for _, l := range []int{2, 3, 4, 5, 6, 7, 8, 1} {
		for _, s := range syms {
			if len(s) == l {
				b = append(b, s...)
			}
		}
	}
	return b
}

func TestFSST(t *testing.T) {
	// Codes are assigned in storage order: "ab"=0, "xyz"=1, "q"=2.
	tab := buildSymtab(false, []string{"ab", "xyz", "q"})
	d, err := newFSSTDecoder(tab)
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.decode([]byte{0, 2, 0xff, '!', 1}, 100)
	if err != nil || string(out) != "abq!xyz" {
		t.Fatalf("decode = %q, %v", out, err)
	}
	if _, err := d.decode([]byte{7}, 100); err == nil {
		t.Fatal("unused code accepted")
	}
	if _, err := d.decode([]byte{0xff}, 100); err == nil {
		t.Fatal("dangling escape accepted")
	}
	if _, err := d.decode([]byte{1, 1, 1}, 5); err == nil {
		t.Fatal("length limit ignored")
	}
	// Zero-terminated: code 0 is the implicit "\0", stored symbols start at 1.
	dz, err := newFSSTDecoder(buildSymtab(true, []string{"ab"}))
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := dz.decode([]byte{1, 0}, 10); string(out) != "ab\x00" {
		t.Fatalf("zero-terminated decode %q", out)
	}
	if _, err := newFSSTDecoder(append(tab, 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
	if _, err := newFSSTDecoder(tab[:len(tab)-1]); err == nil {
		t.Fatal("truncated table accepted")
	}
	// Through a compact string table with packed index.
	md := sampleMetadata()
	tab2 := buildSymtab(false, []string{"f", "a", "g", "h", "l", "1", "2"})
	// codes by storage order (all 1-byte): f=0 a=1 g=2 h=3 l=4 1=5 2=6
	md.Names = nil
	md.CompactNames = &StringTable{Buffer: []byte{1, 0, 5, 0, 6, 2, 3, 4}, Symtab: tab2, Index: []uint32{1, 2, 2, 1, 1, 1}, PackedIndex: true}
	f := mustFS(t, md)
	if got := f.Names(); !reflect.DeepEqual(got, []string{"a", "f1", "f2", "g", "h", "l"}) {
		t.Fatalf("names %q", got)
	}
}

package metadata

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// flatTree builds a root with nd directories of nf empty files each, the
// names table holding every name once. reversed stores that table in
// descending order (entries still list their names in ascending order),
// which the check must handle without assuming a sorted table.
func flatTree(nd, nf int, reversed bool) *Metadata {
	var names []string
	for d := range nd {
		names = append(names, fmt.Sprintf("d%04d", d))
	}
	for f := range nf {
		names = append(names, fmt.Sprintf("f%03d", f))
	}
	idx := func(i int) uint32 { return uint32(i) }
	if reversed {
		slices.Reverse(names)
		idx = func(i int) uint32 { return uint32(len(names) - 1 - i) }
	}
	md := &Metadata{
		Modes:         []uint32{0o40755, 0o100644},
		Names:         names,
		HasDirEntries: true,
		BlockSize:     1024,
		Options:       &FsOptions{MtimeOnly: true},
	}
	for range 1 + nd {
		md.Inodes = append(md.Inodes, InodeData{ModeIndex: 0})
	}
	for range nd * nf {
		md.Inodes = append(md.Inodes, InodeData{ModeIndex: 1})
	}
	md.DirEntries = append(md.DirEntries, DirEntry{0, 0})
	for d := range nd {
		md.DirEntries = append(md.DirEntries, DirEntry{NameIndex: idx(d), InodeNum: uint32(1 + d)})
	}
	md.Directories = append(md.Directories, Directory{FirstEntry: 1})
	for d := range nd {
		md.Directories = append(md.Directories, Directory{FirstEntry: uint32(len(md.DirEntries)), SelfEntry: uint32(1 + d)})
		for f := range nf {
			md.DirEntries = append(md.DirEntries, DirEntry{NameIndex: idx(nd + f), InodeNum: uint32(1 + nd + d*nf + f)})
		}
	}
	md.Directories = append(md.Directories, Directory{FirstEntry: uint32(len(md.DirEntries))})
	md.ChunkTable = make([]uint32, nd*nf+1)
	return md
}

// swapNames swaps the names of two entries of directory inode d.
func swapNames(md *Metadata, d, a, b int) {
	e := md.Directories[d].FirstEntry
	x, y := &md.DirEntries[int(e)+a], &md.DirEntries[int(e)+b]
	x.NameIndex, y.NameIndex = y.NameIndex, x.NameIndex
}

// TestCheckNameOrder runs the name checks on a tree large enough to be
// split into parts, with the names table sorted (checked by name index)
// and reversed (checked by comparing decoded names), packed as an image
// carries it: with several faults, the one a check in sequence meets first
// is reported.
func TestCheckNameOrder(t *testing.T) {
	const nd, nf = 64, 20
	for _, reversed := range []bool{false, true} {
		cases := []struct {
			name string
			mut  func(*Metadata)
			want string
		}{
			{"good", func(*Metadata) {}, ""},
			{"swapped in two dirs", func(md *Metadata) { swapNames(md, 6, 3, 4); swapNames(md, 61, 0, 1) }, `directory 6: entries "f004" and "f003" not strictly sorted`},
			{"swapped in last dir", func(md *Metadata) { swapNames(md, nd, nf-2, nf-1) }, fmt.Sprintf(`directory %d: entries "f%03d" and "f%03d" not strictly sorted`, nd, nf-1, nf-2)},
			{"duplicate", func(md *Metadata) {
				e := md.Directories[40].FirstEntry
				md.DirEntries[e+7].NameIndex = md.DirEntries[e+6].NameIndex
			}, `directory 40: entries "f006" and "f006" not strictly sorted`},
			{"earlier rule first", func(md *Metadata) { swapNames(md, 61, 0, 1); md.Directories[3].ParentEntry = 9 }, "directories[3].parent_entry 9, entries say 0"},
			{"later rule after", func(md *Metadata) { swapNames(md, 61, 0, 1); md.Chunks = []Chunk{{0, 0, 1}} }, `directory 61: entries "f001" and "f000" not strictly sorted`},
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("reversed=%v/%s", reversed, c.name), func(t *testing.T) {
				md := flatTree(nd, nf, reversed)
				c.mut(md)
				lazy := encodeLazy(t, md)
				err := loadErr(lazy)
				switch {
				case c.want == "" && err != nil:
					t.Fatalf("refused: %v", err)
				case c.want != "" && err == nil:
					t.Fatalf("accepted; want error containing %q", c.want)
				case c.want != "" && !strings.Contains(err.Error(), c.want):
					t.Fatalf("error %q\nwant it to contain %q", err, c.want)
				}
			})
		}
	}
}

// TestCheckInvalidNames: "", "." and ".." are refused as entry names
// whether or not the names table is sorted.
func TestCheckInvalidNames(t *testing.T) {
	for _, bad := range []string{"", ".", ".."} {
		for _, unsorted := range []bool{false, true} {
			md := sampleMetadata()
			// "a" is the first name and root's first entry; the bad name
			// sorts before every other one, so the table stays sorted.
			md.Names[0] = bad
			if unsorted {
				md.Names[3], md.Names[4] = md.Names[4], md.Names[3] // g, h: unused by root
			}
			err := loadErr(reencode(t, md))
			want := fmt.Sprintf("directory 0: invalid name %q", bad)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("name %q unsorted=%v: error %v, want %q", bad, unsorted, err, want)
			}
		}
	}
}

// TestCheckTreeReachable: directories whose parents lead round a cycle
// instead of to the root are found, the lowest one reported.
func TestCheckTreeReachable(t *testing.T) {
	cases := []struct {
		name    string
		parents map[uint32]uint32 // directory -> parent
		want    string
	}{
		{"tree", nil, ""},
		{"deep chain", map[uint32]uint32{2: 1, 3: 2, 4: 3, 9: 4}, ""},
		{"self loop", map[uint32]uint32{7: 7}, "directory 7 not reachable from root"},
		{"cycle", map[uint32]uint32{4: 6, 6: 4}, "directory 4 not reachable from root"},
		{"below a cycle", map[uint32]uint32{2: 9, 9: 5, 5: 9}, "directory 2 not reachable from root"},
		{"chain then cycle", map[uint32]uint32{3: 2, 2: 1, 8: 3, 10: 12, 12: 11, 11: 10}, "directory 10 not reachable from root"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := mustFS(t, reencode(t, flatTree(16, 2, false)))
			for d, p := range c.parents {
				f.parent[d] = p
			}
			err := f.checkTree(true)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

// TestCheckLazy: CheckLazy leaves the names of each directory to its
// first use, where a bad directory fails with the error Check reports
// for it and the others are served as usual.
func TestCheckLazy(t *testing.T) {
	const nd, nf = 8, 20
	cases := []struct {
		name string
		dir  uint32 // the damaged directory
		mut  func(*Metadata)
		want string
	}{
		{"swapped", 6, func(md *Metadata) { swapNames(md, 6, 3, 4) }, `directory 6: entries "f004" and "f003" not strictly sorted`},
		{"duplicate", 2, func(md *Metadata) {
			e := md.Directories[2].FirstEntry
			md.DirEntries[e+7].NameIndex = md.DirEntries[e+6].NameIndex
		}, `directory 2: entries "f006" and "f006" not strictly sorted`},
		{"dot", 3, func(md *Metadata) {
			md.Names = append(md.Names, ".")
			md.DirEntries[md.Directories[3].FirstEntry].NameIndex = uint32(len(md.Names) - 1)
		}, `directory 3: invalid name "."`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			md := flatTree(nd, nf, false)
			c.mut(md)
			lazy := encodeLazy(t, md)
			f, err := NewFS(lazy)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.CheckLazy(); err != nil {
				t.Fatalf("CheckLazy: %v", err)
			}
			bad := func(what string, err error) {
				t.Helper()
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: error %v, want %q", what, err, c.want)
				}
			}
			bad("CheckDir", f.CheckDir(c.dir))
			_, err = f.ReadDir(c.dir)
			bad("ReadDir", err)
			if ino, ok := f.Lookup(c.dir, "f000"); ok {
				t.Errorf("Lookup in the damaged directory found inode %d", ino)
			}
			_, err = f.LookupPath(fmt.Sprintf("d%04d/f000", c.dir-1))
			bad("LookupPath", err)
			bad("Walk", f.Walk(func(string, uint32, Inode) error { return nil }))
			// Asked again, it fails again.
			bad("CheckDir again", f.CheckDir(c.dir))
			// The other directories are served.
			for d := uint32(1); d <= nd; d++ {
				if d == c.dir {
					continue
				}
				if ents, err := f.ReadDir(d); err != nil || len(ents) != nf {
					t.Errorf("ReadDir(%d): %d entries, %v", d, len(ents), err)
				}
				if _, ok := f.Lookup(d, "f005"); !ok {
					t.Errorf("Lookup(%d, f005) failed", d)
				}
			}
			if _, err := f.ReadDir(0); err != nil {
				t.Errorf("ReadDir(root): %v", err)
			}
			// The full check still finds it.
			bad("Check", f.Check())
		})
	}
}

// TestCheckLazyLeftOut: the rules CheckLazy leaves out altogether, or
// (where a name lies, its FSST codes) to the first use of its directory.
// Check still reports each; served, the image gives what it stores.
func TestCheckLazyLeftOut(t *testing.T) {
	const nd, nf = 8, 20
	cases := []struct {
		name string
		dir  int // a directory CheckDir refuses, -1 for none
		mut  func(t *testing.T, md *Metadata)
		want string
	}{
		{"fsst code", 5, func(t *testing.T, md *Metadata) {
			// Directory 5's last entry gets a name of its own, whose
			// codes are then made invalid.
			md.Names = append(md.Names, "f019z")
			md.DirEntries[md.Directories[5].FirstEntry+nf-1].NameIndex = uint32(len(md.Names) - 1)
			st := BuildStringTable(md.Names, true, false)
			if st.Symtab == nil {
				t.Fatal("no FSST table built")
			}
			dec, err := newFSSTDecoder(st.Symtab)
			if err != nil {
				t.Fatal(err)
			}
			code := slices.IndexFunc(dec.len[:255], func(l uint8) bool { return l == 0 })
			if code < 0 {
				t.Fatal("every code is used")
			}
			n := len(st.Index)
			for k := st.Index[n-2]; k < st.Index[n-1]; k++ {
				st.Buffer[k] = byte(code)
			}
			md.Names, md.CompactNames = nil, st
		}, fmt.Sprintf("compact_names: string %d: fsst: unused code", nd+nf)},
		{"fsst range", 5, func(t *testing.T, md *Metadata) {
			// Directory 5's own last name ends past the buffer.
			md.Names = append(md.Names, "f019z")
			md.DirEntries[md.Directories[5].FirstEntry+nf-1].NameIndex = uint32(len(md.Names) - 1)
			st := BuildStringTable(md.Names, true, false)
			if st.Symtab == nil || st.PackedIndex {
				t.Fatal("no FSST table with an index of offsets built")
			}
			st.Index[len(st.Index)-1] = uint32(len(st.Buffer) + 100)
			md.Names, md.CompactNames = nil, st
		}, fmt.Sprintf("compact_names: string %d range", nd+nf)},
		{"entry inode", 4, func(t *testing.T, md *Metadata) {
			md.DirEntries[md.Directories[4].FirstEntry+2].InodeNum = 9999
		}, "inode 9999 out of range"},
		{"entry name", 4, func(t *testing.T, md *Metadata) {
			md.DirEntries[md.Directories[4].FirstEntry+2].NameIndex = 9999
		}, "name index 9999 out of range"},
		{"directory linked twice", 4, func(t *testing.T, md *Metadata) {
			// Directory 4's entry f002 names directory 2, whose own
			// entry is in the root.
			md.DirEntries[md.Directories[4].FirstEntry+2].InodeNum = 2
		}, "names directory inode 2, whose own entry is 2"},
		{"self entries swapped", 0, func(t *testing.T, md *Metadata) {
			// The root's entries for directories 3 and 4 are each the
			// other's own entry in the table.
			d := md.Directories
			d[3].SelfEntry, d[4].SelfEntry = d[4].SelfEntry, d[3].SelfEntry
		}, "entry 3 names directory inode 3, whose own entry is 4"},
		// Inode 100, a file, is none of those bisection reads for the
		// ranks.
		{"mode index", -1, func(t *testing.T, md *Metadata) {
			md.Inodes[100].ModeIndex = 7
		}, "inodes[100].mode_index 7 out of range (2 modes)"},
		{"rank order", -1, func(t *testing.T, md *Metadata) {
			md.Inodes[100].ModeIndex = 0
		}, "inode 100 (rank 0) out of rank order"},
		{"unreferenced inode", -1, func(t *testing.T, md *Metadata) {
			// Entry f005 of directory 3 names f004's inode.
			md.DirEntries[md.Directories[3].FirstEntry+5].InodeNum--
		}, fmt.Sprintf("inode %d not referenced by any entry", 1+nd+2*nf+5)},
		{"nlink", -1, func(t *testing.T, md *Metadata) {
			md.Options.InodesHaveNlink = true
			md.Inodes[1+nd+7].NlinkMinusOne = 3
		}, fmt.Sprintf("inode %d: nlink 4 but 1 entries", 1+nd+7)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			md := flatTree(nd, nf, false)
			c.mut(t, md)
			f, err := NewFS(encodeLazy(t, md))
			if err != nil {
				t.Fatal(err)
			}
			if err := f.CheckLazy(); err != nil {
				t.Fatalf("CheckLazy: %v", err)
			}
			for d := range nd + 1 {
				err := f.CheckDir(uint32(d))
				_, rerr := f.ReadDir(uint32(d))
				switch {
				case d == c.dir && (err == nil || !strings.Contains(err.Error(), c.want)):
					t.Errorf("CheckDir(%d): %v, want %q", d, err, c.want)
				case d == c.dir && (rerr == nil || rerr.Error() != err.Error()):
					t.Errorf("ReadDir(%d): %v, want %v", d, rerr, err)
				case d != c.dir && (err != nil || rerr != nil):
					t.Errorf("directory %d: CheckDir %v, ReadDir %v", d, err, rerr)
				}
			}
			if c.name == "mode index" || c.name == "rank order" {
				// Served, the inode fails when used; its neighbour not.
				if _, err := f.Inode(100); err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("Inode(100): %v, want %q", err, c.want)
				}
				if _, err := f.Mode(100); err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("Mode(100): %v, want %q", err, c.want)
				}
				if _, err := f.Inode(101); err != nil {
					t.Errorf("Inode(101): %v", err)
				}
			}
			if c.name == "nlink" {
				if in, err := f.Inode(1 + nd + 7); err != nil || in.Nlink != 4 {
					t.Errorf("served nlink %d (%v), want the stored 4", in.Nlink, err)
				}
			}
			// Check names the table's fault where it differs.
			want := c.want
			if c.name == "self entries swapped" {
				want = "directories[3].self_entry 4 names inode 4"
			}
			if err := f.Check(); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Check: %v, want %q", err, want)
			}
		})
	}
}

// TestResolveFSSTParts: a large compressed table is validated in parts
// side by side; with faults in several parts, or a string outside the
// buffer after a fault, the first string at fault is reported.
func TestResolveFSSTParts(t *testing.T) {
	var names []string
	for i := range 300000 {
		names = append(names, fmt.Sprintf("name%07d", i))
	}
	for _, packed := range []bool{false, true} {
		base := BuildStringTable(names, true, packed)
		if base.Symtab == nil {
			t.Fatal("no FSST table built")
		}
		start := func(st *StringTable, i int) int {
			if !packed {
				return int(st.Index[i])
			}
			s := 0
			for _, l := range st.Index[:i] {
				s += int(l)
			}
			return s
		}
		clone := func() *StringTable {
			c := *base
			c.Buffer = append([]byte(nil), base.Buffer...)
			c.Index = append([]uint32(nil), base.Index...)
			return &c
		}
		dec, err := newFSSTDecoder(base.Symtab)
		if err != nil {
			t.Fatal(err)
		}
		code := -1 // a used code other than the escape
		for c := range 255 {
			if dec.len[c] > 0 {
				code = c
				break
			}
		}
		// breakAt makes string i end in an escape: all escapes, odd in
		// number, after one ordinary code if needed.
		breakAt := func(st *StringTable, i int) {
			a, b := start(st, i), start(st, i+1)
			for k := a; k < b; k++ {
				st.Buffer[k] = 0xff
			}
			if (b-a)%2 == 0 {
				st.Buffer[a] = byte(code)
			}
		}
		cases := []struct {
			name string
			mut  func(st *StringTable)
			want string
		}{
			{"good", func(*StringTable) {}, ""},
			{"two parts", func(st *StringTable) {
				breakAt(st, 250000)
				breakAt(st, 70000)
			}, "string 70000: fsst: escape at end of string"},
			{"fault before range", func(st *StringTable) {
				breakAt(st, 1000)
				if packed {
					st.Index[200000] = 1 << 30
				} else {
					st.Index[200001] = 1 << 30
				}
			}, "string 1000: fsst: escape at end of string"},
			{"range", func(st *StringTable) {
				if packed {
					st.Index[200000] = 1 << 30
				} else {
					st.Index[200001] = 1 << 30
				}
			}, "string 200000 range"},
		}
		for _, c := range cases {
			st := clone()
			c.mut(st)
			tab, err := resolveStrings(nil, st, "compact_names", maxNameLen, true)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("packed=%v %s: %v", packed, c.name, err)
			case c.want == "" && (tab.len() != len(names) || tab.at(123456) != names[123456]):
				t.Errorf("packed=%v %s: %d names, name 123456 %q", packed, c.name, tab.len(), tab.at(123456))
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("packed=%v %s: error %v, want %q", packed, c.name, err, c.want)
			}
		}
	}
}

// TestCheckManyLinks: a file with more than 255 entries (hard links) has
// them all counted against its stored link count.
func TestCheckManyLinks(t *testing.T) {
	for _, c := range []struct {
		nlink uint32
		want  string
	}{{300, ""}, {299, "inode 1: nlink 299 but 300 entries"}, {44, "inode 1: nlink 44 but 300 entries"}} {
		md := &Metadata{
			Modes:         []uint32{0o40755, 0o100644},
			HasDirEntries: true,
			BlockSize:     1024,
			Options:       &FsOptions{MtimeOnly: true, InodesHaveNlink: true},
			Inodes:        []InodeData{{ModeIndex: 0}, {ModeIndex: 1, NlinkMinusOne: c.nlink - 1}},
			DirEntries:    []DirEntry{{}},
			ChunkTable:    []uint32{0, 0},
		}
		for i := range 300 {
			md.Names = append(md.Names, fmt.Sprintf("n%03d", i))
			md.DirEntries = append(md.DirEntries, DirEntry{NameIndex: uint32(i), InodeNum: 1})
		}
		md.Directories = []Directory{{FirstEntry: 1}, {FirstEntry: uint32(len(md.DirEntries))}}
		err := loadErr(reencode(t, md))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("nlink %d: %v", c.nlink, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("nlink %d: error %v, want %q", c.nlink, err, c.want)
		}
	}
}

// encodeLazy encodes md and decodes it again as an opened image would.
func encodeLazy(t *testing.T, md *Metadata) *Metadata {
	t.Helper()
	schema, data, err := Encode(md)
	if err != nil {
		t.Fatal(err)
	}
	lazy, err := DecodeLazy(schema, data)
	if err != nil {
		t.Fatal(err)
	}
	return lazy
}

// TestCheckDirAllocs: the first lookup in each directory checks its
// names; that check allocates nothing, as a cold stat of many files
// would otherwise allocate for every directory it passes through.
func TestCheckDirAllocs(t *testing.T) {
	const nd, nf = 64, 20
	for _, reversed := range []bool{false, true} {
		f, err := NewFS(encodeLazy(t, flatTree(nd, nf, reversed)))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.CheckLazy(); err != nil {
			t.Fatalf("CheckLazy: %v", err)
		}
		d := uint32(0)
		allocs := testing.AllocsPerRun(nd/2, func() {
			d++ // directory inodes are 1..nd: a new one each run
			if err := f.CheckDir(d); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("reversed=%v: %v allocations per directory check, want none", reversed, allocs)
		}
	}
}

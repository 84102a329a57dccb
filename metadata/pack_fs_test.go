package metadata

import (
	"fmt"
	"testing"
)

// fsSnapshot renders everything a reader observes, for comparing two
// encodings of the same tree.
func fsSnapshot(t *testing.T, f *FS) []string {
	t.Helper()
	var out []string
	err := f.Walk(func(path string, ino uint32, in Inode) error {
		line := fmt.Sprintf("%q %+v", path, in)
		switch in.Mode & ModeType {
		case ModeRegular:
			ch, err := f.FileChunks(ino)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" chunks=%v", ch)
		case ModeSymlink:
			l, err := f.RawReadlink(ino)
			if err != nil {
				return err
			}
			line += " -> " + l
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatalf("Walk: %v", err)
	}
	return out
}

// TestPackedFixturesReadBack re-packs every 2.3+ fixture with all packed
// tables and rebuilt (FSST, packed-index) string tables, freezes it and
// checks that the decoder's FS sees exactly the same tree.
func TestPackedFixturesReadBack(t *testing.T) {
	applies := func(fi *fixtureImage) string {
		if fi.minor < 3 {
			return "the legacy model has no packed variants"
		}
		md, err := Decode(fi.schema, fi.data)
		if err != nil {
			return ""
		}
		if _, err := NewFS(md); err != nil {
			return fmt.Sprintf("no tree to compare with (NewFS on the original: %v)", err)
		}
		return ""
	}
	forEachFixtureWhere(t, applies, func(t *testing.T, fi *fixtureImage) {
		md, err := Decode(fi.schema, fi.data)
		if err != nil {
			t.Fatal(err)
		}
		f1, err := NewFS(md)
		if err != nil {
			t.Fatalf("NewFS on original: %v", err)
		}
		norm := f1.Metadata()
		p := *norm
		opts := FsOptions{}
		if norm.Options != nil {
			opts = *norm.Options
		}
		opts.PackedChunkTable, opts.PackedDirectories = true, true
		p.Options = &opts
		p.ChunkTable = PackChunkTable(norm.ChunkTable)
		p.Directories = PackDirectories(norm.Directories)
		if norm.HasSharedFilesTable {
			opts.PackedSharedFilesTable = true
			p.SharedFilesTable = PackSharedFiles(norm.SharedFilesTable)
		}
		p.Names, p.Symlinks = nil, nil
		p.CompactNames = BuildStringTable(f1.Names(), true, true)
		p.CompactSymlinks = BuildStringTable(f1.Symlinks(), true, false)
		schema, data, err := Encode(&p)
		if err != nil {
			t.Fatal(err)
		}
		md2, err := Decode(schema, data)
		if err != nil {
			t.Fatal(err)
		}
		f2, err := NewFS(md2)
		if err != nil {
			t.Fatalf("NewFS on packed: %v", err)
		}
		a, b := fsSnapshot(t, f1), fsSnapshot(t, f2)
		if len(a) != len(b) {
			t.Fatalf("%d vs %d inodes visited", len(a), len(b))
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("differs:\n%s\n%s", a[i], b[i])
			}
		}
		n2 := f2.Metadata()
		if !modelEqual(n2.ChunkTable, norm.ChunkTable) || !modelEqual(n2.SharedFilesTable, norm.SharedFilesTable) {
			t.Error("unpacked chunk/shared tables differ")
		}
		for i, d := range n2.Directories {
			if d.FirstEntry != norm.Directories[i].FirstEntry {
				t.Fatalf("directory %d first_entry %d, want %d", i, d.FirstEntry, norm.Directories[i].FirstEntry)
			}
		}
		t.Logf("names: %d raw bytes -> %d+%d", len(stringsBytes(f1.Names())), len(p.CompactNames.Buffer), len(p.CompactNames.Symtab))
	})
}

func stringsBytes(s []string) []byte {
	var b []byte
	for _, x := range s {
		b = append(b, x...)
	}
	return b
}

package metadata

import (
	"bytes"
	"slices"
	"testing"
)

// rowLayout follows a path of component ids from the schema's root to a
// table's row layout: each step is a field of the layout reached so far.
func rowLayout(t *testing.T, s *Schema, path ...int16) *Layout {
	t.Helper()
	l := &s.Layouts[s.RootLayout]
	for _, id := range path {
		f := l.field(id)
		if f == nil {
			return nil
		}
		l = &s.Layouts[f.LayoutID]
	}
	return l
}

// TestEncodeWholeBytes checks that WholeBytes gives the chunk, inode and
// directory entry rows whole-byte fields on byte boundaries where a field
// needs more than a byte, leaves narrower tables in the default layout,
// and changes nothing a reader sees.
func TestEncodeWholeBytes(t *testing.T) {
	tables := []wholeBytesTable{
		{"chunks", []int16{fieldChunks, 3}},
		{"inodes", []int16{fieldInodes, 3}},
		{"dir_entries", []int16{fieldDirEntries, 2, 3}},
	}
	wideSeen := map[string]int{}
	forEachFixture(t, func(t *testing.T, fi *fixtureImage) {
		md, err := Decode(fi.schema, fi.data)
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		checkWholeBytes(t, md, tables, wideSeen)
	})
	// The fixtures are small trees: one wide in every table.
	t.Run("wide", func(t *testing.T) {
		md := &Metadata{HasDirEntries: true}
		for i := range 3000 {
			md.Chunks = append(md.Chunks, Chunk{Block: uint32(i % 3), Offset: uint32(i * 1000), Size: uint32(100 + i%77)})
			md.DirEntries = append(md.DirEntries, DirEntry{NameIndex: uint32(i % 300), InodeNum: uint32(i)})
			md.Inodes = append(md.Inodes, InodeData{ModeIndex: uint32(i % 2), MtimeOffset: uint64(i * 3600)})
		}
		checkWholeBytes(t, md, tables, wideSeen)
	})
	for _, tb := range tables {
		if wideSeen[tb.name] == 0 {
			t.Errorf("no case has %s wider than a byte: the test did not check them", tb.name)
		}
	}
}

// widths returns the bit widths of a row layout's fields.
func widths(s *Schema, row *Layout) []int16 {
	var w []int16
	for _, f := range row.Fields {
		w = append(w, s.Layouts[f.LayoutID].Bits)
	}
	return w
}

type wholeBytesTable struct {
	name string
	path []int16 // root field, [optional value,] array item
}

// checkWholeBytes encodes md with and without WholeBytes and checks the
// tables' rows, counting in wideSeen the tables found wide.
func checkWholeBytes(t *testing.T, md *Metadata, tables []wholeBytesTable, wideSeen map[string]int) {
	t.Helper()
	plainSchema, plain, err := Encode(md)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	schema, data, err := EncodeWith(md, EncodeOptions{WholeBytes: true})
	if err != nil {
		t.Fatalf("EncodeWith(WholeBytes): %v", err)
	}
	s, err := DecodeSchema(schema)
	if err != nil {
		t.Fatalf("DecodeSchema: %v", err)
	}
	ps, err := DecodeSchema(plainSchema)
	if err != nil {
		t.Fatalf("DecodeSchema: %v", err)
	}
	changes := false
	for _, tb := range tables {
		plainRow, row := rowLayout(t, ps, tb.path...), rowLayout(t, s, tb.path...)
		if plainRow == nil || row == nil {
			if plainRow != row {
				t.Errorf("%s: present in one layout only", tb.name)
			}
			continue // table absent or empty
		}
		wide, odd := false, false
		for _, f := range plainRow.Fields {
			b := ps.Layouts[f.LayoutID].Bits
			wide = wide || b > 8
			odd = odd || b%8 != 0
		}
		if !wide {
			if !slices.Equal(widths(s, row), widths(ps, plainRow)) {
				t.Errorf("%s: no field wider than a byte, yet widths %v, not %v", tb.name, widths(s, row), widths(ps, plainRow))
			}
			continue
		}
		wideSeen[tb.name]++
		changes = changes || odd
		for _, f := range row.Fields {
			l := s.Layouts[f.LayoutID]
			if l.Bits%8 != 0 || f.Offset > 0 || -f.Offset%8 != 0 {
				t.Errorf("%s field %d: %d bits at bit %d, want whole bytes", tb.name, f.ID, l.Bits, -f.Offset)
			}
		}
	}
	if changes && bytes.Equal(data, plain) && bytes.Equal(schema, plainSchema) {
		t.Errorf("WholeBytes changed nothing although a wide table has fields of odd bits")
	}
	md2, err := Decode(schema, data)
	if err != nil {
		t.Fatalf("Decode(EncodeWith(WholeBytes)): %v", err)
	}
	if !modelEqual(md, md2) {
		t.Errorf("Decode(EncodeWith(WholeBytes)) != md")
	}
}

package metadata

import (
	"bytes"
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

// TestEncodeWholeBytes checks that WholeBytes gives the chunk and
// directory entry rows whole-byte fields on byte boundaries, changes
// nothing else a reader sees, and leaves the default layout as it was.
func TestEncodeWholeBytes(t *testing.T) {
	tables := []struct {
		name string
		path []int16 // root field, [optional value,] array item
	}{
		{"chunks", []int16{fieldChunks, 3}},
		{"dir_entries", []int16{fieldDirEntries, 2, 3}},
	}
	forEachFixture(t, func(t *testing.T, fi *fixtureImage) {
		md, err := Decode(fi.schema, fi.data)
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
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
		narrow := false
		for _, tb := range tables {
			row := rowLayout(t, s, tb.path...)
			if row == nil {
				continue // table absent or empty
			}
			for _, f := range row.Fields {
				l := s.Layouts[f.LayoutID]
				if l.Bits%8 != 0 || f.Offset > 0 || -f.Offset%8 != 0 {
					t.Errorf("%s field %d: %d bits at bit %d, want whole bytes", tb.name, f.ID, l.Bits, -f.Offset)
				}
			}
			ps, err := DecodeSchema(plainSchema)
			if err != nil {
				t.Fatalf("DecodeSchema: %v", err)
			}
			if plainRow := rowLayout(t, ps, tb.path...); plainRow != nil {
				for _, f := range plainRow.Fields {
					if ps.Layouts[f.LayoutID].Bits%8 != 0 {
						narrow = true
					}
				}
			}
		}
		if narrow && bytes.Equal(data, plain) && bytes.Equal(schema, plainSchema) {
			t.Errorf("WholeBytes changed nothing although the default layout has fields of odd bits")
		}
		md2, err := Decode(schema, data)
		if err != nil {
			t.Fatalf("Decode(EncodeWith(WholeBytes)): %v", err)
		}
		if !modelEqual(md, md2) {
			t.Errorf("Decode(EncodeWith(WholeBytes)) != md")
		}
	})
}

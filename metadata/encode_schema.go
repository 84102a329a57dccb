package metadata

import "sort"

// SchemaFieldOrder selects the wire order of the Schema struct's fields.
// Both are valid compact protocol; they differ only in the first bytes.
type SchemaFieldOrder int

const (
	// SchemaOrderFbthrift is declaration order 4, 1, 2, 3, written by every
	// fbthrift-based release (dwarfs 0.5 ... 0.14).
	SchemaOrderFbthrift SchemaFieldOrder = iota
	// SchemaOrderAscending is id order 1, 2, 3, 4, written by upstream since
	// its switch to thrift-lite (dwarfs 0.15).
	SchemaOrderAscending
)

// DetectSchemaOrder reports which field order an encoded schema uses, so a
// rewriter can preserve it. fbthrift output starts with field #4 (0x45).
func DetectSchemaOrder(schema []byte) SchemaFieldOrder {
	if len(schema) > 0 && schema[0] == 0x45 {
		return SchemaOrderFbthrift
	}
	return SchemaOrderAscending
}

// EncodeSchema serialises a Frozen2 schema in the thrift compact protocol,
// byte-identical to what fbthrift-based dwarfs releases write: Schema fields
// in declaration order 4, 1, 2, 3, layouts by ascending id and each layout's
// fields by ascending field id (§4.2). Layout i of s.Layouts gets id i.
func EncodeSchema(s *Schema) []byte { return EncodeSchemaOrder(s, SchemaOrderFbthrift) }

// EncodeSchemaOrder is EncodeSchema with a selectable Schema field order.
func EncodeSchemaOrder(s *Schema, order SchemaFieldOrder) []byte {
	w := &compactWriter{}
	w.structBegin()
	if order == SchemaOrderFbthrift {
		w.fieldBegin(ctI32, 4)
		w.i32(s.FileVersion)
	}
	w.boolField(1, s.RelaxTypeChecks)
	w.fieldBegin(ctMap, 2)
	w.mapBegin(ctI16, ctStruct, len(s.Layouts))
	for id := range s.Layouts {
		l := &s.Layouts[id]
		w.i16(int16(id))
		w.structBegin()
		w.fieldBegin(ctI32, 1)
		w.i32(l.Size)
		w.fieldBegin(ctI16, 2)
		w.i16(l.Bits)
		w.fieldBegin(ctMap, 3)
		fields := l.Fields
		if !sort.SliceIsSorted(fields, func(i, j int) bool { return fields[i].ID < fields[j].ID }) {
			// Maps are serialised in key order; do not rely on the caller.
			fields = append([]Field(nil), fields...)
			sort.Slice(fields, func(i, j int) bool { return fields[i].ID < fields[j].ID })
		}
		w.mapBegin(ctI16, ctStruct, len(fields))
		for _, f := range fields {
			w.i16(f.ID)
			w.structBegin()
			w.fieldBegin(ctI16, 1)
			w.i16(f.LayoutID)
			w.fieldBegin(ctI16, 2)
			w.i16(f.Offset)
			w.structEnd()
		}
		w.fieldBegin(ctBinary, 4)
		w.str("") // typeName: always empty
		w.structEnd()
	}
	w.fieldBegin(ctI16, 3)
	w.i16(s.RootLayout)
	if order != SchemaOrderFbthrift {
		w.fieldBegin(ctI32, 4)
		w.i32(s.FileVersion)
	}
	w.structEnd()
	return w.bytes()
}

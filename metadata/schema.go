package metadata

import (
	"fmt"
	"sort"
)

// Schema is the Frozen2 layout description stored in METADATA_V2_SCHEMA.
// Layouts are indexed by layout id (ids are dense 0..n-1).
type Schema struct {
	FileVersion     int32
	RelaxTypeChecks bool
	Layouts         []Layout
	RootLayout      int16
}

// Layout describes how one value is stored: Size bytes when not inlined,
// Bits bits when inlined, and the placement of its sub-components.
type Layout struct {
	Size   int32
	Bits   int16
	Fields []Field // sorted by ID, unique
}

// Field places sub-component ID (a thrift field id or an array/optional
// component id) using layout LayoutID at Offset: < 0 means bit offset
// -Offset, >= 0 means byte offset.
type Field struct {
	ID       int16
	LayoutID int16
	Offset   int16
}

// field returns the placement of sub-component id, or nil.
func (l *Layout) field(id int16) *Field {
	fs := l.Fields
	lo, hi := 0, len(fs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch {
		case fs[m].ID < id:
			lo = m + 1
		case fs[m].ID > id:
			hi = m
		default:
			return &fs[m]
		}
	}
	return nil
}

// DecodeSchema parses a compact-protocol Schema and applies upstream's
// validation: the payload is consumed entirely, layout ids are dense, the
// root and every field's layout exist, sizes are non-negative and
// fileVersion <= 1.
func DecodeSchema(b []byte) (*Schema, error) {
	r := &compactReader{b: b}
	s := &Schema{}
	byID := map[int16]Layout{}
	sawLayouts := false
	err := r.readStruct(func(id int16, typ byte) error {
		var err error
		switch id {
		case 1:
			s.RelaxTypeChecks, err = fieldBoolValue(typ)
		case 2:
			if err = expectType(typ, ctMap); err != nil {
				break
			}
			if sawLayouts {
				return fmt.Errorf("duplicate layouts field")
			}
			sawLayouts = true
			err = decodeLayoutMap(r, byID)
		case 3:
			if err = expectType(typ, ctI16); err == nil {
				s.RootLayout, err = r.i16()
			}
		case 4:
			if err = expectType(typ, ctI32); err == nil {
				s.FileVersion, err = r.i32()
			}
		default:
			err = r.skip(typ, true)
		}
		if err != nil {
			return fmt.Errorf("schema field %d: %w", id, err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("metadata: schema: %w", err)
	}
	if r.pos != len(b) {
		return nil, fmt.Errorf("metadata: schema: %d trailing bytes", len(b)-r.pos)
	}
	if s.FileVersion > 1 {
		return nil, fmt.Errorf("metadata: schema: unsupported file version %d", s.FileVersion)
	}
	n := len(byID)
	s.Layouts = make([]Layout, n)
	for id, l := range byID {
		if id < 0 || int(id) >= n {
			return nil, fmt.Errorf("metadata: schema: layout id %d not dense (have %d layouts)", id, n)
		}
		s.Layouts[id] = l
	}
	if s.RootLayout < 0 || int(s.RootLayout) >= n {
		return nil, fmt.Errorf("metadata: schema: root layout %d missing", s.RootLayout)
	}
	for i := range s.Layouts {
		l := &s.Layouts[i]
		if l.Size < 0 || l.Bits < 0 {
			return nil, fmt.Errorf("metadata: schema: layout %d: negative size %d or bits %d", i, l.Size, l.Bits)
		}
		for _, f := range l.Fields {
			if f.LayoutID < 0 || int(f.LayoutID) >= n {
				return nil, fmt.Errorf("metadata: schema: layout %d field %d: layout %d missing", i, f.ID, f.LayoutID)
			}
		}
	}
	return s, nil
}

func decodeLayoutMap(r *compactReader, out map[int16]Layout) error {
	kt, vt, n, err := r.mapHeader()
	if err != nil {
		return err
	}
	if n > 0 && (kt != ctI16 || vt != ctStruct) {
		return fmt.Errorf("layouts map has key/value types %d/%d", kt, vt)
	}
	for range n {
		id, err := r.i16()
		if err != nil {
			return err
		}
		if _, dup := out[id]; dup {
			return fmt.Errorf("duplicate layout id %d", id)
		}
		l, err := decodeLayout(r)
		if err != nil {
			return fmt.Errorf("layout %d: %w", id, err)
		}
		out[id] = l
	}
	return nil
}

func decodeLayout(r *compactReader) (Layout, error) {
	var l Layout
	sawFields := false
	err := r.readStruct(func(id int16, typ byte) error {
		var err error
		switch id {
		case 1:
			if err = expectType(typ, ctI32); err == nil {
				l.Size, err = r.i32()
			}
		case 2:
			if err = expectType(typ, ctI16); err == nil {
				l.Bits, err = r.i16()
			}
		case 3:
			if err = expectType(typ, ctMap); err != nil {
				break
			}
			if sawFields {
				return fmt.Errorf("duplicate fields map")
			}
			sawFields = true
			l.Fields, err = decodeFieldMap(r)
		case 4:
			if err = expectType(typ, ctBinary); err == nil {
				_, err = r.binary() // typeName is informational
			}
		default:
			err = r.skip(typ, true)
		}
		if err != nil {
			return fmt.Errorf("field %d: %w", id, err)
		}
		return nil
	})
	return l, err
}

func decodeFieldMap(r *compactReader) ([]Field, error) {
	kt, vt, n, err := r.mapHeader()
	if err != nil {
		return nil, err
	}
	if n > 0 && (kt != ctI16 || vt != ctStruct) {
		return nil, fmt.Errorf("fields map has key/value types %d/%d", kt, vt)
	}
	fields := make([]Field, 0, n)
	for range n {
		id, err := r.i16()
		if err != nil {
			return nil, err
		}
		f := Field{ID: id}
		err = r.readStruct(func(fid int16, typ byte) error {
			var err error
			switch fid {
			case 1:
				if err = expectType(typ, ctI16); err == nil {
					f.LayoutID, err = r.i16()
				}
			case 2:
				if err = expectType(typ, ctI16); err == nil {
					f.Offset, err = r.i16()
				}
			default:
				err = r.skip(typ, true)
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("field %d: %w", id, err)
		}
		fields = append(fields, f)
	}
	sort.Slice(fields, func(i, j int) bool { return fields[i].ID < fields[j].ID })
	for i := 1; i < len(fields); i++ {
		if fields[i].ID == fields[i-1].ID {
			return nil, fmt.Errorf("duplicate field id %d", fields[i].ID)
		}
	}
	return fields, nil
}

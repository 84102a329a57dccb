package metadata

import "fmt"

// DwarfsVersion mirrors thrift history.thrift dwarfs_version.
type DwarfsVersion struct {
	Major, Minor, Patch        uint16
	IsRelease                  bool
	GitRev, GitBranch, GitDesc *string
}

// HistoryRecord is one entry of a HISTORY section.
type HistoryRecord struct {
	Version            DwarfsVersion
	SystemID           string
	CompilerID         string
	Arguments          []string
	HasArguments       bool
	Timestamp          *uint64
	LibraryVersions    []string
	HasLibraryVersions bool
}

// History is the content of one HISTORY section (§1.8).
type History struct {
	Entries []HistoryRecord
}

// DecodeHistory parses a compact-protocol history struct. The whole
// payload must be consumed.
func DecodeHistory(b []byte) (*History, error) {
	r := &compactReader{b: b}
	h := &History{}
	err := r.readStruct(func(id int16, typ byte) error {
		if id != 1 {
			return r.skip(typ, true)
		}
		if err := expectType(typ, ctList); err != nil {
			return fmt.Errorf("entries: %w", err)
		}
		elem, n, err := r.listHeader()
		if err != nil {
			return fmt.Errorf("entries: %w", err)
		}
		if n > 0 && elem != ctStruct {
			return fmt.Errorf("entries: element type %d", elem)
		}
		h.Entries = make([]HistoryRecord, 0, n)
		for i := range n {
			rec, err := decodeHistoryRecord(r)
			if err != nil {
				return fmt.Errorf("entry %d: %w", i, err)
			}
			h.Entries = append(h.Entries, rec)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("metadata: history: %w", err)
	}
	if r.pos != len(b) {
		return nil, fmt.Errorf("metadata: history: %d trailing bytes", len(b)-r.pos)
	}
	return h, nil
}

func readU16(r *compactReader, typ byte) (uint16, error) {
	if err := expectType(typ, ctI16); err != nil {
		return 0, err
	}
	v, err := r.i16()
	return uint16(v), err
}

func readOptStr(r *compactReader, typ byte) (*string, error) {
	if err := expectType(typ, ctBinary); err != nil {
		return nil, err
	}
	s, err := r.str()
	return &s, err
}

func readStrList(r *compactReader, typ byte) ([]string, error) {
	if typ != ctList && typ != ctSet {
		return nil, fmt.Errorf("wire type %d, want list or set", typ)
	}
	elem, n, err := r.listHeader()
	if err != nil {
		return nil, err
	}
	if n > 0 && elem != ctBinary {
		return nil, fmt.Errorf("element type %d, want string", elem)
	}
	out := make([]string, 0, n)
	for range n {
		s, err := r.str()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func decodeHistoryRecord(r *compactReader) (HistoryRecord, error) {
	var rec HistoryRecord
	err := r.readStruct(func(id int16, typ byte) error {
		var err error
		switch id {
		case 1:
			if err = expectType(typ, ctStruct); err == nil {
				rec.Version, err = decodeDwarfsVersion(r)
			}
		case 2, 3:
			if err = expectType(typ, ctBinary); err == nil {
				var s string
				s, err = r.str()
				if id == 2 {
					rec.SystemID = s
				} else {
					rec.CompilerID = s
				}
			}
		case 4:
			rec.Arguments, err = readStrList(r, typ)
			rec.HasArguments = true
		case 5:
			if err = expectType(typ, ctI64); err == nil {
				var v int64
				v, err = r.i64()
				u := uint64(v)
				rec.Timestamp = &u
			}
		case 6:
			rec.LibraryVersions, err = readStrList(r, typ)
			rec.HasLibraryVersions = true
		default:
			err = r.skip(typ, true)
		}
		if err != nil {
			return fmt.Errorf("field %d: %w", id, err)
		}
		return nil
	})
	return rec, err
}

func decodeDwarfsVersion(r *compactReader) (DwarfsVersion, error) {
	var v DwarfsVersion
	err := r.readStruct(func(id int16, typ byte) error {
		var err error
		switch id {
		case 1:
			v.Major, err = readU16(r, typ)
		case 2:
			v.Minor, err = readU16(r, typ)
		case 3:
			v.Patch, err = readU16(r, typ)
		case 4:
			v.IsRelease, err = fieldBoolValue(typ)
		case 5:
			v.GitRev, err = readOptStr(r, typ)
		case 6:
			v.GitBranch, err = readOptStr(r, typ)
		case 7:
			v.GitDesc, err = readOptStr(r, typ)
		default:
			err = r.skip(typ, true)
		}
		if err != nil {
			return fmt.Errorf("version field %d: %w", id, err)
		}
		return nil
	})
	return v, err
}

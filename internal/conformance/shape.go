// Package conformance describes the structure of a DwarFS image as the set
// of fields and flags present in each section, so that godwarfs's output can
// be compared with what the reference tools write for the same options.
package conformance

import (
	"fmt"
	"os"
	"reflect"
	"sort"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/metadata"
)

// Shape is the structure of one image: which sections, which header
// values, which optional fields.
type Shape struct {
	Major, Minor int
	// Sections lists the non-block section types in file order, with
	// "BLOCK" once where the (one or more) blocks stand.
	Sections []string
	// Compression of each section kind ("BLOCK" lists every codec used).
	Compression map[string][]string
	// SectionNumbersDense is false when header numbers are not 0, 1, 2...
	SectionNumbersDense bool
	Blocks              int // number of BLOCK sections
	HasIndex            bool
	IndexErr            error

	Metadata *metadata.Metadata
	Schema   *metadata.Schema
	History  []metadata.HistoryRecord
	// Fields holds the dotted names of the optional fields that are set,
	// for the metadata ("metadata.features"), its options
	// ("options.time_resolution_sec"), string tables and history entries
	// ("history.version.git_desc").
	Fields map[string]bool
}

// Read opens the image at path and describes it.
func Read(path string) (*Shape, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	im, err := block.OpenImage(f, st.Size(), block.Options{ImageOffset: -1, Name: path})
	if err != nil {
		return nil, err
	}
	s := &Shape{
		Major: im.Major(), Minor: im.Minor(),
		Compression:         map[string][]string{},
		SectionNumbersDense: true,
		HasIndex:            im.HasSectionIndex(),
		IndexErr:            im.IndexError(),
		Fields:              map[string]bool{},
	}
	var schema, data []byte
	for i, sec := range im.Sections() {
		name := sec.Type.String()
		if sec.Number != uint32(i) {
			s.SectionNumbersDense = false
		}
		if name != "BLOCK" || len(s.Sections) == 0 || s.Sections[len(s.Sections)-1] != "BLOCK" {
			s.Sections = append(s.Sections, name)
		}
		if sec.Type == block.SectionBlock {
			s.Blocks++
		}
		c := sec.Compression.String()
		if !contains(s.Compression[name], c) {
			s.Compression[name] = append(s.Compression[name], c)
		}
		switch sec.Type {
		case block.SectionMetadataSchema, block.SectionMetadata, block.SectionHistory:
			b, err := im.ReadDecompressed(sec)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", sec, err)
			}
			switch sec.Type {
			case block.SectionMetadataSchema:
				schema = b
			case block.SectionMetadata:
				data = b
			default:
				h, err := metadata.DecodeHistory(b)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", sec, err)
				}
				s.History = append(s.History, h.Entries...)
			}
		}
	}
	for _, v := range s.Compression {
		sort.Strings(v)
	}
	if s.Schema, err = metadata.DecodeSchema(schema); err != nil {
		return nil, err
	}
	if s.Metadata, err = metadata.DecodeWithSchema(s.Schema, data); err != nil {
		return nil, err
	}
	present(s.Fields, "metadata", reflect.ValueOf(*s.Metadata))
	for _, h := range s.History {
		present(s.Fields, "history", reflect.ValueOf(h))
	}
	return s, nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// present records the set optional fields of struct v under prefix: a
// non-nil pointer or a true HasX flag (container presence). Nested structs
// are described too, those behind pointers under their own field name.
// Plain values (flags such as is_release or mtime_only) are not presence;
// the comparison checks the ones that follow from the options.
func present(out map[string]bool, prefix string, v reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		name := prefix + "." + f.Name
		switch {
		case f.Type.Kind() == reflect.Bool && len(f.Name) > 3 && f.Name[:3] == "Has":
			if fv.Bool() {
				out[prefix+"."+f.Name[3:]] = true
			}
		case f.Type.Kind() == reflect.Pointer:
			if fv.IsNil() {
				continue
			}
			out[name] = true
			if e := fv.Elem(); e.Kind() == reflect.Struct {
				present(out, f.Name, e)
			}
		case f.Type.Kind() == reflect.Struct:
			present(out, name, fv)
		}
	}
}

// SortedFields lists Fields in order.
func (s *Shape) SortedFields() []string {
	out := make([]string, 0, len(s.Fields))
	for k := range s.Fields {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

package metadata

import (
	"bytes"
	"reflect"
	"testing"
)

// modelEqual compares two values like reflect.DeepEqual but treats nil and
// empty slices as equal: the decoder and encoder need not agree on that.
func modelEqual(a, b any) bool {
	return valueEqual(reflect.ValueOf(a), reflect.ValueOf(b))
}

func valueEqual(a, b reflect.Value) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return valueEqual(a.Elem(), b.Elem())
	case reflect.Slice:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !valueEqual(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := range a.NumField() {
			if !a.Type().Field(i).IsExported() {
				continue // decoder bookkeeping, not model
			}
			if !valueEqual(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// TestEncodeFixtures checks that decoding and re-encoding reproduces the
// original schema and data payloads byte for byte for images of format
// >= 2.3, and that the model survives a round trip for older ones.
func TestEncodeFixtures(t *testing.T) {
	forEachFixture(t, func(t *testing.T, fi *fixtureImage) {
		md, err := Decode(fi.schema, fi.data)
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		schema, data, err := EncodeWith(md, EncodeOptions{SchemaOrder: DetectSchemaOrder(fi.schema)})
		if err != nil {
			t.Fatalf("Encode: %v", err)
		}
		if fi.minor >= 3 {
			if !bytes.Equal(schema, fi.schema) {
				t.Errorf("schema differs: %d vs %d bytes, first diff at %d", len(schema), len(fi.schema), firstDiff(schema, fi.schema))
			}
			if !bytes.Equal(data, fi.data) {
				t.Errorf("data differs: %d vs %d bytes, first diff at %d", len(data), len(fi.data), firstDiff(data, fi.data))
			}
		}
		md2, err := Decode(schema, data)
		if err != nil {
			t.Fatalf("Decode(Encode): %v", err)
		}
		if !modelEqual(md, md2) {
			t.Errorf("Decode(Encode(md)) != md")
		}
	})
}

func TestEncodeHistoryFixtures(t *testing.T) {
	n := 0
	forEachFixture(t, func(t *testing.T, fi *fixtureImage) {
		for i, raw := range fi.history {
			h, err := DecodeHistory(raw)
			if err != nil {
				t.Fatalf("DecodeHistory %d: %v", i, err)
			}
			enc := EncodeHistory(h)
			if !bytes.Equal(enc, raw) {
				t.Errorf("history %d differs: %d vs %d bytes, first diff at %d", i, len(enc), len(raw), firstDiff(enc, raw))
			}
			n++
		}
	})
	t.Logf("%d HISTORY sections re-encoded", n)
}

func TestEncodeHistorySynthetic(t *testing.T) {
	s := func(v string) *string { return &v }
	ts := uint64(1 << 40)
	h := &History{Entries: []HistoryRecord{
		{
			Version:  DwarfsVersion{Major: 0, Minor: 15, Patch: 40000, IsRelease: false, GitRev: s("abc"), GitDesc: s("v0.15-1-gabc")},
			SystemID: "Linux", CompilerID: "go",
			Arguments: []string{"mkdwarfs", "-i", "x", "-o", "y", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"}, HasArguments: true,
			Timestamp: &ts,
		},
		{SystemID: "", HasLibraryVersions: true},
		{},
	}}
	enc := EncodeHistory(h)
	got, err := DecodeHistory(enc)
	if err != nil {
		t.Fatalf("DecodeHistory: %v", err)
	}
	if !modelEqual(h, got) {
		t.Errorf("history round trip mismatch:\n got %+v\nwant %+v", got, h)
	}
	if !bytes.Equal(EncodeHistory(got), enc) {
		t.Error("history re-encoding not stable")
	}
}

func TestEncodeSchemaRoundTrip(t *testing.T) {
	s := &Schema{FileVersion: 1, RelaxTypeChecks: true, RootLayout: 2, Layouts: []Layout{
		{Bits: 6},
		{Size: 0, Bits: 12, Fields: []Field{{ID: 1, LayoutID: 0, Offset: 0}, {ID: 2, LayoutID: 0, Offset: -6}}},
		{Size: 300, Bits: 2400, Fields: []Field{{ID: 1, LayoutID: 1}, {ID: 20, LayoutID: 0, Offset: -2000}, {ID: 36, LayoutID: 0, Offset: 17}}},
	}}
	for _, order := range []SchemaFieldOrder{SchemaOrderFbthrift, SchemaOrderAscending} {
		b := EncodeSchemaOrder(s, order)
		if DetectSchemaOrder(b) != order {
			t.Errorf("order %d not detected", order)
		}
		got, err := DecodeSchema(b)
		if err != nil {
			t.Fatalf("DecodeSchema: %v", err)
		}
		if !modelEqual(s, got) {
			t.Errorf("schema round trip mismatch: %+v", got)
		}
	}
	if b := EncodeSchema(s); !bytes.HasPrefix(b, []byte{0x45, 0x02, 0x01, 0x02, 0x1b, 0x03, 0x4c}) {
		t.Errorf("fbthrift prefix wrong: % x", b[:8])
	}
}

// TestEncodeEmpty checks the smallest legal inputs.
func TestEncodeEmpty(t *testing.T) {
	for _, md := range []*Metadata{{}, {HasFeatures: true, HasDirEntries: true, TotalAllocatedFsSize: new(uint64)}} {
		schema, data, err := Encode(md)
		if err != nil {
			t.Fatalf("Encode: %v", err)
		}
		if len(data) < 8 || !bytes.Equal(data[len(data)-8:], make([]byte, 8)) {
			t.Errorf("missing trailing padding: % x", data)
		}
		got, err := Decode(schema, data)
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		if !modelEqual(md, got) {
			t.Errorf("round trip mismatch: %+v", got)
		}
	}
	if _, _, err := Encode(nil); err == nil {
		t.Error("Encode(nil) succeeded")
	}
}

// TestEncodeCanonicalisesContainers: sets and maps are written sorted and
// unique, like the C++ ordered containers.
func TestEncodeCanonicalisesContainers(t *testing.T) {
	md := &Metadata{
		Features: []string{"b", "a", "b"}, HasFeatures: true,
		BlockCategoryMetadata: []KV32{{3, 1}, {1, 2}, {3, 9}}, HasBlockCategoryMetadata: true,
		RegFileSizeCache: &InodeSizeCache{SizeLookup: []KV{{9, 1}, {2, 5}}, MinChunkCount: 128},
	}
	schema, data, err := Encode(md)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(schema, data)
	if err != nil {
		t.Fatal(err)
	}
	if !modelEqual(got.Features, []string{"a", "b"}) ||
		!modelEqual(got.BlockCategoryMetadata, []KV32{{1, 2}, {3, 1}}) ||
		!modelEqual(got.RegFileSizeCache.SizeLookup, []KV{{2, 5}, {9, 1}}) {
		t.Errorf("not canonical: %+v %+v %+v", got.Features, got.BlockCategoryMetadata, got.RegFileSizeCache)
	}
	if md.Features[0] != "b" {
		t.Error("Encode modified its input")
	}
}

// TestFreezeRejectsOverwideValues: a value wider than its C++ type must be
// refused rather than silently truncated.
func TestFreezeRejectsOverwideValues(t *testing.T) {
	root := structNode(fieldDef{1, u8Node()})
	if _, err := freeze(root, fval{f: []fval{uv(255)}}); err != nil {
		t.Fatalf("8-bit value rejected: %v", err)
	}
	root = structNode(fieldDef{1, u8Node()})
	if _, err := freeze(root, fval{f: []fval{uv(256)}}); err == nil {
		t.Fatal("9-bit value in u8 accepted")
	}
}

package metadata

import (
	"reflect"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/internal/fixtures"
)

func decLoadFixture(t testing.TB, rel string) *imageSections {
	t.Helper()
	p := fixtures.File(t, rel)
	secs, err := decLoadSections(p)
	if err != nil {
		t.Fatal(err)
	}
	return secs
}

// TestWorkedExample checks the decoding example of notes §4.4.
func TestWorkedExample(t *testing.T) {
	secs := decLoadFixture(t, "upstream/compat-v0.9.10.dwarfs")
	md, err := Decode(secs.schema, secs.data)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Chunks) != 38 || md.Chunks[0] != (Chunk{Block: 1, Offset: 106, Size: 87}) {
		t.Fatalf("chunks: %d, first %+v", len(md.Chunks), md.Chunks[0])
	}
	if md.DwarfsVersion == nil || *md.DwarfsVersion != "libdwarfs v0.9.10" {
		t.Fatalf("dwarfs_version %v", md.DwarfsVersion)
	}
	if md.Options == nil || !md.Options.MtimeOnly || md.TimestampBase != 1606161908 {
		t.Fatalf("options %+v base %d", md.Options, md.TimestampBase)
	}
	f, err := NewFS(md)
	if err != nil {
		t.Fatal(err)
	}
	ino, err := f.LookupPath("format.sh")
	if err != nil {
		t.Fatal(err)
	}
	in, _ := f.Inode(ino)
	if in.Size != 94 || in.Mode != 0o100755 || in.Uid != 1000 || in.Gid != 100 || in.Mtime.Sec != 1606256045 {
		t.Fatalf("format.sh %+v", in)
	}
	if len(secs.history) != 1 {
		t.Fatalf("%d history sections", len(secs.history))
	}
	h, err := DecodeHistory(secs.history[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Entries) != 1 {
		t.Fatalf("%d history entries", len(h.Entries))
	}
	e := h.Entries[0]
	if e.Version.Major != 0 || e.Version.Minor != 9 || e.Version.Patch != 10 || !e.HasArguments ||
		!strings.Contains(strings.Join(e.Arguments, " "), "--with-devices") || e.Timestamp == nil {
		t.Fatalf("history %+v", e)
	}
}

func TestSchemaRoundTrip(t *testing.T) {
	for _, img := range decGlobFixtures(t, "upstream/*.dwarfs") {
		secs, err := decLoadSections(img)
		if err != nil {
			t.Fatal(err)
		}
		s, err := DecodeSchema(secs.schema)
		if err != nil {
			t.Fatalf("%s: %v", img, err)
		}
		// Images from 0.5+ carry the fbthrift serialisation the encoder
		// reproduces; older ones only need to decode identically.
		s2, err := DecodeSchema(EncodeSchema(s))
		if err != nil || !reflect.DeepEqual(s, s2) {
			t.Fatalf("%s: schema round trip differs (%v)", img, err)
		}
		if _, err := DecodeSchema(append(secs.schema, 0)); err == nil {
			t.Fatalf("%s: trailing byte accepted", img)
		}
		if _, err := DecodeSchema(secs.schema[:len(secs.schema)-1]); err == nil {
			t.Fatalf("%s: truncated schema accepted", img)
		}
	}
}

// tinySchema describes a root with only field #1 (chunks): an array whose
// count and distance are 32-bit and whose items are 8-bit structs.
func tinySchema(countBits int16) *Schema {
	return &Schema{
		FileVersion: 1, RelaxTypeChecks: true, RootLayout: 0,
		Layouts: []Layout{
			{Bits: 64, Fields: []Field{{ID: 1, LayoutID: 1, Offset: 0}}},
			{Bits: 64, Fields: []Field{{ID: 1, LayoutID: 2, Offset: -32}, {ID: 2, LayoutID: 5, Offset: 0}, {ID: 3, LayoutID: 3}}},
			{Bits: 32},
			{Bits: 8, Fields: []Field{{ID: 1, LayoutID: 4}}},
			{Bits: 8},
			{Bits: countBits},
		},
	}
}

func TestDecodeBounds(t *testing.T) {
	// count 0xFFFFFFFF, distance 0: must fail naming the field.
	data := []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}
	_, err := DecodeWithSchema(tinySchema(32), data)
	if err == nil || !strings.Contains(err.Error(), "field chunks: count 4294967295 exceeds data") {
		t.Fatalf("err = %v", err)
	}
	// A valid tiny list: 2 items at distance 8.
	data = []byte{2, 0, 0, 0, 8, 0, 0, 0, 7, 9}
	md, err := DecodeWithSchema(tinySchema(32), data)
	if err != nil || !reflect.DeepEqual(md.Chunks, []Chunk{{Block: 7}, {Block: 9}}) {
		t.Fatalf("md %+v err %v", md, err)
	}
	// Width beyond the C++ type (u32 block with 40 bits).
	s := tinySchema(32)
	s.Layouts[4].Bits = 40
	if _, err := DecodeWithSchema(s, append(data, 0, 0, 0, 0, 0)); err == nil || !strings.Contains(err.Error(), "chunks.block") {
		t.Fatalf("wide field err = %v", err)
	}
	// Zero-bit items with a huge count must be refused without allocating.
	s = tinySchema(32)
	s.Layouts[3] = Layout{}
	if _, err := DecodeWithSchema(s, []byte{0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0}); err == nil {
		t.Fatal("huge zero-bit list accepted")
	}
	// Distance beyond the data.
	if _, err := DecodeWithSchema(tinySchema(32), []byte{1, 0, 0, 0, 0xff, 0, 0, 0}); err == nil {
		t.Fatal("bad distance accepted")
	}
	// Count field wider than size_t.
	s = tinySchema(32)
	s.Layouts[5].Bits = 65
	if _, err := DecodeWithSchema(s, make([]byte, 16)); err == nil {
		t.Fatal("65-bit count accepted")
	}
}

func TestDecodeSchemaErrors(t *testing.T) {
	good := EncodeSchema(tinySchema(32))
	if _, err := DecodeSchema(good); err != nil {
		t.Fatal(err)
	}
	bad := map[string]*Schema{
		"root missing":   {FileVersion: 1, RootLayout: 3, Layouts: []Layout{{}}},
		"field layout":   {FileVersion: 1, Layouts: []Layout{{Fields: []Field{{ID: 1, LayoutID: 4}}}}},
		"negative bits":  {FileVersion: 1, Layouts: []Layout{{Bits: -1}}},
		"negative size":  {FileVersion: 1, Layouts: []Layout{{Size: -1}}},
		"version":        {FileVersion: 2, Layouts: []Layout{{}}},
		"no layouts":     {FileVersion: 1},
		"duplicate fids": {FileVersion: 1, Layouts: []Layout{{Fields: []Field{{ID: 1}, {ID: 1}}}}},
	}
	for name, s := range bad {
		if _, err := DecodeSchema(EncodeSchema(s)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Non-dense ids: hand-written map with key 5 only.
	w := &compactWriter{}
	w.structBegin()
	w.fieldBegin(ctMap, 2)
	w.mapBegin(ctI16, ctStruct, 1)
	w.i16(5)
	w.structBegin()
	w.structEnd()
	w.structEnd()
	if _, err := DecodeSchema(w.bytes()); err == nil {
		t.Error("non-dense layout ids accepted")
	}
}

func TestHistoryFixtures(t *testing.T) {
	for _, img := range decGlobFixtures(t, "reference/images/*.dwarfs") {
		secs, err := decLoadSections(img)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range secs.history {
			hist, err := DecodeHistory(h)
			if err != nil {
				t.Fatalf("%s: %v", img, err)
			}
			if len(hist.Entries) == 0 || hist.Entries[0].Version.Minor != 15 {
				t.Fatalf("%s: history %+v", img, hist)
			}
		}
	}
}

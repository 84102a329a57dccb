package metadata

import (
	"path/filepath"
	"testing"

	"github.com/godwarfs/godwarfs/internal/fixtures"
)

// fuzzSeeds returns schema/metadata pairs of a few small fixtures; the
// fuzzers also run (from their own seeds) without them.
func fuzzSeeds(_ testing.TB) []*imageSections {
	dir := fixtures.Dir()
	if dir == "" {
		return nil
	}
	var out []*imageSections
	for _, name := range []string{"upstream/compat-v0.9.10.dwarfs", "upstream/compat-v0.2.0.dwarfs", "upstream/gh307.dwarfs",
		"upstream/timestamps.dwarfs", "reference/images/pack-all.dwarfs", "reference/images/nanosecond-times.dwarfs"} {
		secs, err := decLoadSections(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		out = append(out, secs)
	}
	return out
}

func FuzzSchema(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s.schema)
	}
	f.Add(EncodeSchema(tinySchema(32)))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSchema(b)
		if err != nil {
			return
		}
		// A valid schema must survive re-encoding.
		s2, err := DecodeSchema(EncodeSchema(s))
		if err != nil {
			t.Fatalf("re-encoded schema rejected: %v", err)
		}
		if len(s2.Layouts) != len(s.Layouts) || s2.RootLayout != s.RootLayout {
			t.Fatal("schema round trip differs")
		}
	})
}

// FuzzDecode mutates the data bytes under a fixed valid schema (which) or
// the schema bytes themselves.
func FuzzDecode(f *testing.F) {
	seeds := fuzzSeeds(f)
	if len(seeds) == 0 {
		seeds = []*imageSections{{schema: EncodeSchema(tinySchema(32)), data: []byte{2, 0, 0, 0, 8, 0, 0, 0, 7, 9}}}
	}
	for i, s := range seeds {
		f.Add(uint8(i), false, s.data)
		f.Add(uint8(i), true, s.schema)
	}
	f.Fuzz(func(t *testing.T, which uint8, mutSchema bool, b []byte) {
		s := seeds[int(which)%len(seeds)]
		schema, data := s.schema, b
		if mutSchema {
			schema, data = b, s.data
		}
		md, err := Decode(schema, data)
		if err != nil {
			return
		}
		// What Decode accepts, DecodeLazy accepts and reads the same.
		lazy, err := DecodeLazy(schema, data)
		if err != nil {
			t.Fatalf("Decode succeeded, DecodeLazy failed: %v", err)
		}
		if err := sameInodes(md, lazy); err != nil {
			t.Fatal(err)
		}
		_ = exercise(md, 2000)
		_ = exercise(lazy, 2000)
	})
}

func FuzzNewFS(f *testing.F) {
	seeds := fuzzSeeds(f)
	for _, s := range seeds {
		f.Add(s.schema, s.data)
	}
	f.Fuzz(func(t *testing.T, schema, data []byte) {
		md, err := Decode(schema, data)
		if err != nil {
			return
		}
		_ = exercise(md, 2000)
		if err := lazyAgrees(md); err != nil {
			t.Error(err)
		}
		if lz, err := DecodeLazy(schema, data); err == nil {
			if err := lazyAgrees(lz); err != nil {
				t.Errorf("packed tables: %v", err)
			}
		}
	})
}

package metadata

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/godwarfs/godwarfs/internal/fixtures"
)

func TestExportJSON(t *testing.T) {
	for _, name := range []string{"reference/images/default.dwarfs", "reference/images/pack-all.dwarfs", "upstream/compat-v0.2.0.dwarfs", "upstream/catdata.dwarfs"} {
		t.Run(filepath.Base(name), func(t *testing.T) {
			p := fixtures.File(t, name)
			secs, err := decLoadSections(p)
			if err != nil {
				t.Fatal(err)
			}
			md, err := Decode(secs.schema, secs.data)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := ExportJSON(md, &buf); err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatalf("output does not parse: %v", err)
			}
			count := func(k string) int {
				l, ok := got[k].([]any)
				if !ok {
					t.Fatalf("key %q missing or not a list", k)
				}
				return len(l)
			}
			for k, want := range map[string]int{
				"chunks": len(md.Chunks), "directories": len(md.Directories), "inodes": len(md.Inodes),
				"chunk_table": len(md.ChunkTable), "modes": len(md.Modes), "uids": len(md.Uids),
				"names": len(md.Names), "symlink_table": len(md.SymlinkTable),
			} {
				if n := count(k); n != want {
					t.Errorf("%s: %d elements, want %d", k, n, want)
				}
			}
			if _, ok := got["dir_entries"]; ok != md.HasDirEntries {
				t.Errorf("dir_entries present = %v, want %v", ok, md.HasDirEntries)
			} else if ok && count("dir_entries") != len(md.DirEntries) {
				t.Errorf("dir_entries: %d elements, want %d", count("dir_entries"), len(md.DirEntries))
			}
			if bs, _ := got["block_size"].(float64); uint32(bs) != md.BlockSize {
				t.Errorf("block_size %v, want %d", got["block_size"], md.BlockSize)
			}
			if md.CompactNames != nil {
				cn, ok := got["compact_names"].(map[string]any)
				if !ok {
					t.Fatal("compact_names missing")
				}
				if _, ok := cn["buffer"].(string); !ok {
					t.Error("compact_names.buffer is not a base64 string")
				}
			} else if _, ok := got["compact_names"]; ok {
				t.Error("unset compact_names exported")
			}
			if (md.Options == nil) != (got["options"] == nil) {
				t.Errorf("options presence mismatch")
			}
			var first map[string]any
			if l, _ := got["inodes"].([]any); len(l) > 0 {
				first, _ = l[0].(map[string]any)
			}
			if _, ok := first["mode_index"]; !ok {
				t.Errorf("inodes[0] lacks mode_index: %v", first)
			}
		})
	}
}

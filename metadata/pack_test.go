package metadata

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Reference unpackers written from §3.14, used to check the packers.

func unpackChunkTableRef(p []uint32) []uint32 {
	out := make([]uint32, len(p))
	var sum uint32
	for i, v := range p {
		sum += v
		out[i] = sum
	}
	return out
}

func unpackSharedRef(p []uint32) []uint32 {
	var out []uint32
	for k, c := range p {
		for range c + 2 {
			out = append(out, uint32(k))
		}
	}
	return out
}

func TestPackChunkTable(t *testing.T) {
	ct := []uint32{0, 0, 1, 5, 5, 9, 17}
	p := PackChunkTable(ct)
	if !modelEqual(p, []uint32{0, 0, 1, 4, 0, 4, 8}) {
		t.Errorf("packed = %v", p)
	}
	if got := unpackChunkTableRef(p); !modelEqual(got, ct) {
		t.Errorf("unpacked = %v", got)
	}
	if len(PackChunkTable(nil)) != 0 {
		t.Error("empty table")
	}
}

func TestPackSharedFiles(t *testing.T) {
	un := []uint32{0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 3, 3, 4, 4, 4}
	p := PackSharedFiles(un)
	if !modelEqual(p, []uint32{0, 3, 1, 0, 1}) {
		t.Errorf("packed = %v", p)
	}
	if got := unpackSharedRef(p); !modelEqual(got, un) {
		t.Errorf("unpacked = %v", got)
	}
	if p := PackSharedFiles(nil); p == nil || len(p) != 0 {
		t.Errorf("empty: %v", p)
	}
}

func TestPackDirectories(t *testing.T) {
	dirs := []Directory{{0, 1, 0}, {0, 3, 1}, {0, 5, 2}, {1, 5, 4}, {0, 7, 0}}
	p := PackDirectories(dirs)
	want := []Directory{{FirstEntry: 1}, {FirstEntry: 2}, {FirstEntry: 2}, {FirstEntry: 0}, {FirstEntry: 2}}
	if !modelEqual(p, want) {
		t.Errorf("packed = %v", p)
	}
	var fe []uint32
	for _, d := range p {
		fe = append(fe, d.FirstEntry)
	}
	for i, v := range unpackChunkTableRef(fe) {
		if v != dirs[i].FirstEntry {
			t.Errorf("first_entry[%d] = %d, want %d", i, v, dirs[i].FirstEntry)
		}
	}
}

// lookupString resolves string i of a compact table the way §3.13 reads it.
func lookupString(t *testing.T, st *StringTable, i int) string {
	t.Helper()
	var b, e uint32
	if st.PackedIndex {
		for k := 0; k < i; k++ {
			b += st.Index[k]
		}
		e = b + st.Index[i]
	} else {
		b, e = st.Index[i], st.Index[i+1]
	}
	raw := st.Buffer[b:e]
	if st.Symtab == nil {
		return string(raw)
	}
	d, err := newFSSTDecoder(st.Symtab)
	if err != nil {
		t.Fatalf("symtab: %v", err)
	}
	out, err := d.decode(raw, 1<<20)
	if err != nil {
		t.Fatalf("decode %d: %v", i, err)
	}
	return string(out)
}

func sampleNames(n int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 1))
	stems := []string{"libfoo", "README", "index", "module", "test_", "config", "Makefile", "src", "include", "data"}
	exts := []string{".so", ".md", ".html", ".go", ".c", ".h", ".json", "", ".txt", ".tar.gz"}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d%s", stems[r.IntN(len(stems))], r.IntN(1000), exts[r.IntN(len(exts))])
	}
	out = append(out, "", "\xff\x00binary\xfe", "ü-unicode-名前")
	return out
}

func TestBuildStringTable(t *testing.T) {
	names := sampleNames(500, 7)
	for _, fsst := range []bool{false, true} {
		for _, packed := range []bool{false, true} {
			st := BuildStringTable(names, fsst, packed)
			if fsst && st.Symtab == nil {
				t.Errorf("fsst=%v packed=%v: FSST not used on a compressible corpus", fsst, packed)
			}
			if !fsst && st.Symtab != nil {
				t.Errorf("symtab without FSST")
			}
			wantIdx := len(names) + 1
			if packed {
				wantIdx--
			}
			if len(st.Index) != wantIdx {
				t.Fatalf("index length %d, want %d", len(st.Index), wantIdx)
			}
			for i, s := range names {
				if got := lookupString(t, st, i); got != s {
					t.Fatalf("fsst=%v packed=%v: string %d = %q, want %q", fsst, packed, i, got, s)
				}
			}
			// The table must also survive freezing.
			md := &Metadata{CompactNames: st, CompactSymlinks: BuildStringTable(nil, fsst, packed)}
			schema, data, err := Encode(md)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(schema, data)
			if err != nil {
				t.Fatal(err)
			}
			if !modelEqual(got.CompactNames, st) || !modelEqual(got.CompactSymlinks, md.CompactSymlinks) {
				t.Errorf("fsst=%v packed=%v: table changed by Encode/Decode", fsst, packed)
			}
		}
	}
	raw := BuildStringTable(names, false, false)
	comp := BuildStringTable(names, true, false)
	t.Logf("raw %d bytes, fsst %d+%d bytes", len(raw.Buffer), len(comp.Buffer), len(comp.Symtab))
	if len(comp.Buffer)+len(comp.Symtab) >= len(raw.Buffer) {
		t.Error("FSST table not smaller")
	}
}

func TestBuildStringTableSmall(t *testing.T) {
	// Too small to profit from FSST: stored raw even when requested.
	st := BuildStringTable([]string{"a", "bc"}, true, false)
	if st.Symtab != nil || string(st.Buffer) != "abc" || !modelEqual(st.Index, []uint32{0, 1, 3}) {
		t.Errorf("got %+v", st)
	}
	st = BuildStringTable(nil, true, false)
	if !modelEqual(st.Index, []uint32{0}) || len(st.Buffer) != 0 {
		t.Errorf("empty: %+v", st)
	}
}

func TestFSSTEncodeAllBytes(t *testing.T) {
	// Every byte value, including the escape code, must survive.
	var all []byte
	for i := range 256 {
		all = append(all, byte(i), byte(i), 'x', 'y')
	}
	strs := []string{string(all), string(all[:100]), "xyxyxyxy\xff\xff"}
	tab := trainFSST(strs)
	d, err := newFSSTDecoder(tab.export())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range strs {
		out, err := d.decode(tab.encode(nil, []byte(s)), 1<<20)
		if err != nil || string(out) != s {
			t.Fatalf("round trip failed: %v", err)
		}
	}
}

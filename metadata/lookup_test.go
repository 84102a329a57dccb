package metadata

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// flatDirMetadata builds a root directory holding one empty regular file
// per name (sorted and unique), file i being inode i+1.
func flatDirMetadata(names []string) *Metadata {
	n := uint32(len(names))
	md := &Metadata{
		Modes:         []uint32{0o40755, 0o100644},
		Inodes:        make([]InodeData, n+1),
		Names:         names,
		DirEntries:    []DirEntry{{0, 0}},
		HasDirEntries: true,
		Directories:   []Directory{{0, 1, 0}, {0, n + 1, 0}},
		ChunkTable:    make([]uint32, n+1),
		BlockSize:     1024,
	}
	for i := range n {
		md.Inodes[i+1].ModeIndex = 1
		md.DirEntries = append(md.DirEntries, DirEntry{NameIndex: i, InodeNum: i + 1})
	}
	return md
}

// lookupNames are names that share long prefixes, differ in their last
// byte, are prefixes of one another or hold bytes above 0x7f, the cases
// where a compressed-name comparison can go wrong.
func lookupNames() []string {
	names := []string{
		"a", "ab", "abc", "abd", "abcdefgh", "abcdefghi", "abcdefghij",
		"format_memory_1", "format_memory_10", "format_memory_100", "format_memory_2",
		"format_memory_20", "format_memory_9", "socket-memory-012", "socket-memory-013",
		"z\xff", "z\xff\xfe", "\xc3\xa9t\xc3\xa9", "~", strings.Repeat("x", maxNameLen),
		strings.Repeat("x", maxNameLen-1) + "y",
	}
	for i := range 300 {
		names = append(names, fmt.Sprintf("file_%04d.c", i*7), fmt.Sprintf("dir%d/", i))
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// TestLookupCompressedNames lists a directory whose names are
// FSST-compressed, packed-index compact or plain, looks up every name and
// names that are not there, and compares with the sorted names.
func TestLookupCompressedNames(t *testing.T) {
	names := lookupNames()
	missing := []string{
		"", "A", "aa", "abcdefg", "abcdefghijk", "abe", "format_memory_", "format_memory_0",
		"format_memory_11", "format_memory_3", "format_memory_99", "file_0001.c", "file_0007.", "file_0007.cc",
		"z", "z\xfe", "z\xff\xff", "\xc3\xa9t", "\x00", "a\x00", "~~", "\xff",
		strings.Repeat("x", maxNameLen-1), strings.Repeat("x", maxNameLen+1),
		strings.Repeat("x", maxNameLen) + "y",
	}
	for _, tc := range []struct {
		name string
		set  func(md *Metadata)
		fsst bool
	}{
		{"plain", func(md *Metadata) {}, false},
		{"compact", func(md *Metadata) {
			md.CompactNames = BuildStringTable(md.Names, false, true)
			md.Names = nil
		}, false},
		{"fsst", func(md *Metadata) {
			md.CompactNames = BuildStringTable(md.Names, true, true)
			md.Names = nil
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := flatDirMetadata(names)
			tc.set(md)
			f := mustFS(t, md)
			if got := f.names.dec != nil; got != tc.fsst {
				t.Fatalf("names compressed: %v, want %v", got, tc.fsst)
			}
			ents, err := f.ReadDir(0)
			if err != nil || len(ents) != len(names) {
				t.Fatalf("ReadDir: %d entries, %v; want %d", len(ents), err, len(names))
			}
			for i, e := range ents {
				if e.Name != names[i] || e.Ino != uint32(i+1) {
					t.Fatalf("ReadDir entry %d = %q (inode %d), want %q (%d)", i, e.Name, e.Ino, names[i], i+1)
				}
			}
			for i, n := range names {
				ino, ok := f.Lookup(0, n)
				if !ok || ino != uint32(i+1) {
					t.Errorf("Lookup(%q) = %d, %v; want %d", n, ino, ok, i+1)
				}
			}
			for _, n := range missing {
				if _, found := slices.BinarySearch(names, n); found {
					t.Fatalf("test bug: %q is in the directory", n)
				}
				if ino, ok := f.Lookup(0, n); ok {
					t.Errorf("Lookup(%q) found inode %d", n, ino)
				}
			}
			if _, ok := f.Lookup(1, "a"); ok {
				t.Error("Lookup in a regular file succeeded")
			}
		})
	}
}

// TestCompareKey checks the word-wise comparison against bytes.Compare of
// the decoded string for random symbol tables (with zero bytes in
// symbols, escapes and a zero-terminated table) and names that equal,
// prefix, extend or differ in one byte from the decoded string.
func TestCompareKey(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab\x00\xff")
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return b
	}
	for table := range 50 {
		seen := map[string]bool{}
		var syms []string
		for len(syms) < 1+r.IntN(40) {
			s := string(randBytes(1 + r.IntN(8)))
			if !seen[s] {
				seen[s] = true
				syms = append(syms, s)
			}
		}
		zeroTerm := table%2 == 1
		d, err := newFSSTDecoder(buildSymtab(zeroTerm, syms))
		if err != nil {
			t.Fatal(err)
		}
		var codes []byte
		for c := range 255 {
			if d.len[c] > 0 {
				codes = append(codes, byte(c))
			}
		}
		for range 200 {
			var in []byte
			for range r.IntN(12) {
				if r.IntN(5) == 0 {
					in = append(in, 0xff, alphabet[r.IntN(len(alphabet))])
				} else {
					in = append(in, codes[r.IntN(len(codes))])
				}
			}
			dec := d.appendValid(nil, in)
			cands := [][]byte{dec, randBytes(r.IntN(20)), append(slices.Clone(dec), randBytes(1+r.IntN(9))...)}
			for k := range dec {
				cands = append(cands, dec[:k])
				m := slices.Clone(dec)
				m[k] = alphabet[r.IntN(len(alphabet))]
				cands = append(cands, m)
			}
			for _, name := range cands {
				key := append(slices.Clone(name), make([]byte, keyPad)...)
				want := bytes.Compare(dec, name)
				if got := d.compareKey(in, key, len(name)); got != want {
					t.Fatalf("table %q: compareKey(%q, %q) = %d, want %d", syms, dec, name, got, want)
				}
				if got := d.compareValid(in, string(name)); got != want {
					t.Fatalf("table %q: compareValid(%q, %q) = %d, want %d", syms, dec, name, got, want)
				}
			}
		}
	}
}

// BenchmarkLookupCompressed looks up every name of a directory of 1,000
// FSST-compressed names.
func BenchmarkLookupCompressed(b *testing.B) {
	var names []string
	for i := range 1000 {
		names = append(names, fmt.Sprintf("%s_%s_%d", []string{"format", "socket", "time"}[i%3], []string{"memory", "sync", "buffer", "decode"}[i%4], i))
	}
	slices.Sort(names)
	md := flatDirMetadata(names)
	md.CompactNames = BuildStringTable(md.Names, true, true)
	md.Names = nil
	f, err := NewFS(md)
	if err != nil {
		b.Fatal(err)
	}
	if f.names.dec == nil {
		b.Fatal("names not compressed")
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, ok := f.Lookup(0, names[i%len(names)]); !ok {
			b.Fatal("not found")
		}
	}
}

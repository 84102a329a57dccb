package metadata

import (
	"bytes"
	"fmt"
	"testing"
)

// FuzzHistory feeds arbitrary bytes to the HISTORY decoder, seeded with a
// valid encoding; a decodable input must survive an encode/decode cycle.
func FuzzHistory(f *testing.F) {
	rev := "abc"
	ts := uint64(1700000000)
	seed := EncodeHistory(&History{Entries: []HistoryRecord{{
		Version:  DwarfsVersion{Major: 0, Minor: 15, Patch: 3, IsRelease: true, GitRev: &rev},
		SystemID: "Linux [x86_64]", CompilerID: "go",
		Arguments: []string{"mkdwarfs", "-i", "x"}, HasArguments: true, Timestamp: &ts,
	}}})
	f.Add(seed)
	f.Add([]byte{})
	f.Add([]byte{0x19, 0xfc, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeHistory(b)
		if err != nil {
			return
		}
		again, err := DecodeHistory(EncodeHistory(h))
		if err != nil {
			t.Fatalf("re-encoded history does not decode: %v", err)
		}
		if len(again.Entries) != len(h.Entries) {
			t.Fatalf("entries: %d after round trip, want %d", len(again.Entries), len(h.Entries))
		}
	})
}

// FuzzFSST checks that the FSST decoder rejects or bounds any symbol table
// and any compressed string, and that a table built by the encoder decodes
// what it encoded.
func FuzzFSST(f *testing.F) {
	names := []string{"include", "includes", "index.html", "indexer", "main.go", "main_test.go", "Makefile"}
	st := BuildStringTable(names, true, false)
	if st.Symtab != nil && len(st.Index) > 1 {
		f.Add(st.Symtab, st.Buffer[st.Index[0]:st.Index[1]])
	}
	f.Add([]byte{1, 0, 0, 0, 0x0a, 0x14, 0x34, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []byte{0xff, 'a'})
	f.Fuzz(func(t *testing.T, tab, in []byte) {
		d, err := newFSSTDecoder(tab)
		if err != nil {
			return
		}
		out, err := d.decode(in, 4096)
		if err == nil && len(out) > 4096 {
			t.Fatalf("decoded %d bytes past the 4096 limit", len(out))
		}
		// validate accepts what decode accepts, and reports what the
		// code-by-code scan reports.
		verr := d.validate(in, 4096)
		if (verr == nil) != (err == nil) {
			t.Fatalf("validate: %v, decode: %v", verr, err)
		}
		if serr := d.validateSlow(in, 4096); fmt.Sprint(serr) != fmt.Sprint(verr) {
			t.Fatalf("validate: %v, code by code: %v", verr, serr)
		}
		// The unchecked decoders take input nothing has validated yet
		// (after CheckLazy, a name outside the directories checked):
		// they stay in bounds, and agree with decode on valid input.
		av := d.appendValid(nil, in)
		key := append([]byte("main"), make([]byte, keyPad)...)
		cv, ck := d.compareValid(in, "main"), d.compareKey(in, key, 4)
		if err == nil {
			if !bytes.Equal(av, out) {
				t.Fatalf("appendValid %q, decode %q", av, out)
			}
			if want := bytes.Compare(out, []byte("main")); cv != want || ck != want {
				t.Fatalf("compareValid %d, compareKey %d, want %d", cv, ck, want)
			}
		}
		enc := trainFSST([]string{string(in)})
		dec, err := newFSSTDecoder(enc.export())
		if err != nil {
			t.Fatalf("encoder table rejected: %v", err)
		}
		got, err := dec.decode(enc.encode(nil, in), len(in)+1)
		if err != nil || !bytes.Equal(got, in) {
			t.Fatalf("fsst round trip: got %q, %v; want %q", got, err, in)
		}
	})
}

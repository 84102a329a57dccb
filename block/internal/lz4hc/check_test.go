package lz4hc_test

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// blockStats describes a block that checkBlock accepted.
type blockStats struct {
	sequences int
	maxOffset int
}

// checkBlock decodes an LZ4 block of n bytes on its own, checking every
// rule of the block format that encoders must obey and decoders may
// rely on: offsets from 1 to 65535 within the output so far, matches of
// at least 4 bytes, no match starting in the last 12 bytes of the block
// or reaching into its last 5, and a last sequence of literals only.
func checkBlock(b []byte, n int) ([]byte, blockStats, error) {
	var st blockStats
	out := make([]byte, 0, n)
	length := func(i int, v int) (int, int, error) {
		if v < 15 {
			return v, i, nil
		}
		for {
			if i >= len(b) {
				return 0, i, fmt.Errorf("length runs past the block end")
			}
			v += int(b[i])
			i++
			if b[i-1] != 255 {
				return v, i, nil
			}
		}
	}
	for i := 0; ; {
		if i >= len(b) {
			return nil, st, fmt.Errorf("block ends without a last sequence")
		}
		tok := b[i]
		i++
		ll, i2, err := length(i, int(tok>>4))
		if err != nil {
			return nil, st, err
		}
		i = i2
		if ll > len(b)-i {
			return nil, st, fmt.Errorf("literal run of %d at %d past the block end", ll, i)
		}
		out = append(out, b[i:i+ll]...)
		i += ll
		if i == len(b) {
			// Last sequence: literals only, at least 5 unless the whole
			// block is shorter than a match could need.
			if tok&15 != 0 {
				return nil, st, fmt.Errorf("last token %#x has a match length", tok)
			}
			if len(out) != n {
				return nil, st, fmt.Errorf("decoded %d bytes, want %d", len(out), n)
			}
			if st.sequences > 0 && ll < 5 {
				return nil, st, fmt.Errorf("last literal run of %d bytes, want at least 5", ll)
			}
			return out, st, nil
		}
		if len(b)-i < 2 {
			return nil, st, fmt.Errorf("offset at %d past the block end", i)
		}
		off := int(binary.LittleEndian.Uint16(b[i:]))
		i += 2
		if off == 0 || off > len(out) {
			return nil, st, fmt.Errorf("offset %d at output %d", off, len(out))
		}
		ml, i2, err := length(i, int(tok&15))
		if err != nil {
			return nil, st, err
		}
		i = i2
		ml += 4
		if len(out) > n-12 {
			return nil, st, fmt.Errorf("match starts at %d, within 12 bytes of the end %d", len(out), n)
		}
		if len(out)+ml > n-5 {
			return nil, st, fmt.Errorf("match at %d of %d bytes reaches into the last 5 of %d", len(out), ml, n)
		}
		for range ml {
			out = append(out, out[len(out)-off])
		}
		st.sequences++
		st.maxOffset = max(st.maxOffset, off)
	}
}

func TestCheckBlockRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
		n    int
	}{
		{"empty block", nil, 0},
		{"match in last token", []byte{0x10, 'a', 1, 0}, 5},
		{"zero offset", []byte{0x10, 'a', 0, 0, 0x50, 'a', 'a', 'a', 'a', 'a'}, 10},
		{"offset before start", []byte{0x10, 'a', 2, 0, 0x50, 'a', 'a', 'a', 'a', 'a'}, 10},
		{"match too near the end", []byte{0x10, 'a', 1, 0, 0x50, 'a', 'a', 'a', 'a', 'a'}, 10},
		{"match into the last 5", []byte{0x15, 'a', 1, 0, 0x30, 'a', 'a', 'a'}, 13},
		{"valid but truncated", []byte{0x15, 'a', 1, 0, 0x50, 'a', 'a', 'a', 'a'}, 15},
		{"wrong size", []byte{0x30, 'a', 'b', 'c'}, 4},
	} {
		if _, _, err := checkBlock(tc.b, tc.n); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	ok := []byte{0x15, 'a', 1, 0, 0x50, 'a', 'a', 'a', 'a', 'a'}
	if out, _, err := checkBlock(ok, 15); err != nil || string(out) != strings.Repeat("a", 15) {
		t.Errorf("valid block: %q, %v", out, err)
	}
}

// moduleRoot is the directory holding go.mod.
func moduleRoot(t testing.TB) string {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	for d := filepath.Dir(self); ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatal("no go.mod above the test")
		}
	}
}

// mixedText returns n bytes of the module's text files: those in testdata
// directories first, then Go sources, in path order.
func mixedText(t testing.TB, n int) []byte {
	t.Helper()
	root := moduleRoot(t)
	var data, more []string
	textExt := []string{".txt", ".tsv", ".json", ".list", ".md", ".py", ".go"}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !slices.Contains(textExt, filepath.Ext(p)) {
			return nil
		}
		if strings.Contains(p, string(filepath.Separator)+"testdata"+string(filepath.Separator)) {
			data = append(data, p)
		} else if filepath.Ext(p) == ".go" {
			more = append(more, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, p := range append(data, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
		if len(out) >= n {
			return out[:n]
		}
	}
	t.Fatalf("only %d bytes of text in the module, want %d", len(out), n)
	return nil
}

package block

import (
	"bytes"
	"errors"
	"github.com/godwarfs/godwarfs/block/internal/codectest"
	"os"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/block/internal/xzfmt"
	sharedfixtures "github.com/godwarfs/godwarfs/internal/fixtures"
)

// xzFilterIDs returns the filter chain of each block of an xz payload.
func xzFilterIDs(t *testing.T, payload []byte) [][]uint64 {
	t.Helper()
	info, err := parseXZ(payload)
	if err != nil {
		t.Fatal(err)
	}
	hdrs, _, err := parseXZBlocks(payload, info)
	if err != nil {
		t.Fatal(err)
	}
	var ids [][]uint64
	for _, h := range hdrs {
		var chain []uint64
		for _, f := range h.filters {
			chain = append(chain, f.id)
		}
		ids = append(ids, chain)
	}
	return ids
}

func slicesEqual(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestXZFilteredErrors: a damaged filtered stream fails with a clear
// error instead of returning wrong bytes.
func TestXZFilteredErrors(t *testing.T) {
	src := codectest.ExecutableBytes(t, 128<<10)
	good, err := xzfmt.WriteBCJ(src, 1<<20, nil, xzfmt.ByName("x86"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := parseXZ(good)
	if err != nil {
		t.Fatal(err)
	}
	hdrs, filtered, err := parseXZBlocks(good, info)
	if err != nil || !filtered {
		t.Fatalf("filtered %v, %v", filtered, err)
	}
	b, h := info.blocks[0], hdrs[0]
	check := b.offset + int((b.unpadded+3)&^3) - 8
	for _, tc := range []struct {
		name   string
		change func([]byte) []byte
		want   string
		target error
	}{
		{"check", func(p []byte) []byte { p[check] ^= 1; return p }, "check mismatch", ErrCorrupt},
		{"data", func(p []byte) []byte { p[b.offset+h.size+40] ^= 0x55; return p }, "xz block 0", ErrCorrupt},
		{"riscv", func(p []byte) []byte { return setFilter(p, b.offset, h, xzfmt.FilterRISCV) }, "filter 0xb not supported", ErrUnsupported},
		{"delta", func(p []byte) []byte { return setFilter(p, b.offset, h, xzfmt.FilterDelta) }, "filter 0x3 not supported", ErrUnsupported},
		{"lzma2 first", func(p []byte) []byte { return setFilter(p, b.offset, h, xzfmt.LZMA2FilterID) }, "malformed LZMA2 filter", ErrCorrupt},
	} {
		p := tc.change(bytes.Clone(good))
		_, err := Decompress(CompLZMA, p, 1<<20)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, tc.target) {
			t.Errorf("%s: %v, want %q (%v)", tc.name, err, tc.want, tc.target)
		}
	}
}

// setFilter replaces the first filter ID of the block header at off and
// fixes the header CRC, so that only the filter is wrong.
func setFilter(p []byte, off int, h xzBlockHeader, id byte) []byte {
	p[off+2] = id
	binary32(p[off+h.size-4:], crc32IEEE(p[off:off+h.size-4]))
	return p
}

func binary32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// TestReferenceBCJFixture: the data block of the reference image made with
// lzma:binary=x86 really has the x86 filter, and decodes.
func TestReferenceBCJFixture(t *testing.T) {
	data, err := os.ReadFile(sharedfixtures.File(t, "codecs", "ref-lzma-x86.dwarfs"))
	if err != nil {
		t.Fatal(err)
	}
	im, err := OpenImage(bytes.NewReader(data), int64(len(data)), Options{ImageOffset: -1})
	if err != nil {
		t.Fatal(err)
	}
	s, ok := im.Block(0)
	if !ok || s.Compression != CompLZMA {
		t.Fatalf("block 0: %+v", s)
	}
	raw, err := im.ReadRaw(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := xzFilterIDs(t, raw); len(got) != 1 || !slicesEqual(got[0], []uint64{xzfmt.FilterX86, xzfmt.LZMA2FilterID}) {
		t.Fatalf("filter chain %x, want x86 then LZMA2", got)
	}
	if err := im.VerifyFull(s); err != nil {
		t.Fatal(err)
	}
	out, err := im.ReadDecompressed(s)
	if err != nil || len(out) < 300<<10 {
		t.Fatalf("decoded %d bytes: %v", len(out), err)
	}
}

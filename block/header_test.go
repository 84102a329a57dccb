package block_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/godwarfs/godwarfs/block"
)

func TestParseHeader(t *testing.T) {
	h := make([]byte, block.HeaderSize)
	copy(h, "DWARFS\x02\x05")
	for i := 8; i < 0x28; i++ {
		h[i] = byte(i)
	}
	binary.LittleEndian.PutUint64(h[0x28:], 0x1122334455667788)
	binary.LittleEndian.PutUint32(h[0x30:], 7)
	binary.LittleEndian.PutUint16(h[0x34:], uint16(block.SectionIndex))
	binary.LittleEndian.PutUint16(h[0x36:], uint16(block.CompNone))
	binary.LittleEndian.PutUint64(h[0x38:], 24)

	s, err := block.ParseHeader(h, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if s.Number != 7 || s.Type != block.SectionIndex || s.Compression != block.CompNone ||
		s.HeaderOffset != 1000 || s.DataOffset != 1000+block.HeaderSize || s.Length != 24 ||
		s.XXH3 != 0x1122334455667788 || s.SHA512_256[0] != 8 || s.SHA512_256[31] != 0x27 {
		t.Errorf("parsed %+v", s)
	}

	bad := append([]byte(nil), h...)
	bad[0] = 'X'
	if _, err := block.ParseHeader(bad, 0); !errors.Is(err, block.ErrCorrupt) {
		t.Errorf("bad magic: %v, want ErrCorrupt", err)
	}
	bad = append([]byte(nil), h...)
	bad[6] = 3
	if _, err := block.ParseHeader(bad, 0); !errors.Is(err, block.ErrUnsupported) {
		t.Errorf("major version 3: %v, want ErrUnsupported", err)
	}
}

func TestIndexEntry(t *testing.T) {
	typ, off := block.IndexEntry(uint64(block.SectionMetadata)<<48 | 0x123456789a)
	if typ != block.SectionMetadata || off != 0x123456789a {
		t.Errorf("IndexEntry = %v, %#x", typ, off)
	}
}

package xzfmt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"hash/crc64"
	"slices"

	"github.com/ulikunitz/xz/lzma"
)

// HeaderMagic starts every xz stream.
var HeaderMagic = []byte{0xFD, '7', 'z', 'X', 'Z', 0x00}

// LZMA2FilterID is LZMA2's id in a filter chain.
const LZMA2FilterID = 0x21

// CRC64Table is the table of xz's CRC64 check.
var CRC64Table = crc64.MakeTable(crc64.ECMA)

// LZMA2Dict returns the dictionary size encoded by an LZMA2 property byte.
func LZMA2Dict(b byte) int64 {
	if b >= 40 {
		return 1<<32 - 1
	}
	return int64(2|(b&1)) << (b/2 + 11)
}

// SmallestDict is the smallest LZMA2 dictionary code not above cur that
// still covers n bytes.
func SmallestDict(cur byte, n int64) byte {
	need := max(n, 4096)
	for c := byte(0); c < cur; c++ {
		if LZMA2Dict(c) >= need {
			return c
		}
	}
	return cur
}

// LZMA2DictCode is the smallest LZMA2 dictionary code for n bytes.
func LZMA2DictCode(n int) byte {
	return SmallestDict(40, int64(n))
}

// WriteBCJ writes src as one .xz stream of one block whose filter chain
// is f then LZMA2, with a CRC64 check; the xz package writes only LZMA2.
func WriteBCJ(src []byte, dict int, props *lzma.Properties, f *Filter) ([]byte, error) {
	return WriteBlocks(src, 0, dict, props, f)
}

// WriteBlocks writes src as one .xz stream with a CRC64 check, cut into
// xz blocks of chunk bytes (the last may be shorter; chunk 0: one block),
// each compressed on its own with LZMA2, after the filter f when it is not
// nil (each block's filter starts at offset 0). The index at the end of
// the stream lets a reader find and decode only the blocks holding the
// bytes it wants. The dictionary of each block is at most its size.
func WriteBlocks(src []byte, chunk, dict int, props *lzma.Properties, f *Filter) ([]byte, error) {
	const checkCRC64 = 0x04
	appendCRC32 := func(b []byte, from int) []byte {
		return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b[from:]))
	}
	if chunk <= 0 || chunk > len(src) {
		chunk = max(len(src), 1)
	}
	out := append(slices.Clone(HeaderMagic), 0, checkCRC64)
	out = appendCRC32(out, 6)
	type record struct{ unpadded, size int }
	var records []record
	var body bytes.Buffer
	for pos := 0; pos < len(src); pos += chunk {
		part := src[pos:min(pos+chunk, len(src))]
		data := part
		if f != nil {
			data = slices.Clone(part)
			f.Encode(data, 0)
		}
		d := max(min(dict, len(part)), 4096)
		body.Reset()
		w, err := lzma.Writer2Config{Properties: props, DictCap: d}.NewWriter2(&body)
		if err != nil {
			return nil, fmt.Errorf("lzma2 writer: %w", err)
		}
		if _, err := w.Write(data); err != nil {
			return nil, fmt.Errorf("lzma2 write: %w", err)
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("lzma2 close: %w", err)
		}
		// Block header: its size, flags (number of filters, no sizes),
		// the BCJ filter without properties (start offset 0), LZMA2 with
		// its dictionary, zero padding to a multiple of four, CRC32.
		block := len(out)
		if f != nil {
			out = append(out, 0, 0x01, byte(f.ID), 0)
		} else {
			out = append(out, 0, 0x00)
		}
		out = append(out, LZMA2FilterID, 1, LZMA2DictCode(d))
		for (len(out)-block)%4 != 0 {
			out = append(out, 0)
		}
		out[block] = byte((len(out)-block+4)/4 - 1)
		out = appendCRC32(out, block)
		out = append(out, body.Bytes()...)
		records = append(records, record{len(out) - block + 8, len(part)})
		for (len(out)-block)%4 != 0 {
			out = append(out, 0)
		}
		out = binary.LittleEndian.AppendUint64(out, crc64.Checksum(part, CRC64Table))
	}

	// Index: the records, padding, CRC32.
	index := len(out)
	out = append(out, 0)
	out = binary.AppendUvarint(out, uint64(len(records)))
	for _, r := range records {
		out = binary.AppendUvarint(out, uint64(r.unpadded))
		out = binary.AppendUvarint(out, uint64(r.size))
	}
	for (len(out)-index)%4 != 0 {
		out = append(out, 0)
	}
	out = appendCRC32(out, index)

	// Footer: CRC32 over backward size and flags, then the magic.
	footer := len(out)
	out = binary.LittleEndian.AppendUint32(out, 0)
	out = binary.LittleEndian.AppendUint32(out, uint32((len(out)-4-index)/4-1))
	out = append(out, 0, checkCRC64)
	binary.LittleEndian.PutUint32(out[footer:], crc32.ChecksumIEEE(out[footer+4:]))
	return append(out, 'Y', 'Z'), nil
}

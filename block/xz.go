package block

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"hash/crc64"
	"math"

	"github.com/godwarfs/godwarfs/block/internal/lzma2"
	"github.com/godwarfs/godwarfs/block/internal/xzfmt"
)

// The xz container carries the uncompressed sizes in its index at the end
// of each stream; parsing it lets us check the size against the limit and
// shrink oversized dictionaries before decoding.

const xzStreamHeaderLen = 12

type xzBlock struct {
	offset       int // block header offset in src
	uncompressed int64
	unpadded     int64 // header, data and check, without the padding
	check        byte  // the stream's check type
}

type xzInfo struct {
	total  int64
	blocks []xzBlock
}

func xzVarint(b []byte, pos int) (uint64, int, error) {
	var v uint64
	for i := 0; i < 9; i++ {
		if pos+i >= len(b) {
			return 0, 0, corruptf("truncated xz varint")
		}
		c := b[pos+i]
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if i > 0 && c == 0 {
				return 0, 0, corruptf("non-minimal xz varint")
			}
			return v, pos + i + 1, nil
		}
	}
	return 0, 0, corruptf("xz varint too long")
}

// parseXZ walks the streams backwards from the end (footer → index → stream
// header), allowing stream padding, and sums the uncompressed sizes.
func parseXZ(src []byte) (xzInfo, error) {
	var info xzInfo
	end := len(src)
	var streams [][]xzBlock
	for end > 0 {
		for end >= 4 && allZero(src[end-4:end]) {
			end -= 4
		}
		if end == 0 {
			break
		}
		if end < 2*xzStreamHeaderLen {
			return info, corruptf("xz stream too short (%d bytes)", end)
		}
		foot := src[end-12 : end]
		indexSize, err := xzFooter(foot)
		if err != nil {
			return info, err
		}
		indexStart := int64(end-12) - indexSize
		if indexStart < xzStreamHeaderLen {
			return info, corruptf("xz index size %d exceeds stream", indexSize)
		}
		blocks, padded, total, err := xzIndex(src[indexStart:end-12], int64(len(src)))
		if err != nil {
			return info, err
		}
		if info.total += total; info.total > 1<<62 {
			return info, corruptf("xz uncompressed size overflow")
		}
		streamStart := indexStart - padded - xzStreamHeaderLen
		if streamStart < 0 {
			return info, corruptf("xz blocks exceed stream")
		}
		hdr := src[streamStart : streamStart+xzStreamHeaderLen]
		if err := xzStreamHeader(hdr, foot); err != nil {
			return info, err
		}
		for i := range blocks {
			blocks[i].offset += int(streamStart) + xzStreamHeaderLen
			blocks[i].check = hdr[7]
		}
		streams = append(streams, blocks)
		end = int(streamStart)
	}
	if len(streams) == 0 {
		return info, corruptf("empty xz payload")
	}
	for i := len(streams) - 1; i >= 0; i-- {
		info.blocks = append(info.blocks, streams[i]...)
	}
	return info, nil
}

// xzFooter checks a stream footer (its last 12 bytes) and returns the
// size of the index before it.
func xzFooter(foot []byte) (int64, error) {
	if foot[10] != 'Y' || foot[11] != 'Z' {
		return 0, corruptf("missing xz stream footer magic")
	}
	if crc32.ChecksumIEEE(foot[4:10]) != binary.LittleEndian.Uint32(foot[0:4]) {
		return 0, corruptf("xz stream footer crc mismatch")
	}
	return (int64(binary.LittleEndian.Uint32(foot[4:8])) + 1) * 4, nil
}

// xzIndex parses a stream's index (idx, CRC32 included). It returns the
// blocks it lists, with offsets relative to the first block, the padded
// size of the blocks together and their uncompressed size. No block may
// be longer than streamMax.
func xzIndex(idx []byte, streamMax int64) (blocks []xzBlock, padded, total int64, err error) {
	if len(idx) < 8 {
		return nil, 0, 0, corruptf("xz index of %d bytes", len(idx))
	}
	if idx[0] != 0 {
		return nil, 0, 0, corruptf("bad xz index indicator")
	}
	if crc32.ChecksumIEEE(idx[:len(idx)-4]) != binary.LittleEndian.Uint32(idx[len(idx)-4:]) {
		return nil, 0, 0, corruptf("xz index crc mismatch")
	}
	count, pos, err := xzVarint(idx, 1)
	if err != nil {
		return nil, 0, 0, err
	}
	if count > uint64(len(idx))/2 { // each record needs at least 2 bytes
		return nil, 0, 0, corruptf("xz index claims %d records", count)
	}
	blocks = make([]xzBlock, 0, count)
	for i := uint64(0); i < count; i++ {
		var unpadded, usize uint64
		if unpadded, pos, err = xzVarint(idx, pos); err != nil {
			return nil, 0, 0, err
		}
		if usize, pos, err = xzVarint(idx, pos); err != nil {
			return nil, 0, 0, err
		}
		if unpadded < 5 || unpadded > uint64(streamMax) || usize > 1<<62 {
			return nil, 0, 0, corruptf("bad xz index record %d", i)
		}
		blocks = append(blocks, xzBlock{offset: int(padded), uncompressed: int64(usize), unpadded: int64(unpadded)})
		if padded += (int64(unpadded) + 3) &^ 3; padded > streamMax {
			return nil, 0, 0, corruptf("xz blocks exceed stream")
		}
		if total += int64(usize); total > 1<<62 {
			return nil, 0, 0, corruptf("xz uncompressed size overflow")
		}
	}
	for pos%4 != 0 {
		if pos >= len(idx)-4 || idx[pos] != 0 {
			return nil, 0, 0, corruptf("bad xz index padding")
		}
		pos++
	}
	if pos != len(idx)-4 {
		return nil, 0, 0, corruptf("xz index size mismatch")
	}
	return blocks, padded, total, nil
}

// xzStreamHeader checks a stream header against its footer.
func xzStreamHeader(hdr, foot []byte) error {
	if string(hdr[:6]) != string(xzfmt.HeaderMagic) {
		return corruptf("missing xz stream header magic")
	}
	if hdr[6] != foot[8] || hdr[7] != foot[9] {
		return corruptf("xz stream header and footer flags differ")
	}
	if crc32.ChecksumIEEE(hdr[6:8]) != binary.LittleEndian.Uint32(hdr[8:12]) {
		return corruptf("xz stream header crc mismatch")
	}
	if hdr[6] != 0 || hdr[7]&0xF0 != 0 {
		return corruptf("xz stream flags reserved bits set")
	}
	return nil
}

// xzFilter is one entry of a block's filter chain.
type xzFilter struct {
	id    uint64
	props []byte
}

// xzBlockHeader is a parsed xz block header.
type xzBlockHeader struct {
	size         int   // header length in bytes
	compressed   int64 // -1 when the header does not say
	uncompressed int64 // -1 when the header does not say
	filters      []xzFilter
	dictAt       int // offset in src of the LZMA2 dictionary byte
}

// parseXZBlockHeader parses and checks the header of block bi. The chain
// must end in LZMA2; the filters before it must be BCJ filters this
// package can undo.
func parseXZBlockHeader(src []byte, b xzBlock, bi int) (xzBlockHeader, error) {
	h := xzBlockHeader{compressed: -1, uncompressed: -1}
	off := b.offset
	if off >= len(src) || src[off] == 0 {
		return h, corruptf("xz block %d: bad header", bi)
	}
	h.size = (int(src[off]) + 1) * 4
	if off+h.size > len(src) || int64(h.size) >= b.unpadded {
		return h, corruptf("xz block %d: truncated header", bi)
	}
	hb := src[off : off+h.size]
	if crc32.ChecksumIEEE(hb[:h.size-4]) != binary.LittleEndian.Uint32(hb[h.size-4:]) {
		return h, corruptf("xz block %d: header crc mismatch", bi)
	}
	end := h.size - 4
	flags := hb[1]
	if flags&0x3c != 0 {
		return h, corruptf("xz block %d: reserved flags set", bi)
	}
	pos := 2
	for _, f := range []struct {
		bit byte
		dst *int64
	}{{0x40, &h.compressed}, {0x80, &h.uncompressed}} {
		if flags&f.bit == 0 {
			continue
		}
		v, next, err := xzVarint(hb[:end], pos)
		if err != nil {
			return h, err
		}
		if v > 1<<62 {
			return h, corruptf("xz block %d: size out of range", bi)
		}
		*f.dst, pos = int64(v), next
	}
	if h.compressed == 0 {
		return h, corruptf("xz block %d: compressed size 0", bi)
	}
	nf := int(flags&3) + 1
	for fi := 0; fi < nf; fi++ {
		id, next, err := xzVarint(hb[:end], pos)
		if err != nil {
			return h, err
		}
		psize, next, err := xzVarint(hb[:end], next)
		if err != nil {
			return h, err
		}
		if psize > uint64(end-next) {
			return h, corruptf("xz block %d: filter properties overflow header", bi)
		}
		props := hb[next : next+int(psize)]
		last := fi == nf-1
		switch {
		case id == xzfmt.LZMA2FilterID:
			if !last || psize != 1 || props[0] > 40 {
				return h, corruptf("xz block %d: malformed LZMA2 filter", bi)
			}
			h.dictAt = off + next
		case last:
			return h, corruptf("xz block %d: filter chain does not end in LZMA2", bi)
		case xzfmt.ByID(id) != nil:
			if psize != 0 && psize != 4 {
				return h, corruptf("xz block %d: BCJ filter properties of %d bytes", bi, psize)
			}
		default:
			return h, fmt.Errorf("xz block %d: filter 0x%x not supported: %w", bi, id, ErrUnsupported)
		}
		h.filters = append(h.filters, xzFilter{id: id, props: props})
		pos = next + int(psize)
	}
	if !allZero(hb[pos:end]) {
		return h, corruptf("xz block %d: header padding not zero", bi)
	}
	return h, nil
}

// parseXZBlocks parses every block header and says whether any block has
// filters besides LZMA2.
func parseXZBlocks(src []byte, info xzInfo) ([]xzBlockHeader, bool, error) {
	hdrs := make([]xzBlockHeader, len(info.blocks))
	filtered := false
	for bi, b := range info.blocks {
		h, err := parseXZBlockHeader(src, b, bi)
		if err != nil {
			return nil, false, err
		}
		hdrs[bi] = h
		filtered = filtered || len(h.filters) > 1
	}
	return hdrs, filtered, nil
}

// xzCheckSize is the size of a check type's field, for the types this
// package verifies: none, CRC32, CRC64 and SHA-256.
func xzCheckSize(check byte) (int, error) {
	switch check {
	case 0x00:
		return 0, nil
	case 0x01:
		return 4, nil
	case 0x04:
		return 8, nil
	case 0x0A:
		return 32, nil
	}
	return 0, fmt.Errorf("xz check type 0x%x not supported: %w", check, ErrUnsupported)
}

// xzCheckMatches reports whether sum is the check of data.
func xzCheckMatches(check byte, data, sum []byte) bool {
	switch check {
	case 0x01:
		return binary.LittleEndian.Uint32(sum) == crc32.ChecksumIEEE(data)
	case 0x04:
		return binary.LittleEndian.Uint64(sum) == crc64.Checksum(data, xzfmt.CRC64Table)
	case 0x0A:
		s := sha256.Sum256(data)
		return bytes.Equal(sum, s[:])
	}
	return true
}

// decodeXZBlocks decodes the blocks of an xz payload one after the
// other, each with its filters undone and its sizes and check verified
// (decodeXZBlock), into dst when it has room for all of them: each block
// is then decoded in place, after the one before. The sum of the blocks'
// sizes is already checked against the caller's limit.
func decodeXZBlocks(src []byte, info xzInfo, hdrs []xzBlockHeader, dst []byte) ([]byte, error) {
	out := dst[:0]
	if int64(cap(dst)) < info.total {
		out = nil // new memory, grown as the blocks decode
	}
	for bi, b := range info.blocks {
		room := out[len(out):cap(out)]
		data, err := decodeXZBlock(src, b, hdrs[bi], bi, room)
		if err != nil {
			return nil, err
		}
		switch {
		case int64(cap(room)) >= b.uncompressed:
			out = out[:len(out)+len(data)] // decoded in place
		case out == nil:
			out = data
		default:
			out = append(out, data...)
		}
	}
	if out == nil {
		out = []byte{}
	}
	return out, nil
}

// decodeXZBlock decodes xz block bi, whose header h is parsed, into dst
// when it has room for it (else into new memory), undoing its filters and
// verifying its sizes and check.
func decodeXZBlock(src []byte, b xzBlock, h xzBlockHeader, bi int, dst []byte) ([]byte, error) {
	csize, err := xzCheckSize(b.check)
	if err != nil {
		return nil, err
	}
	dataStart, dataEnd := b.offset+h.size, b.offset+int(b.unpadded)-csize
	if dataEnd <= dataStart {
		return nil, corruptf("xz block %d: no room for data", bi)
	}
	if h.compressed >= 0 && h.compressed != int64(dataEnd-dataStart) {
		return nil, corruptf("xz block %d: compressed size %d, header says %d", bi, dataEnd-dataStart, h.compressed)
	}
	if h.uncompressed >= 0 && h.uncompressed != b.uncompressed {
		return nil, corruptf("xz block %d: index and header sizes differ", bi)
	}
	// The padding to a multiple of four sits between data and check.
	checkAt := b.offset + int((b.unpadded+3)&^3) - csize
	if checkAt+csize > len(src) || !allZero(src[dataEnd:checkAt]) {
		return nil, corruptf("xz block %d: bad padding", bi)
	}
	if b.uncompressed > math.MaxInt {
		return nil, corruptf("xz block %d: %d bytes do not fit in memory", bi, b.uncompressed)
	}
	dict := min(xzfmt.LZMA2Dict(xzfmt.SmallestDict(src[h.dictAt], b.uncompressed)), math.MaxInt)
	data, n, err := lzma2.Decode(dst, src[dataStart:dataEnd], int(dict), int(b.uncompressed))
	if err != nil {
		return nil, fmt.Errorf("xz block %d: %w (%w)", bi, err, ErrCorrupt)
	}
	if n != dataEnd-dataStart {
		return nil, corruptf("xz block %d: %d bytes after the LZMA2 end marker", bi, dataEnd-dataStart-n)
	}
	for fi := len(h.filters) - 2; fi >= 0; fi-- {
		f := h.filters[fi]
		var start uint32
		if len(f.props) == 4 {
			start = binary.LittleEndian.Uint32(f.props)
		}
		xzfmt.ByID(f.id).Decode(data, start)
	}
	if !xzCheckMatches(b.check, data, src[checkAt:checkAt+csize]) {
		return nil, corruptf("xz block %d: check mismatch", bi)
	}
	return data, nil
}

package block

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// The xz container carries the uncompressed sizes in its index at the end
// of each stream; parsing it lets us check the size against the limit and
// shrink oversized dictionaries before decoding.

var xzHeaderMagic = []byte{0xFD, '7', 'z', 'X', 'Z', 0x00}

const (
	xzStreamHeaderLen = 12
	xzLZMA2FilterID   = 0x21
)

type xzBlock struct {
	offset       int // block header offset in src
	uncompressed int64
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
		if foot[10] != 'Y' || foot[11] != 'Z' {
			return info, corruptf("missing xz stream footer magic")
		}
		if crc32.ChecksumIEEE(foot[4:10]) != binary.LittleEndian.Uint32(foot[0:4]) {
			return info, corruptf("xz stream footer crc mismatch")
		}
		indexSize := (int64(binary.LittleEndian.Uint32(foot[4:8])) + 1) * 4
		indexStart := int64(end-12) - indexSize
		if indexStart < xzStreamHeaderLen {
			return info, corruptf("xz index size %d exceeds stream", indexSize)
		}
		idx := src[indexStart : end-12]
		if idx[0] != 0 {
			return info, corruptf("bad xz index indicator")
		}
		if crc32.ChecksumIEEE(idx[:len(idx)-4]) != binary.LittleEndian.Uint32(idx[len(idx)-4:]) {
			return info, corruptf("xz index crc mismatch")
		}
		count, pos, err := xzVarint(idx, 1)
		if err != nil {
			return info, err
		}
		if count > uint64(len(idx))/2 { // each record needs at least 2 bytes
			return info, corruptf("xz index claims %d records", count)
		}
		blocks := make([]xzBlock, 0, count)
		var padded int64
		for i := uint64(0); i < count; i++ {
			var unpadded, usize uint64
			if unpadded, pos, err = xzVarint(idx, pos); err != nil {
				return info, err
			}
			if usize, pos, err = xzVarint(idx, pos); err != nil {
				return info, err
			}
			if unpadded < 5 || unpadded > uint64(len(src)) || usize > 1<<62 {
				return info, corruptf("bad xz index record %d", i)
			}
			blocks = append(blocks, xzBlock{offset: int(padded), uncompressed: int64(usize)})
			padded += (int64(unpadded) + 3) &^ 3
			if info.total += int64(usize); info.total > 1<<62 {
				return info, corruptf("xz uncompressed size overflow")
			}
		}
		for pos%4 != 0 {
			if pos >= len(idx)-4 || idx[pos] != 0 {
				return info, corruptf("bad xz index padding")
			}
			pos++
		}
		if pos != len(idx)-4 {
			return info, corruptf("xz index size mismatch")
		}
		streamStart := indexStart - padded - xzStreamHeaderLen
		if streamStart < 0 {
			return info, corruptf("xz blocks exceed stream")
		}
		hdr := src[streamStart : streamStart+xzStreamHeaderLen]
		if string(hdr[:6]) != string(xzHeaderMagic) {
			return info, corruptf("missing xz stream header magic")
		}
		if hdr[6] != foot[8] || hdr[7] != foot[9] {
			return info, corruptf("xz stream header and footer flags differ")
		}
		if crc32.ChecksumIEEE(hdr[6:8]) != binary.LittleEndian.Uint32(hdr[8:12]) {
			return info, corruptf("xz stream header crc mismatch")
		}
		for i := range blocks {
			blocks[i].offset += int(streamStart) + xzStreamHeaderLen
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

// lzma2Dict returns the dictionary size encoded by an LZMA2 property byte.
func lzma2Dict(b byte) int64 {
	if b >= 40 {
		return 1<<32 - 1
	}
	return int64(2|(b&1)) << (b/2 + 11)
}

// clampXZDict returns src, or a patched copy in which every LZMA2 dictionary
// larger than its block's uncompressed size is reduced to fit. The Go xz
// decoder allocates the declared dictionary eagerly, and mkdwarfs' presets
// declare up to 64 MiB even for tiny sections; no match can reach further
// back than the block's own output, so decoding is unaffected. The block
// header CRC is recomputed. Non-LZMA2 filters (BCJ, delta) are refused.
func clampXZDict(src []byte, info xzInfo) ([]byte, error) {
	out := src
	for bi, b := range info.blocks {
		off := b.offset
		if off >= len(src) || src[off] == 0 {
			return nil, corruptf("xz block %d: bad header", bi)
		}
		hlen := (int(src[off]) + 1) * 4
		if off+hlen > len(src) {
			return nil, corruptf("xz block %d: truncated header", bi)
		}
		h := src[off : off+hlen]
		if crc32.ChecksumIEEE(h[:hlen-4]) != binary.LittleEndian.Uint32(h[hlen-4:]) {
			return nil, corruptf("xz block %d: header crc mismatch", bi)
		}
		flags := h[1]
		if flags&0x3c != 0 {
			return nil, corruptf("xz block %d: reserved flags set", bi)
		}
		pos := 2
		var err error
		if flags&0x40 != 0 {
			if _, pos, err = xzVarint(h, pos); err != nil {
				return nil, err
			}
		}
		if flags&0x80 != 0 {
			if _, pos, err = xzVarint(h, pos); err != nil {
				return nil, err
			}
		}
		nf := int(flags&3) + 1
		for fi := 0; fi < nf; fi++ {
			var id, psize uint64
			if id, pos, err = xzVarint(h, pos); err != nil {
				return nil, err
			}
			if psize, pos, err = xzVarint(h, pos); err != nil {
				return nil, err
			}
			if psize > uint64(hlen-4-pos) {
				return nil, corruptf("xz block %d: filter properties overflow header", bi)
			}
			if id != xzLZMA2FilterID {
				return nil, fmt.Errorf("xz filter 0x%x (e.g. BCJ from lzma:binary=...) not supported: %w", id, ErrUnsupported)
			}
			if fi != nf-1 || psize != 1 {
				return nil, corruptf("xz block %d: malformed LZMA2 filter", bi)
			}
			cur := h[pos]
			need := max(b.uncompressed, 4096)
			nb := cur
			for c := byte(0); c < cur; c++ {
				if lzma2Dict(c) >= need {
					nb = c
					break
				}
			}
			if nb != cur {
				if &out[0] == &src[0] {
					out = append([]byte(nil), src...)
				}
				out[off+pos] = nb
				binary.LittleEndian.PutUint32(out[off+hlen-4:], crc32.ChecksumIEEE(out[off:off+hlen-4]))
			}
			pos += int(psize)
		}
	}
	return out, nil
}

// Package xzfmt holds the parts of the xz container that both the decoder
// (package block) and the encoders (package block/encode) need: the BCJ
// filters, in both directions, LZMA2 dictionary codes, and a writer of
// one-block streams with a BCJ filter before LZMA2.
package xzfmt

import (
	"encoding/binary"
	"slices"
)

// BCJ ("branch/call/jump") filters of the xz format. Each rewrites the
// relative target of one kind of call or branch instruction into an
// absolute address, so that calls to the same function from different
// places become equal bytes that LZMA2 can match. Encoding adds the
// instruction's position to the stored offset, decoding subtracts it; both
// walk the data the same way, so decoding exactly undoes encoding. The
// position is that of buf[0] in the filtered stream (the filter's start
// offset) plus the index into buf, modulo 2^32.
//
// Bytes too close to the end to hold a whole instruction are left as they
// are, which is what liblzma does at the end of a block.

// Filter is one filter of an xz filter chain that this package can
// apply in both directions.
type Filter struct {
	ID   uint64
	Name string // the mkdwarfs lzma:binary= name
	// Align is the instruction alignment; a start offset that is not a
	// multiple of it makes encoding lossy (xz tools do not write one).
	Align uint32
	code  func(buf []byte, start uint32, encode bool)
}

// Encode filters buf in place; start is the position of buf[0] in the
// filtered stream.
func (f *Filter) Encode(buf []byte, start uint32) { f.code(buf, start, true) }

// Decode undoes Encode in place.
func (f *Filter) Decode(buf []byte, start uint32) { f.code(buf, start, false) }

// Filter IDs from the xz file format.
const (
	FilterDelta    = 0x03
	FilterX86      = 0x04
	FilterPowerPC  = 0x05
	FilterIA64     = 0x06
	FilterARM      = 0x07
	FilterARMThumb = 0x08
	FilterSPARC    = 0x09
	FilterARM64    = 0x0A
	FilterRISCV    = 0x0B
)

// Filters lists the filters by ID. The first six are the ones the
// reference mkdwarfs writes for lzma:binary=...; arm64 is decoded too, as
// newer xz tools write it.
var Filters = []Filter{
	{FilterX86, "x86", 1, bcjX86},
	{FilterPowerPC, "powerpc", 4, bcjPowerPC},
	{FilterIA64, "ia64", 16, bcjIA64},
	{FilterARM, "arm", 4, bcjARM},
	{FilterARMThumb, "armthumb", 2, bcjARMThumb},
	{FilterSPARC, "sparc", 4, bcjSPARC},
	{FilterARM64, "arm64", 4, bcjARM64},
}

// Writable are the lzma:binary= names, as the reference accepts them.
var Writable = []string{"arm", "armthumb", "ia64", "powerpc", "sparc", "x86"}

// ByID returns the filter with the xz filter ID id, or nil.
func ByID(id uint64) *Filter {
	for i := range Filters {
		if Filters[i].ID == id {
			return &Filters[i]
		}
	}
	return nil
}

// ByName returns the filter of a Writable name, or nil.
func ByName(name string) *Filter {
	if !slices.Contains(Writable, name) {
		return nil
	}
	for i := range Filters {
		if Filters[i].Name == name {
			return &Filters[i]
		}
	}
	return nil
}

// relocate turns a relative target into an absolute one (encode) or back.
func relocate(v, pos uint32, encode bool) uint32 {
	if encode {
		return v + pos
	}
	return v - pos
}

// x86 displacement bytes that look like the high byte of a near target:
// 0x00 for forward, 0xFF for backward jumps within 16 MiB.
func x86Near(b byte) bool { return b == 0x00 || b == 0xFF }

// bcjX86 converts the 32-bit displacement of CALL (E8) and JMP (E9).
// Because E8/E9 bytes also occur inside other instructions, the filter
// keeps a small history of opcode bytes it recently saw but did not
// convert, and skips or re-checks candidates that overlap them.
func bcjX86(buf []byte, start uint32, encode bool) {
	// hist remembers unconverted E8/E9 bytes among the last few positions
	// (the low bits, shifted along as the scan moves) and whether one was
	// followed by a near-looking byte (0x10, which rules out the next
	// candidates). allowed says for which patterns a candidate is still
	// converted; recheck which of its bytes an earlier opcode overlaps.
	allowed := [8]bool{true, true, true, false, true, false, false, false}
	recheck := [8]uint{0, 1, 2, 2, 3, 3, 3, 3}
	var hist uint32
	last := -5 // position of the previous E8/E9 byte
	for i := 0; i+5 <= len(buf); {
		if op := buf[i]; op != 0xE8 && op != 0xE9 {
			i++
			continue
		}
		if gap := i - last; gap > 5 {
			hist = 0
		} else {
			for ; gap > 0; gap-- {
				hist = (hist & 0x77) << 1
			}
		}
		last = i
		high := buf[i+4]
		if !x86Near(high) || hist>>1 >= 0x10 || !allowed[(hist>>1)&7] {
			i++
			hist |= 1
			if x86Near(high) {
				hist |= 0x10
			}
			continue
		}
		v := binary.LittleEndian.Uint32(buf[i+1:])
		pos := start + uint32(i) + 5
		var t uint32
		for {
			t = relocate(v, pos, encode)
			if hist == 0 {
				break
			}
			// A converted byte that an earlier unconverted opcode would
			// see as its own displacement high byte must not look near;
			// if it does, flip the bits below it and convert again.
			shift := 24 - 8*recheck[hist>>1]
			if !x86Near(byte(t >> shift)) {
				break
			}
			v = t ^ (1<<(shift+8) - 1)
		}
		buf[i+1], buf[i+2], buf[i+3] = byte(t), byte(t>>8), byte(t>>16)
		// The high byte only records the sign (bit 24 of the target).
		buf[i+4] = 0
		if t&(1<<24) != 0 {
			buf[i+4] = 0xFF
		}
		i += 5
		hist = 0
	}
}

// bcjARM converts BL (branch with link, condition "always") in ARM code:
// a 24-bit word offset relative to the instruction plus 8.
func bcjARM(buf []byte, start uint32, encode bool) {
	for i := 0; i+4 <= len(buf); i += 4 {
		if buf[i+3] != 0xEB {
			continue
		}
		off := (uint32(buf[i]) | uint32(buf[i+1])<<8 | uint32(buf[i+2])<<16) << 2
		off = relocate(off, start+uint32(i)+8, encode) >> 2
		buf[i], buf[i+1], buf[i+2] = byte(off), byte(off>>8), byte(off>>16)
	}
}

// bcjARMThumb converts the Thumb BL pair of 16-bit halves (11110 hi,
// 11111 lo): a 22-bit halfword offset relative to the instruction plus 4.
func bcjARMThumb(buf []byte, start uint32, encode bool) {
	for i := 0; i+4 <= len(buf); i += 2 {
		if buf[i+1]&0xF8 != 0xF0 || buf[i+3]&0xF8 != 0xF8 {
			continue
		}
		off := uint32(buf[i+1]&7)<<19 | uint32(buf[i])<<11 | uint32(buf[i+3]&7)<<8 | uint32(buf[i+2])
		off = relocate(off<<1, start+uint32(i)+4, encode) >> 1
		buf[i] = byte(off >> 11)
		buf[i+1] = 0xF0 | byte(off>>19)&7
		buf[i+2] = byte(off)
		buf[i+3] = 0xF8 | byte(off>>8)&7
		i += 2 // the pair is consumed
	}
}

// bcjPowerPC converts big-endian "bl" (opcode 18, AA=0, LK=1).
func bcjPowerPC(buf []byte, start uint32, encode bool) {
	for i := 0; i+4 <= len(buf); i += 4 {
		if buf[i]>>2 != 0x12 || buf[i+3]&3 != 1 {
			continue
		}
		off := binary.BigEndian.Uint32(buf[i:]) & 0x03FFFFFC
		off = relocate(off, start+uint32(i), encode)
		buf[i] = 0x48 | byte(off>>24)&3
		buf[i+1] = byte(off >> 16)
		buf[i+2] = byte(off >> 8)
		buf[i+3] = buf[i+3]&3 | byte(off)
	}
}

// bcjSPARC converts "call" whose 30-bit word displacement fits in 23 bits
// (top bits all zero or all one).
func bcjSPARC(buf []byte, start uint32, encode bool) {
	for i := 0; i+4 <= len(buf); i += 4 {
		b0, b1 := buf[i], buf[i+1]&0xC0
		if !(b0 == 0x40 && b1 == 0x00) && !(b0 == 0x7F && b1 == 0xC0) {
			continue
		}
		off := binary.BigEndian.Uint32(buf[i:]) << 2
		off = relocate(off, start+uint32(i), encode) >> 2
		sign := (off >> 22) & 1
		off = (-sign<<22)&0x3FFFFFFF | off&0x3FFFFF | 0x40000000
		binary.BigEndian.PutUint32(buf[i:], off)
	}
}

// ia64BranchSlots says, per bundle template, which of the three 41-bit
// instruction slots are branch-unit slots (bit s for slot s).
var ia64BranchSlots = [32]byte{
	0x10: 4, 0x11: 4, 0x12: 6, 0x13: 6, 0x16: 7, 0x17: 7,
	0x18: 4, 0x19: 4, 0x1C: 4, 0x1D: 4,
}

// bcjIA64 converts IP-relative branches (opcode 5, btype 0) in 128-bit
// Itanium bundles: a 21-bit bundle offset split over imm20b and sign.
func bcjIA64(buf []byte, start uint32, encode bool) {
	for i := 0; i+16 <= len(buf); i += 16 {
		slots := ia64BranchSlots[buf[i]&0x1F]
		for s := 0; s < 3; s++ {
			if slots>>s&1 == 0 {
				continue
			}
			bit := 5 + 41*s // slot s starts after the 5-bit template
			at, shift := i+bit/8, uint(bit%8)
			var raw uint64 // the 6 bytes that hold the slot
			for j := 0; j < 6; j++ {
				raw |= uint64(buf[at+j]) << (8 * j)
			}
			ins := raw >> shift
			if (ins>>37)&0xF != 5 || (ins>>9)&7 != 0 {
				continue
			}
			off := uint32(ins>>13)&0xFFFFF | uint32(ins>>36)&1<<20
			off = relocate(off<<4, start+uint32(i), encode) >> 4
			ins &^= uint64(0x8FFFFF) << 13
			ins |= uint64(off&0xFFFFF) << 13
			ins |= uint64(off&0x100000) << (36 - 20)
			raw = raw&(1<<shift-1) | ins<<shift
			for j := 0; j < 6; j++ {
				buf[at+j] = byte(raw >> (8 * j))
			}
		}
	}
}

// bcjARM64 converts BL (26-bit word offset) and ADRP (21-bit page offset,
// only targets within +-512 MiB, so that other data is rarely touched).
func bcjARM64(buf []byte, start uint32, encode bool) {
	for i := 0; i+4 <= len(buf); i += 4 {
		ins := binary.LittleEndian.Uint32(buf[i:])
		pos := start + uint32(i)
		switch {
		case ins>>26 == 0x25: // BL
			ins = 0x94000000 | relocate(ins, pos>>2, encode)&0x03FFFFFF
		case ins&0x9F000000 == 0x90000000: // ADRP
			page := (ins>>29)&3 | (ins>>3)&0x001FFFFC
			if (page+0x00020000)&0x001C0000 != 0 {
				continue
			}
			page = relocate(page, pos>>12, encode)
			ins &= 0x9000001F
			ins |= (page & 3) << 29
			ins |= (page & 0x0003FFFC) << 3
			ins |= -(page & 0x00020000) & 0x00E00000
		default:
			continue
		}
		binary.LittleEndian.PutUint32(buf[i:], ins)
	}
}

package formats

import (
	"encoding/binary"
	"io"
	"sort"
)

// binHeader is how much of a file the binary detector looks at first;
// smaller files are not examined.
const binHeader = 64

// DetectBinary recognises ELF, PE and Mach-O (thin or fat) executables
// and libraries, tried in that order. An ELF, PE or thin Mach-O file is
// one part; a fat Mach-O file is split into its architectures' images
// (binary/macho-section) and what lies between them (binary/macho-header).
// The subcategory key is made of the header fields the reference uses
// (class, byte order, OS ABI, type and machine for ELF; optional header
// magic, characteristics and machine for PE; byte order, width, file type,
// CPU subtype and type for Mach-O); these categories have no metadata.
func DetectBinary(r io.ReaderAt, size int64, opt Options) []Part {
	if size < binHeader {
		return nil
	}
	f := &file{r: r, size: size, opt: &opt}
	h, ok := f.readFull(0, binHeader)
	if !ok {
		return nil
	}
	if p := checkELF(f, h); p != nil {
		return p
	}
	if p := checkPE(f, h); p != nil {
		return p
	}
	if k, ok := machoKey(h); ok {
		return []Part{binPart(MachOSection, size, k)}
	}
	return checkFat(f, h)
}

func binPart(cat string, size int64, key uint64) Part {
	return Part{Category: cat, Size: size, HasSub: true, Sub: Sub{Key: [6]uint64{key}}}
}

func checkELF(f *file, h []byte) []Part {
	if h[0] != 0x7f || h[1] != 'E' || h[2] != 'L' || h[3] != 'F' || h[6] != 1 {
		return nil
	}
	var o binary.ByteOrder = binary.LittleEndian
	if h[5] == 2 {
		o = binary.BigEndian
	}
	key := uint64(h[4])<<56 | uint64(h[5])<<48 | uint64(h[7])<<40 | uint64(h[8])<<32 |
		uint64(o.Uint16(h[16:]))<<16 | uint64(o.Uint16(h[18:]))
	return []Part{binPart(BinaryELF, f.size, key)}
}

func checkPE(f *file, h []byte) []Part {
	if h[0] != 'M' || h[1] != 'Z' {
		return nil
	}
	// The COFF header and the optional header's magic: 26 bytes at
	// e_lfanew.
	lfanew := int64(le.Uint32(h[60:]))
	pe, ok := f.readFull(lfanew, 26)
	if !ok || string(pe[:4]) != "PE\x00\x00" {
		return nil
	}
	key := uint64(le.Uint16(pe[24:]))<<32 | uint64(le.Uint16(pe[22:]))<<16 | uint64(le.Uint16(pe[4:]))
	return []Part{binPart(BinaryPE, f.size, key)}
}

// Mach-O magic numbers as read big-endian.
const (
	mhMagic    = 0xfeedface
	mhMagic64  = 0xfeedfacf
	mhCigam    = 0xcefaedfe
	mhCigam64  = 0xcffaedfe
	fatMagic   = 0xcafebabe
	fatMagic64 = 0xcafebabf
)

// machoKey returns the subcategory key of a thin Mach-O header (16 bytes).
func machoKey(h []byte) (uint64, bool) {
	magic := be.Uint32(h)
	var o binary.ByteOrder
	switch magic {
	case mhMagic, mhMagic64:
		o = binary.BigEndian
	case mhCigam, mhCigam64:
		o = binary.LittleEndian
	default:
		return 0, false
	}
	var k uint64
	if o == binary.BigEndian {
		k |= 1 << 63
	}
	if magic == mhMagic64 || magic == mhCigam64 {
		k |= 1 << 62
	}
	const mask = 1<<20 - 1
	k |= (uint64(o.Uint32(h[12:]))&mask)<<40 | (uint64(o.Uint32(h[8:]))&mask)<<20 | uint64(o.Uint32(h[4:]))&mask
	return k, true
}

func checkFat(f *file, h []byte) []Part {
	magic, count := be.Uint32(h), int64(be.Uint32(h[4:]))
	if magic != fatMagic && magic != fatMagic64 {
		return nil
	}
	entry := int64(20)
	if magic == fatMagic64 {
		entry = 32
	}
	if count > (f.size-8)/entry {
		return nil
	}
	tab, ok := f.readFull(8, count*entry)
	if !ok {
		return nil
	}
	type arch struct{ off, size uint64 }
	archs := make([]arch, count)
	for i := range archs {
		e := tab[int64(i)*entry:]
		if entry == 20 {
			archs[i] = arch{uint64(be.Uint32(e[8:])), uint64(be.Uint32(e[12:]))}
		} else {
			archs[i] = arch{be.Uint64(e[8:]), be.Uint64(e[16:])}
		}
	}
	sort.SliceStable(archs, func(i, j int) bool { return archs[i].off < archs[j].off })
	var parts []Part
	end := uint64(f.size)
	pos := uint64(0)
	for _, a := range archs {
		if pos > a.off {
			return nil
		}
		if pos < a.off {
			parts = append(parts, Part{Category: MachOHeader, Size: int64(a.off - pos)})
			pos = a.off
		}
		if pos > end || a.size > end-pos {
			return nil
		}
		pos += a.size
		th, ok := f.readFull(int64(a.off), 16)
		if !ok {
			return nil
		}
		k, ok := machoKey(th)
		if !ok {
			return nil
		}
		parts = append(parts, binPart(MachOSection, int64(a.size), k))
	}
	if pos < end {
		parts = append(parts, Part{Category: MachOHeader, Size: int64(end - pos)})
	}
	return parts
}

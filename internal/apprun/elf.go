//go:build linux && !386 && !arm

package apprun

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// elfEnd returns where the ELF file in r ends: past its section header
// table, its program segments and its sections, whichever is last. What
// follows is the appended image. The runtime's own code holds the DwarFS
// magic, so the image is located from the ELF structure rather than by
// searching for the magic.
func elfEnd(r io.ReaderAt) (int64, error) {
	var id [64]byte
	if _, err := r.ReadAt(id[:], 0); err != nil {
		return 0, fmt.Errorf("reading the ELF header: %w", err)
	}
	if string(id[:4]) != "\x7fELF" {
		return 0, errors.New("not an ELF file")
	}
	var bo binary.ByteOrder
	switch id[5] {
	case 1:
		bo = binary.LittleEndian
	case 2:
		bo = binary.BigEndian
	default:
		return 0, fmt.Errorf("ELF data encoding %d", id[5])
	}
	// Header fields by class: offsets and sizes of the program and
	// section header tables, and the layout of one entry of each.
	var phoff, shoff uint64
	var phentsize, phnum, shentsize, shnum uint16
	switch id[4] {
	case 1: // ELF32
		phoff, shoff = uint64(bo.Uint32(id[28:])), uint64(bo.Uint32(id[32:]))
		phentsize, phnum = bo.Uint16(id[42:]), bo.Uint16(id[44:])
		shentsize, shnum = bo.Uint16(id[46:]), bo.Uint16(id[48:])
	case 2: // ELF64
		phoff, shoff = bo.Uint64(id[32:]), bo.Uint64(id[40:])
		phentsize, phnum = bo.Uint16(id[54:]), bo.Uint16(id[56:])
		shentsize, shnum = bo.Uint16(id[58:]), bo.Uint16(id[60:])
	default:
		return 0, fmt.Errorf("ELF class %d", id[4])
	}
	elf64 := id[4] == 2
	end := shoff + uint64(shentsize)*uint64(shnum)
	ent := make([]byte, 64)
	// Program headers: p_offset and p_filesz.
	for i := range uint64(phnum) {
		if int(phentsize) > len(ent) || phentsize < 32 {
			return 0, fmt.Errorf("ELF program header size %d", phentsize)
		}
		if _, err := r.ReadAt(ent[:phentsize], int64(phoff+i*uint64(phentsize))); err != nil {
			return 0, fmt.Errorf("reading ELF program header %d: %w", i, err)
		}
		var off, size uint64
		if elf64 {
			off, size = bo.Uint64(ent[8:]), bo.Uint64(ent[32:])
		} else {
			off, size = uint64(bo.Uint32(ent[4:])), uint64(bo.Uint32(ent[16:]))
		}
		end = max(end, off+size)
	}
	// Section headers: sh_offset and sh_size, except for SHT_NOBITS
	// (.bss), which takes no room in the file.
	const shtNobits = 8
	for i := range uint64(shnum) {
		if int(shentsize) > len(ent) || shentsize < 40 {
			return 0, fmt.Errorf("ELF section header size %d", shentsize)
		}
		if _, err := r.ReadAt(ent[:shentsize], int64(shoff+i*uint64(shentsize))); err != nil {
			return 0, fmt.Errorf("reading ELF section header %d: %w", i, err)
		}
		if bo.Uint32(ent[4:]) == shtNobits {
			continue
		}
		var off, size uint64
		if elf64 {
			off, size = bo.Uint64(ent[24:]), bo.Uint64(ent[32:])
		} else {
			off, size = uint64(bo.Uint32(ent[16:])), uint64(bo.Uint32(ent[20:]))
		}
		end = max(end, off+size)
	}
	if end > 1<<62 {
		return 0, fmt.Errorf("ELF headers give an end of %d", end)
	}
	return int64(end), nil
}

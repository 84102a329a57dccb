package block

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// detectChunk is the read size of the magic scan; the file is streamed so
// that detection needs constant memory regardless of the file size.
const detectChunk = 1 << 20

var detectPattern = []byte{'D', 'W', 'A', 'R', 'F', 'S', majorVersion}

// detectOffset finds the image start as upstream does (notes §1.1): the first
// occurrence of "DWARFS\x02" followed by two plausible section headers.
func detectOffset(r io.ReaderAt, size int64) (int64, error) {
	// Most images start at 0: checking there first reads two headers, not
	// a megabyte of data blocks (which may sit on a failing disk).
	if size >= int64(len(detectPattern)) {
		var head [8]byte
		if err := readFull(r, head[:len(detectPattern)], 0); err != nil {
			return 0, err
		}
		if bytes.Equal(head[:len(detectPattern)], detectPattern) {
			if ok, err := plausibleImageAt(r, size, 0); err == nil && ok {
				return 0, nil
			}
		}
	}
	overlap := int64(len(detectPattern) - 1)
	buf := make([]byte, min(detectChunk+overlap, size))
	candidates := 0
	startsWithMagic := false
	for base := int64(0); base < size; base += detectChunk {
		n := min(int64(len(buf)), size-base)
		chunk := buf[:n]
		if err := readFull(r, chunk, base); err != nil {
			return 0, err
		}
		for i := 0; ; {
			j := bytes.Index(chunk[i:], detectPattern)
			if j < 0 {
				break
			}
			p := base + int64(i+j)
			// Hits in the overlap tail are found again in the next chunk.
			if int64(i+j) < detectChunk {
				candidates++
				startsWithMagic = startsWithMagic || p == 0
				ok, err := plausibleImageAt(r, size, p)
				if err != nil {
					return 0, err
				}
				if ok {
					return p, nil
				}
			}
			i += j + 1
		}
	}
	if startsWithMagic {
		// Most likely a damaged image rather than a prefix: parsing it at 0
		// yields a precise error about the broken section.
		return 0, nil
	}
	return 0, fmt.Errorf("no DwarFS image found in %d bytes (%d magic candidates rejected): %w", size, candidates, ErrCorrupt)
}

func readFull(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("read %d bytes at offset %d: %w", len(p), off, err)
}

// plausibleImageAt checks the first two section headers at p. Short reads
// simply mean "not here".
func plausibleImageAt(r io.ReaderAt, size, p int64) (bool, error) {
	var minor [1]byte
	if p+8 > size {
		return false, nil
	}
	if err := readFull(r, minor[:], p+7); err != nil {
		return false, err
	}
	if minor[0] < 2 {
		return plausibleV1(r, size, p)
	}
	return plausibleV2(r, size, p)
}

func plausibleV1(r io.ReaderAt, size, p int64) (bool, error) {
	read := func(off int64) (SectionType, uint8, int64, bool, error) {
		var h [v1HeaderSize]byte
		if off < 0 || off > size-v1HeaderSize {
			return 0, 0, 0, false, nil
		}
		if err := readFull(r, h[:], off); err != nil {
			return 0, 0, 0, false, err
		}
		return SectionType(binary.LittleEndian.Uint16(h[:])), h[2], int64(binary.LittleEndian.Uint32(h[4:])), true, nil
	}
	t1, c1, l1, ok, err := read(p + 8)
	if !ok || err != nil {
		return false, err
	}
	if (t1 != SectionBlock && t1 != SectionMetadataSchema) || c1 > uint8(CompLZ4HC) || l1 == 0 {
		return false, nil
	}
	t2, c2, l2, ok, err := read(p + 16 + l1)
	if !ok || err != nil {
		return false, err
	}
	if t1 == SectionBlock && t2 != SectionBlock && t2 != SectionMetadataSchema {
		return false, nil
	}
	if t1 == SectionMetadataSchema && t2 != SectionMetadata {
		return false, nil
	}
	return c2 <= uint8(CompLZ4HC) && l2 > 0, nil
}

func plausibleV2(r io.ReaderAt, size, p int64) (bool, error) {
	var h [v2HeaderSize]byte
	if p > size-v2HeaderSize {
		return false, nil
	}
	if err := readFull(r, h[:], p); err != nil {
		return false, err
	}
	if binary.LittleEndian.Uint32(h[0x30:]) != 0 {
		return false, nil
	}
	length := binary.LittleEndian.Uint64(h[0x38:])
	if length > uint64(size) {
		return false, nil
	}
	next := p + v2HeaderSize + int64(length)
	if next > size-v2HeaderSize {
		return false, nil
	}
	if err := readFull(r, h[:], next); err != nil {
		return false, err
	}
	return bytes.Equal(h[:7], detectPattern) && binary.LittleEndian.Uint32(h[0x30:]) == 1, nil
}

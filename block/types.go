// Package block implements the DwarFS section container: image framing
// (v1 and v2 section headers, prefix detection, section index), section
// checksums, the per-algorithm compression framing, a section writer and a
// bounded cache of decompressed blocks.
//
// All reads go through io.ReaderAt; nothing is memory-mapped.
package block

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error returned by this package that belongs to one of
// these classes wraps the sentinel, so callers can use errors.Is.
var (
	// ErrCorrupt reports structurally invalid data (bad magic, lengths past
	// the end of the file, malformed compression framing, ...).
	ErrCorrupt = errors.New("corrupt image")
	// ErrChecksum reports a section whose stored hash does not match.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrUnsupported reports a valid but unsupported feature (format
	// version, compression algorithm, xz filter, ...).
	ErrUnsupported = errors.New("unsupported")
	// ErrTooLarge reports data that would decompress beyond the caller's limit.
	ErrTooLarge = errors.New("decompressed size exceeds limit")
	// ErrClosed is returned by a closed Cache or Writer.
	ErrClosed = errors.New("closed")
)

// SectionType is the type field of a section header.
type SectionType uint16

// Known section types (notes §1.5). Ids 1..6 were pre-release only.
const (
	SectionBlock          SectionType = 0
	SectionMetadataSchema SectionType = 7
	SectionMetadata       SectionType = 8
	SectionIndex          SectionType = 9
	SectionHistory        SectionType = 10
)

func (t SectionType) String() string {
	switch t {
	case SectionBlock:
		return "BLOCK"
	case SectionMetadataSchema:
		return "METADATA_V2_SCHEMA"
	case SectionMetadata:
		return "METADATA_V2"
	case SectionIndex:
		return "SECTION_INDEX"
	case SectionHistory:
		return "HISTORY"
	}
	return fmt.Sprintf("unknown(%d)", uint16(t))
}

// Known reports whether t is one of the section types defined by the format.
func (t SectionType) Known() bool {
	switch t {
	case SectionBlock, SectionMetadataSchema, SectionMetadata, SectionIndex, SectionHistory:
		return true
	}
	return false
}

// Compression is the compression type id of a section (notes §1.6).
type Compression uint16

// Compression ids.
const (
	CompNone   Compression = 0
	CompLZMA   Compression = 1
	CompZSTD   Compression = 2
	CompLZ4    Compression = 3
	CompLZ4HC  Compression = 4
	CompBrotli Compression = 5
	CompFLAC   Compression = 6
	CompRICEPP Compression = 7
)

var compNames = [...]string{"NONE", "LZMA", "ZSTD", "LZ4", "LZ4HC", "BROTLI", "FLAC", "RICEPP"}

func (c Compression) String() string {
	if int(c) < len(compNames) {
		return compNames[c]
	}
	return fmt.Sprintf("unknown(%d)", uint16(c))
}

// Known reports whether c is a compression id defined by the format (it may
// still be unsupported for decoding).
func (c Compression) Known() bool { return int(c) < len(compNames) }

// Core reports whether c is one of the core compressions (none, LZ4,
// LZ4HC, ZSTD), which every build of this package decodes. The others
// are left out of programs built with the corecodecs tag, such as the
// self-mounting runtime cmd/dwarfs-run.
func (c Compression) Core() bool {
	switch c {
	case CompNone, CompLZ4, CompLZ4HC, CompZSTD:
		return true
	}
	return false
}

// ParseCompression maps an algorithm name ("zstd", "lzma", "null", ...,
// case-insensitive) to its id. "null" and "none" both mean CompNone.
func ParseCompression(name string) (Compression, error) {
	n := strings.ToUpper(strings.TrimSpace(name))
	if n == "NULL" {
		return CompNone, nil
	}
	for i, s := range compNames {
		if s == n {
			return Compression(i), nil
		}
	}
	return 0, fmt.Errorf("unknown compression %q: %w", name, ErrUnsupported)
}

// Section describes one section of an image. Offsets are relative to the
// image start, i.e. after any prefix.
//
// A section of an image opened with Options.LazyHeaders may be pending:
// its header has not been read yet, and only Index, Type, HeaderOffset,
// DataOffset and Length (all from the section index) are known. The
// Image's read and verify methods read the header first; Image.Header
// returns the complete Section.
type Section struct {
	Index        int    // position among all sections in file order
	Number       uint32 // header section number (v2); = Index for v1
	Type         SectionType
	Compression  Compression
	HeaderOffset int64 // relative to image start (after any prefix)
	DataOffset   int64 // relative to image start
	Length       int64 // stored payload length
	XXH3         uint64
	SHA512_256   [32]byte

	pending bool
}

// Pending reports whether the header of s has not been read yet (see
// Section); Number, Compression and the checksums are then unknown.
func (s Section) Pending() bool { return s.pending }

// End returns the offset just past the section payload (relative to the
// image start).
func (s Section) End() int64 { return s.DataOffset + s.Length }

func (s Section) String() string {
	return fmt.Sprintf("section %d (%s)", s.Index, s.Type)
}

// Package formats recognises the file formats of the reference mkdwarfs's
// pcmaudio, fits and binary categorizers and splits a file into the runs
// of bytes (parts) that go into each of their categories.
//
// The detectors read untrusted input: every offset and size is checked
// against the file before it is used, and a malformed file is never an
// error, only not recognised (with the reference's warning, if it gives
// one).
package formats

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
)

// Category names, as the reference mkdwarfs names them.
const (
	PCMMetadata   = "pcmaudio/metadata"
	PCMWaveform   = "pcmaudio/waveform"
	FITSMetadata  = "fits/metadata"
	FITSImage     = "fits/image"
	BinaryELF     = "binary/elf"
	BinaryPE      = "binary/pe"
	MachOHeader   = "binary/macho-header"
	MachOSection  = "binary/macho-section"
	PCMAudio      = "pcmaudio"
	FITS          = "fits"
	BinaryFormats = "binary"
)

// Categories returns the categories of a categorizer in the order the
// reference numbers them, or nil for an unknown name.
func Categories(categorizer string) []string {
	switch categorizer {
	case PCMAudio:
		return []string{PCMMetadata, PCMWaveform}
	case FITS:
		return []string{FITSMetadata, FITSImage}
	case BinaryFormats:
		return []string{BinaryELF, BinaryPE, MachOHeader, MachOSection}
	}
	return nil
}

// Sub is a subcategory: data of one category whose blocks must be kept
// apart from the category's other data because its layout differs. Key
// orders subcategories as the reference does (its fields compared in
// turn); JSON is the category metadata stored in the image, empty when
// the category has none.
type Sub struct {
	Key  [6]uint64
	JSON string
}

// Part is a run of a file's bytes in one category.
type Part struct {
	Category string
	Size     int64
	HasSub   bool
	Sub      Sub
}

// Level is the importance of a log message, as in mkdwarfs --log-level.
type Level int

// The levels the detectors log at.
const (
	Warn Level = iota
	Info
	Verbose
	Trace
)

// Options configure a detector.
type Options struct {
	// Path names the file in messages.
	Path string
	// Log receives the detector's messages (nil: none).
	Log func(l Level, msg string)
	// Accept, if not nil, is asked whether the compression for a category
	// can take data with the given metadata; an error rejects the file
	// (with a warning), as the reference does when the metadata does not
	// meet its compressor's requirements.
	Accept func(category, metadataJSON string) error
}

func (o *Options) logf(l Level, format string, args ...any) {
	if o.Log != nil {
		o.Log(l, fmt.Sprintf(format, args...))
	}
}

// file is the detectors' view of the input.
type file struct {
	r    io.ReaderAt
	size int64
	opt  *Options
}

// readFull returns n bytes at off, or false when they are not all in
// the file or cannot be read.
func (f *file) readFull(off, n int64) ([]byte, bool) {
	if off < 0 || n < 0 || off > f.size || n > f.size-off {
		return nil, false
	}
	b := make([]byte, n)
	m, err := f.r.ReadAt(b, off)
	if m != int(n) || (err != nil && err != io.EOF) {
		return nil, false
	}
	return b, true
}

// jsonObject encodes m as the reference's JSON library does: keys sorted,
// no spaces.
func jsonObject(m map[string]any) string {
	// Only strings and integers go in: Marshal cannot fail.
	b, _ := json.Marshal(m)
	return string(b)
}

var (
	be = binary.BigEndian
	le = binary.LittleEndian
)

// Endianness values ordered as the reference's std::endian compares them
// (little is 1234, big 4321 with the compilers it is built with).
const (
	endianLittle = 1234
	endianBig    = 4321
)

func endianName(e uint64) string {
	if e == endianBig {
		return "big"
	}
	return "little"
}

package block

import (
	"encoding/binary"
	"fmt"
	"io"
	"maps"
)

// WriterOptions controls NewWriter.
type WriterOptions struct {
	NoSectionIndex bool   // do not write a SECTION_INDEX at Close
	Header         []byte // prefix written before the first section, excluded from offsets
	// Sums makes the writer compute the SectionBLAKE3 of every section
	// beside its SHA-512/256, for a signature (Writer.Sums), so that
	// signing does not read the image again.
	Sums bool
}

// Writer writes a v2.5 section stream: 64-byte headers with both hashes,
// consecutive section numbers, and a SECTION_INDEX at Close unless
// disabled. A Writer is not safe for concurrent use.
type Writer struct {
	w        io.Writer
	opts     WriterOptions
	started  bool
	closed   bool
	err      error // sticky: after a failed write the stream is unusable
	offset   int64 // bytes written after the prefix
	number   uint32
	index    []uint64
	sections []Section
	sums     map[[32]byte][32]byte
}

// NewWriter returns a Writer that writes to w. Nothing is written until the
// first WriteSection or Close.
func NewWriter(w io.Writer, opts WriterOptions) *Writer {
	return &Writer{w: w, opts: opts}
}

func (w *Writer) start() error {
	if w.started {
		return nil
	}
	w.started = true
	if len(w.opts.Header) > 0 {
		if _, err := w.w.Write(w.opts.Header); err != nil {
			return fmt.Errorf("write image header: %w", err)
		}
	}
	return nil
}

// WriteSection appends a section whose payload is already compressed with c.
// SECTION_INDEX is written by Close and cannot be written directly.
func (w *Writer) WriteSection(t SectionType, c Compression, payload []byte) error {
	if t == SectionIndex {
		return fmt.Errorf("write section %d: SECTION_INDEX is written by Close: %w", w.number, ErrUnsupported)
	}
	return w.write(t, c, payload)
}

func (w *Writer) write(t SectionType, c Compression, payload []byte) error {
	if w.closed {
		return fmt.Errorf("write section %d (%s): writer %w", w.number, t, ErrClosed)
	}
	if w.err != nil {
		return w.err
	}
	if err := w.start(); err != nil {
		w.err = err
		return err
	}
	if w.offset > indexOffsetMax {
		w.err = fmt.Errorf("write section %d (%s): offset %d exceeds 48 bits: %w", w.number, t, w.offset, ErrUnsupported)
		return w.err
	}
	s := Section{
		Index:        len(w.sections),
		Number:       w.number,
		Type:         t,
		Compression:  c,
		HeaderOffset: w.offset,
		DataOffset:   w.offset + v2HeaderSize,
		Length:       int64(len(payload)),
	}
	s.XXH3 = sectionXXH3(s, payload)
	if w.opts.Sums {
		// On another core while the SHA-512/256 is computed: both read
		// the same bytes.
		sum := make(chan [32]byte, 1)
		go func() { sum <- SectionBLAKE3(s, payload) }()
		s.SHA512_256 = sectionSHA(s, payload)
		if w.sums == nil {
			w.sums = map[[32]byte][32]byte{}
		}
		w.sums[s.SHA512_256] = <-sum
	} else {
		s.SHA512_256 = sectionSHA(s, payload)
	}
	var hdr [v2HeaderSize]byte
	putV2Header(hdr[:], s)
	if _, err := w.w.Write(hdr[:]); err != nil {
		w.err = fmt.Errorf("write section %d (%s) header: %w", s.Number, t, err)
		return w.err
	}
	if _, err := w.w.Write(payload); err != nil {
		w.err = fmt.Errorf("write section %d (%s) payload: %w", s.Number, t, err)
		return w.err
	}
	w.index = append(w.index, uint64(t)<<48|uint64(w.offset))
	w.sections = append(w.sections, s)
	w.offset = s.End()
	w.number++
	return nil
}

// Sections returns the sections written so far (offsets exclude the prefix).
func (w *Writer) Sections() []Section { return append([]Section(nil), w.sections...) }

// Sums returns, with WriterOptions.Sums, the SectionBLAKE3 of every
// section written so far, keyed by its SHA-512/256: both cover the same
// bytes, so a section read back whose header holds that SHA-512/256 has
// that BLAKE3 (package imagesig uses them to sign without reading the
// image).
func (w *Writer) Sums() map[[32]byte][32]byte { return maps.Clone(w.sums) }

// Offset returns the number of bytes written after the prefix.
func (w *Writer) Offset() int64 { return w.offset }

// Close writes the section index (unless disabled). It does not close the
// underlying writer. Calling Close again is a no-op.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	if w.err != nil {
		w.closed = true
		return w.err
	}
	if err := w.start(); err != nil {
		w.err = err
		w.closed = true
		return err
	}
	if !w.opts.NoSectionIndex {
		// The index lists itself as its last entry (notes §1.7).
		entries := append(w.index, uint64(SectionIndex)<<48|uint64(w.offset))
		payload := make([]byte, 8*len(entries))
		for i, e := range entries {
			binary.LittleEndian.PutUint64(payload[8*i:], e)
		}
		if err := w.write(SectionIndex, CompNone, payload); err != nil {
			w.closed = true
			return err
		}
	}
	w.closed = true
	return nil
}

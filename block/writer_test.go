package block

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func TestWriterRoundTrip(t *testing.T) {
	blocks := [][]byte{bytes.Repeat([]byte("block zero "), 1000), []byte("tiny"), bytes.Repeat([]byte{7}, 5000)}
	for _, tc := range []struct {
		name   string
		opts   WriterOptions
		offset int64
	}{
		{"plain", WriterOptions{}, -1},
		{"header", WriterOptions{Header: []byte("#!/bin/sh\nexec dwarfs \"$0\"\nDWARFS\x02\x05 decoy\n")}, -1},
		{"noindex", WriterOptions{NoSectionIndex: true}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := NewWriter(&buf, tc.opts)
			var wantComp []Compression
			for _, b := range blocks {
				comp, payload := testSection(t, CompZSTD, b)
				wantComp = append(wantComp, comp)
				if err := w.WriteSection(SectionBlock, comp, payload); err != nil {
					t.Fatal(err)
				}
			}
			for _, st := range []SectionType{SectionMetadataSchema, SectionMetadata, SectionHistory} {
				if err := w.WriteSection(st, CompNone, []byte(st.String())); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.WriteSection(SectionIndex, CompNone, nil); !errors.Is(err, ErrUnsupported) {
				t.Errorf("direct index write: %v", err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if err := w.WriteSection(SectionBlock, CompNone, nil); !errors.Is(err, ErrClosed) {
				t.Errorf("write after close: %v", err)
			}
			data := buf.Bytes()
			im, err := OpenImage(bytes.NewReader(data), int64(len(data)), Options{ImageOffset: tc.offset, Name: tc.name})
			if err != nil {
				t.Fatal(err)
			}
			if im.Offset() != int64(len(tc.opts.Header)) {
				t.Errorf("offset %d want %d", im.Offset(), len(tc.opts.Header))
			}
			if im.Minor() != 5 {
				t.Errorf("minor %d", im.Minor())
			}
			if im.HasSectionIndex() == tc.opts.NoSectionIndex {
				t.Errorf("HasSectionIndex = %v (%v)", im.HasSectionIndex(), im.IndexError())
			}
			checkImage(t, im)
			for i, b := range im.Blocks() {
				if b.Compression != wantComp[i] {
					t.Errorf("block %d compression %v want %v", i, b.Compression, wantComp[i])
				}
				got, err := im.ReadDecompressed(b)
				if err != nil || !bytes.Equal(got, blocks[i]) {
					t.Errorf("block %d: %v", i, err)
				}
			}
			if !tc.opts.NoSectionIndex {
				n := len(data)
				last := binary.LittleEndian.Uint64(data[n-8:])
				idx := im.Find(SectionIndex)
				if len(idx) != 1 || last != uint64(SectionIndex)<<48|uint64(idx[0].HeaderOffset) {
					t.Errorf("last 8 bytes %#x", last)
				}
			}
			if got := w.Sections(); len(got) != len(im.Sections()) {
				t.Errorf("writer reports %d sections, image has %d", len(got), len(im.Sections()))
			}
		})
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(p), nil
}

func TestWriterStickyError(t *testing.T) {
	w := NewWriter(&failWriter{n: 1}, WriterOptions{})
	if err := w.WriteSection(SectionBlock, CompNone, []byte("x")); err == nil {
		t.Fatal("expected error")
	}
	if err := w.WriteSection(SectionBlock, CompNone, []byte("x")); err == nil {
		t.Fatal("expected sticky error")
	}
	if err := w.Close(); err == nil {
		t.Fatal("expected error from Close")
	}
}

package block

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
)

// fixIndexChecksum gives the section index that the last 8 bytes of img
// point to a correct XXH3, when that header and its payload lie inside
// img. Without it nearly every mutation of the index would stop at the
// checksum, and the entry checks behind it would never run.
func fixIndexChecksum(img []byte) {
	if len(img) < v2HeaderSize+8 {
		return
	}
	last := binary.LittleEndian.Uint64(img[len(img)-8:])
	pos := int64(last & indexOffsetMax)
	if SectionType(last>>48) != SectionIndex || pos > int64(len(img))-v2HeaderSize {
		return
	}
	h := img[pos : pos+v2HeaderSize]
	length := binary.LittleEndian.Uint64(h[0x38:])
	if length > uint64(int64(len(img))-pos-v2HeaderSize) {
		return
	}
	payload := img[pos+v2HeaderSize : pos+v2HeaderSize+int64(length)]
	s := Section{
		Number:      binary.LittleEndian.Uint32(h[0x30:]),
		Type:        SectionType(binary.LittleEndian.Uint16(h[0x34:])),
		Compression: Compression(binary.LittleEndian.Uint16(h[0x36:])),
		Length:      int64(length),
	}
	binary.LittleEndian.PutUint64(h[0x28:], sectionXXH3(s, payload))
}

// indexedImage builds a v2.5 image with n blocks, metadata and a section
// index, as a seed for the index walk.
func indexedImage(n int, header string) []byte {
	var b bytes.Buffer
	w := NewWriter(&b, WriterOptions{Header: []byte(header)})
	for i := range n {
		w.WriteSection(SectionBlock, CompNone, bytes.Repeat([]byte{byte('a' + i)}, 1+i*3))
	}
	w.WriteSection(SectionMetadataSchema, CompNone, []byte("schema"))
	w.WriteSection(SectionMetadata, CompNone, []byte("metadata"))
	w.Close()
	return b.Bytes()[len(header):]
}

// checkSectionWalk checks what OpenImage promises about the sections of a
// successfully opened image of size bytes: they are numbered in file
// order, tile the image from the first header to its end without gap or
// overlap, BLOCKs are listed in order, and there is at most one schema
// and one metadata section. When the section index was used, the linear
// header walk must find exactly the same sections.
func checkSectionWalk(im *Image, data []byte) error {
	secs := im.Sections()
	pos := int64(0)
	hdr := int64(v2HeaderSize)
	if im.V1() {
		pos, hdr = 8, v1HeaderSize
	}
	var blocks []Section
	seen := map[SectionType]int{}
	for i, s := range secs {
		if s.Index != i || s.HeaderOffset != pos || s.DataOffset != pos+hdr || s.Length < 0 || s.End() > im.Size() {
			return fmt.Errorf("section %d at %d: %+v does not follow the previous one", i, pos, s)
		}
		if s.Type == SectionBlock {
			blocks = append(blocks, s)
		}
		seen[s.Type]++
		pos = s.End()
	}
	if pos != im.Size() {
		return fmt.Errorf("sections end at %d, image at %d", pos, im.Size())
	}
	if seen[SectionMetadataSchema] > 1 || seen[SectionMetadata] > 1 {
		return fmt.Errorf("%d schema and %d metadata sections accepted", seen[SectionMetadataSchema], seen[SectionMetadata])
	}
	if got := im.Blocks(); len(got) != len(blocks) || im.NumBlocks() != len(blocks) {
		return fmt.Errorf("%d blocks listed, %d in the sections", len(got), len(blocks))
	}
	for i, b := range blocks {
		if got, ok := im.Block(i); !ok || got != b {
			return fmt.Errorf("block %d is %+v, want %+v", i, got, b)
		}
	}
	if !im.HasSectionIndex() {
		return nil
	}
	last := secs[len(secs)-1]
	if last.Type != SectionIndex || last.Compression != CompNone {
		return fmt.Errorf("index used but the last section is %+v", last)
	}
	payload, err := im.ReadRaw(last)
	if err != nil {
		return fmt.Errorf("index used but unreadable: %v", err)
	}
	for i, s := range secs {
		e := binary.LittleEndian.Uint64(payload[8*i:])
		if SectionType(e>>48) != s.Type || int64(e&indexOffsetMax) != s.HeaderOffset {
			return fmt.Errorf("section %d %+v disagrees with index entry %#x", i, s, e)
		}
	}
	lin := &Image{r: bytes.NewReader(data), name: "linear", size: im.Size(), major: im.major, minor: im.minor, maxBlock: DefaultMaxBlockSize, maxMeta: DefaultMaxMetadataSize}
	if err := lin.scanV2(); err != nil {
		return fmt.Errorf("index accepted but the header walk fails: %v", err)
	}
	if len(lin.sections) != len(secs) {
		return fmt.Errorf("index lists %d sections, the header walk finds %d", len(secs), len(lin.sections))
	}
	for i := range secs {
		if lin.sections[i] != secs[i] {
			return fmt.Errorf("section %d: index gives %+v, header walk %+v", i, secs[i], lin.sections[i])
		}
	}
	return nil
}

func TestSectionWalkSeeds(t *testing.T) {
	for _, n := range []int{0, 1, 5} {
		img := indexedImage(n, "")
		im, err := OpenImage(bytes.NewReader(img), int64(len(img)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !im.HasSectionIndex() || im.NumBlocks() != n {
			t.Fatalf("%d blocks: index %v (%v), %d blocks", n, im.HasSectionIndex(), im.IndexError(), im.NumBlocks())
		}
		if err := checkSectionWalk(im, img); err != nil {
			t.Fatal(err)
		}
	}
	// A corrupt index entry with a good checksum: the index is refused
	// with a reason, and the header walk still opens the image.
	img := indexedImage(3, "")
	idx := binary.LittleEndian.Uint64(img[len(img)-8:]) & indexOffsetMax
	binary.LittleEndian.PutUint64(img[idx+v2HeaderSize+8:], 1<<48|5) // block 1 at offset 5
	fixIndexChecksum(img)
	im, err := OpenImage(bytes.NewReader(img), int64(len(img)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if im.HasSectionIndex() || im.IndexError() == nil || im.NumBlocks() != 3 {
		t.Fatalf("bad index entry: used %v, error %v, %d blocks", im.HasSectionIndex(), im.IndexError(), im.NumBlocks())
	}
	if err := checkSectionWalk(im, img); err != nil {
		t.Fatal(err)
	}
}

// FuzzSectionWalk opens arbitrary bytes as an image at offset 0 (no
// prefix detection), with the section index checksum made valid, and
// checks the section list against checkSectionWalk.
func FuzzSectionWalk(f *testing.F) {
	for _, n := range []int{0, 1, 4} {
		f.Add(indexedImage(n, ""))
	}
	// Index entries out of order, and an index that does not end with itself.
	img := indexedImage(3, "")
	idx := binary.LittleEndian.Uint64(img[len(img)-8:]) & indexOffsetMax
	e := img[idx+v2HeaderSize:]
	swapped := bytes.Clone(img)
	copy(swapped[idx+v2HeaderSize+8:], e[16:24])
	copy(swapped[idx+v2HeaderSize+16:], e[8:16])
	f.Add(swapped)
	short := bytes.Clone(img)
	binary.LittleEndian.PutUint64(short[len(short)-8:], uint64(SectionIndex)<<48|(idx+8))
	f.Add(short)
	for _, img := range syntheticImages() {
		if i := bytes.Index(img, []byte(magic)); i >= 0 {
			f.Add(img[i:])
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		data = bytes.Clone(data)
		fixIndexChecksum(data)
		im, err := OpenImage(bytes.NewReader(data), int64(len(data)), Options{Name: "fuzz"})
		if err != nil {
			return
		}
		if err := checkSectionWalk(im, data); err != nil {
			t.Fatal(err)
		}
	})
}

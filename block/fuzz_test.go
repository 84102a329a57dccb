package block

import (
	"bytes"
	"encoding/binary"
	"github.com/godwarfs/godwarfs/block/internal/codectest"
	"os"
	"path/filepath"
	"testing"

	"github.com/godwarfs/godwarfs/block/internal/xzfmt"
	sharedfixtures "github.com/godwarfs/godwarfs/internal/fixtures"
)

// fuzzSeeds adds small images as seeds. Only images below ~1 KiB are used:
// the fuzzer minimises every new interesting input, which is slow for large
// inputs and would eat the whole short fuzz budget of "make test".
func fuzzSeeds(f *testing.F) {
	dir := sharedfixtures.Dir() // the fuzzers also run from their own seeds without it
	if dir == "" {
		return
	}
	for _, name := range []string{
		"upstream/future-features.dwarfs", "upstream/setuidgid-v0.4.1.dwarfs", "upstream/setuidgid-v0.5.6.dwarfs",
	} {
		if data, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			f.Add(data)
		}
	}
	bad, _ := filepath.Glob(filepath.Join(dir, "badfs-sample", "*.dwarfs"))
	for i, p := range bad {
		if i%16 != 0 {
			continue
		}
		if data, err := os.ReadFile(p); err == nil && len(data) <= 1024 {
			f.Add(data)
		}
	}
	for _, img := range syntheticImages() {
		f.Add(img)
	}
}

// syntheticImages returns small fixture-independent images: a v2.5 image
// with a prefix, compressed blocks and an index, and a v1 (2.0) image.
func syntheticImages() [][]byte {
	var b bytes.Buffer
	w := NewWriter(&b, WriterOptions{Header: []byte("#!")})
	for _, comp := range []Compression{CompZSTD, CompLZ4, CompBrotli, CompLZMA} {
		out, _ := payload(comp, bytes.Repeat([]byte(comp.String()), 4))
		w.WriteSection(SectionBlock, comp, out)
	}
	w.WriteSection(SectionMetadataSchema, CompNone, []byte("schema"))
	w.WriteSection(SectionMetadata, CompNone, []byte("meta"))
	w.Close()
	v1 := []byte("DWARFS\x02\x00")
	for _, sec := range []struct {
		t SectionType
		p string
	}{{SectionBlock, "data"}, {SectionMetadataSchema, "schema"}, {SectionMetadata, "meta"}} {
		v1 = binary.LittleEndian.AppendUint16(v1, uint16(sec.t))
		v1 = append(v1, 0, 0)
		v1 = binary.LittleEndian.AppendUint32(v1, uint32(len(sec.p)))
		v1 = append(v1, sec.p...)
	}
	return [][]byte{b.Bytes(), v1}
}

func TestSyntheticImages(t *testing.T) {
	for i, img := range syntheticImages() {
		if err := exerciseImage(img, 1<<20); err != nil {
			t.Errorf("synthetic image %d: %v", i, err)
		}
		im, err := OpenImage(bytes.NewReader(img), int64(len(img)), Options{ImageOffset: -1})
		if err != nil {
			t.Fatal(err)
		}
		if want := []int{7, 3}[i]; len(im.Sections()) != want {
			t.Errorf("image %d: %d sections, want %d", i, len(im.Sections()), want)
		}
		if i == 0 && (!im.HasSectionIndex() || im.Offset() != 2 || im.NumBlocks() != 4) {
			t.Errorf("v2 image: index %v offset %d blocks %d", im.HasSectionIndex(), im.Offset(), im.NumBlocks())
		}
		if i == 1 && (!im.V1() || im.Sections()[2].DataOffset != int64(len(img))-4) {
			t.Errorf("v1 image: %+v", im.Sections())
		}
	}
}

func FuzzOpenImage(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = exerciseImage(data, 1<<20)
	})
}

func FuzzDecompress(f *testing.F) {
	inputs := [][]byte{{}, []byte("x"), []byte("hello hello hello hello hello")}
	for _, comp := range []Compression{CompZSTD, CompLZMA, CompLZ4, CompBrotli} {
		for _, in := range inputs {
			f.Add(uint8(comp), testPayload(f, comp, in))
		}
	}
	// xz streams with BCJ filters before LZMA2 (lzma:binary=...).
	code := []byte("\xe8\x10\x00\x00\x00\xe9\xf0\xff\xff\xff\x00\x00\x00\xeb\x00\x00\xf0\xf8hello hello")
	for _, name := range []string{"x86", "arm", "armthumb", "ia64"} {
		out, err := xzfmt.WriteBCJ(code, 4096, nil, xzfmt.ByName(name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(CompLZMA), out)
	}
	stream := codectest.Streams(f)["tiny16.flac"]
	f.Add(uint8(CompFLAC), flacPayload(480, PCMLayout{Channels: 2, BitsPerSample: 16, BytesPerSample: 2, Signed: true}, stream))
	f.Fuzz(func(t *testing.T, comp uint8, src []byte) {
		c := Compression(comp % 8)
		out, err := Decompress(c, src, 1<<20)
		if err == nil {
			if n, err := UncompressedSize(c, src); err != nil || n != int64(len(out)) {
				t.Fatalf("%s: decoded %d bytes but UncompressedSize = %d, %v", c, len(out), n, err)
			}
		}
	})
}

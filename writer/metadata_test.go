package writer

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/block/encode"
	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/metadata"
)

// metadataSections returns the schema and the decoded data of an image's
// metadata, and its data section.
func metadataSections(t *testing.T, img *image) (*metadata.Schema, []byte, block.Section) {
	t.Helper()
	var schema, data []byte
	var sec block.Section
	for _, s := range img.im.Sections() {
		var err error
		switch s.Type {
		case block.SectionMetadataSchema:
			schema, err = img.im.ReadDecompressed(s)
		case block.SectionMetadata:
			data, err = img.im.ReadDecompressed(s)
			sec = s
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	s, err := metadata.DecodeSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	return s, data, sec
}

// chunkWidths returns the bit widths of the chunk table's fields.
func chunkWidths(s *metadata.Schema) []int {
	root := s.Layouts[s.RootLayout]
	var w []int
	for _, f := range root.Fields {
		if f.ID != 1 { // chunks
			continue
		}
		arr := s.Layouts[f.LayoutID]
		for _, g := range arr.Fields {
			if g.ID != 3 { // item
				continue
			}
			for _, h := range s.Layouts[g.LayoutID].Fields {
				w = append(w, int(s.Layouts[h.LayoutID].Bits))
			}
		}
	}
	return w
}

// encoder names the library that encodes spec's algorithm in this build.
func encoder(t *testing.T, spec string) string {
	t.Helper()
	name, _, _ := strings.Cut(spec, ":")
	for _, a := range encode.Algorithms() {
		if a.Name == name {
			return a.Encoder
		}
	}
	t.Fatalf("no algorithm %q in this build", name)
	return ""
}

// TestMetadataLayout checks that a build lays compressed metadata out in
// whole bytes where that is smaller and small metadata in the default
// layout where that is, and uncompressed metadata never in whole bytes.
func TestMetadataLayout(t *testing.T) {
	write := func(t *testing.T, dir, name string, data []byte) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Releases of a project: the same names in every release, so that
	// the directory entries' rows repeat.
	releases := t.TempDir()
	for v := range 40 {
		for i := range 100 {
			write(t, releases, fmt.Sprintf("v%02d/d%d/f%03d.txt", v, i%7, i), []byte(fmt.Sprintf("release %d file %d\n", v, i)))
		}
	}
	// A few unrelated files: nothing repeats, and whole bytes only add.
	few := t.TempDir()
	for i := range 30 {
		write(t, few, fmt.Sprintf("f%02d", i), textLike(1000+i*997, uint32(i)))
	}
	build := func(t *testing.T, src, spec string) (*image, *metadata.Metadata) {
		out := filepath.Join(t.TempDir(), "out.dwarfs")
		scan := dedup.DefaultOptions()
		scan.Input, scan.BlockSizeBits, scan.NoCreateTime = src, 16, true
		if _, err := Build(context.Background(), BuildOptions{Scan: scan, Target: Target{
			Output: out, BlockCompression: "zstd:level=3", MetadataCompression: spec,
			History: History{NoTimestamp: true},
		}}); err != nil {
			t.Fatal(err)
		}
		img := openImage(t, out)
		s, data, _ := metadataSections(t, img)
		md, err := metadata.DecodeWithSchema(s, data)
		if err != nil {
			t.Fatal(err)
		}
		return img, md
	}
	for _, tc := range []struct {
		name, src string
		whole     bool // whole bytes are the smaller layout with libzstd and liblzma
	}{{"releases", releases, true}, {"few", few, false}} {
		for _, spec := range []string{"zstd:level=22", "lzma:level=9"} {
			t.Run(tc.name+"/"+spec, func(t *testing.T) {
				img, md := build(t, tc.src, spec)
				s, data, sec := metadataSections(t, img)
				comp, err := encode.NewCompressor(spec)
				if err != nil {
					t.Fatal(err)
				}
				size := map[bool]int64{}
				raw := map[bool][]byte{}
				for _, whole := range []bool{false, true} {
					_, d, err := metadata.EncodeWith(md, metadata.EncodeOptions{WholeBytes: whole})
					if err != nil {
						t.Fatal(err)
					}
					_, out, err := encode.CompressSectionSmallest(comp, d)
					if err != nil {
						t.Fatal(err)
					}
					size[whole], raw[whole] = int64(len(out)), d
				}
				t.Logf("default layout %d bytes, whole bytes %d (%s)", size[false], size[true], encoder(t, spec))
				smaller := size[true] < size[false]
				// Which layout wins on a tree this small depends on the
				// encoder: the pure-Go zstd encoder of a CGO_ENABLED=0 build
				// finds the releases' repeats in the default layout too.
				// What a build must do with any encoder is keep the smaller.
				if tc.whole && !smaller && !strings.Contains(encoder(t, spec), "pure Go") {
					t.Errorf("whole bytes not smaller with %s", encoder(t, spec))
				}
				if sec.Length != size[smaller] || string(data) != string(raw[smaller]) {
					t.Errorf("metadata section %d bytes, not the smaller layout's %d", sec.Length, size[smaller])
				}
				whole := true
				for _, w := range chunkWidths(s) {
					whole = whole && w%8 == 0
				}
				if whole != smaller {
					t.Errorf("chunk widths %v, whole bytes expected: %v", chunkWidths(s), smaller)
				}
			})
		}
	}
	t.Run("null", func(t *testing.T) {
		img, md := build(t, releases, "null")
		s, data, _ := metadataSections(t, img)
		_, plain, err := metadata.Encode(md)
		if err != nil {
			t.Fatal(err)
		}
		if string(plain) != string(data) {
			t.Errorf("uncompressed metadata is not in the default layout (%v)", chunkWidths(s))
		}
	})
}

// TestMetadataSmallestSetting checks that the metadata section, and only
// it, is compressed with the smallest of the settings of its spec
// (encode.CompressSectionSmallest). The input is text, then fixed-size
// rows: there libzstd's block pre-splitter, on by default, cuts a block,
// and the other setting (off) makes another frame.
func TestMetadataSmallestSetting(t *testing.T) {
	t.Parallel()
	const spec = "zstd:level=22"
	data := textLike(300_000, 7)
	for k, x := uint32(0), uint32(3); len(data) < 1_000_000; k++ {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		data = append(data, byte(k%977), byte(k%977>>8), byte(x%3), byte(k), byte(k>>8))
	}
	comp, err := encode.NewCompressor(spec)
	if err != nil {
		t.Fatal(err)
	}
	_, plain, err := encode.CompressSection(comp, data)
	if err != nil {
		t.Fatal(err)
	}
	_, smallest, err := encode.CompressSectionSmallest(comp, data)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s (%s): %d bytes, smallest of its settings %d", spec, encoder(t, spec), len(plain), len(smallest))
	if strings.HasPrefix(encoder(t, spec), "libzstd") && len(smallest) == len(plain) {
		t.Fatal("libzstd's settings give frames of one size: the test cannot tell them apart")
	}
	c := compressors{}
	for _, tc := range []struct {
		t    block.SectionType
		want []byte
	}{{block.SectionMetadata, smallest}, {block.SectionBlock, plain}, {block.SectionMetadataSchema, plain}} {
		s, err := c.encodeSection(tc.t, spec, data)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(s.out, tc.want) {
			t.Errorf("%s: %d bytes, want %d", tc.t, len(s.out), len(tc.want))
		}
	}
}

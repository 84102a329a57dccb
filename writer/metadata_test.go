package writer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/godwarfs/godwarfs/block"
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

// TestMetadataLayoutAndVariants checks that a build lays compressed
// metadata out in whole bytes only where that is smaller, uncompressed
// metadata never, and keeps the smallest of its compressor's variants.
func TestMetadataLayoutAndVariants(t *testing.T) {
	src := t.TempDir()
	// Releases of a project: the same names in every release, so that
	// the directory entries' rows repeat, as in a tree of releases.
	for v := range 40 {
		for i := range 100 {
			p := filepath.Join(src, fmt.Sprintf("v%02d", v), fmt.Sprintf("d%d", i%7), fmt.Sprintf("f%03d.txt", i))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(fmt.Sprintf("release %d file %d\n", v, i)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	build := func(spec string) (*image, *metadata.Metadata) {
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
	for _, spec := range []string{"zstd:level=22", "lzma:level=9", "zstd:level=19"} {
		t.Run(spec, func(t *testing.T) {
			img, md := build(spec)
			s, _, sec := metadataSections(t, img)
			comp, err := block.NewCompressor(spec)
			if err != nil {
				t.Fatal(err)
			}
			variants, err := block.Variants(comp)
			if err != nil {
				t.Fatal(err)
			}
			// The image's payload is no larger than any layout with any
			// variant, and is one of them.
			best, bestWhole := int64(-1), false
			for _, whole := range []bool{false, true} {
				_, data, err := metadata.EncodeWith(md, metadata.EncodeOptions{WholeBytes: whole})
				if err != nil {
					t.Fatal(err)
				}
				for i, c := range variants {
					ct, out, err := block.CompressSection(c, data)
					if err != nil {
						t.Fatal(err)
					}
					if ct == block.CompNone {
						continue
					}
					if n := int64(len(out)); best < 0 || n < best {
						best, bestWhole = n, whole
					}
					t.Logf("whole bytes %v, variant %d: %d bytes", whole, i, len(out))
				}
			}
			if sec.Length != best {
				t.Errorf("metadata section %d bytes, the smallest candidate %d", sec.Length, best)
			}
			if !bestWhole {
				t.Errorf("whole bytes are not the smallest layout of a tree whose rows repeat from release to release")
			}
			for _, w := range chunkWidths(s) {
				if w%8 != 0 {
					t.Errorf("chunk widths %v, want whole bytes", chunkWidths(s))
					break
				}
			}
		})
	}
	t.Run("null", func(t *testing.T) {
		img, md := build("null")
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

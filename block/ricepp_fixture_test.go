package block

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/godwarfs/godwarfs/block/ricepp"
	sharedfixtures "github.com/godwarfs/godwarfs/internal/fixtures"
)

// TestReferenceRiceppBlocks decodes every RICEPP block of the images the
// reference mkdwarfs wrote (the fixtures' codecs/ricepp/README) and
// re-encodes the result: the payload must come out byte for byte as the
// reference's.
// GODWARFS_RICEPP_IMAGES=GLOB checks other images instead (make
// check-ricepp does, on images it has the reference build).
func TestReferenceRiceppBlocks(t *testing.T) {
	glob := os.Getenv("GODWARFS_RICEPP_IMAGES")
	fixtures := glob == ""
	if fixtures {
		glob = filepath.Join(sharedfixtures.Require(t), "codecs", "ricepp", "*.dwarfs")
	}
	images, _ := filepath.Glob(glob)
	if len(images) == 0 {
		t.Fatalf("no images match %s", glob)
	}
	seen := map[ricepp.Params]int{}
	for _, path := range images {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		im, err := OpenImage(bytes.NewReader(data), int64(len(data)), Options{ImageOffset: -1, Name: path})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range im.Blocks() {
			if s.Compression != CompRICEPP {
				continue
			}
			raw, err := im.ReadRaw(s)
			if err != nil {
				t.Fatal(err)
			}
			out, err := im.ReadDecompressed(s)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			into, _, err := im.ReadDecompressedInto(s, im.Limit(s), nil, make([]byte, 0, len(out)))
			if err != nil || !bytes.Equal(into, out) {
				t.Fatalf("%s: ReadDecompressedInto differs: %v", path, err)
			}
			_, h, _, err := riceppPayload(raw)
			if err != nil {
				t.Fatal(err)
			}
			seen[h.params]++
			again, err := testRicepp(out, h.params)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, raw) {
				t.Errorf("%s block at %d (%+v): re-encoded payload differs from the reference's (%d vs %d bytes)",
					filepath.Base(path), s.DataOffset, h.params, len(again), len(raw))
			}
		}
	}
	// The images cover both component counts, unused low bits and
	// several block sizes.
	var twoComp, lsb bool
	sizes := map[int]bool{}
	for p := range seen {
		twoComp = twoComp || p.Components == 2
		lsb = lsb || p.UnusedLSBs > 0
		sizes[p.BlockSize] = true
	}
	if fixtures && (!twoComp || !lsb || len(sizes) < 3) {
		t.Errorf("fixture coverage too thin: %v", seen)
	}
	t.Logf("RICEPP blocks by parameters: %v", seen)
}

// referenceRiceppSeed returns the smallest RICEPP payload of a reference
// image, as a fuzz seed.
func referenceRiceppSeed() []byte {
	data, err := os.ReadFile(filepath.Join(sharedfixtures.Dir(), "codecs", "ricepp", "fits-bs16-S11.dwarfs"))
	if err != nil {
		return nil
	}
	im, err := OpenImage(bytes.NewReader(data), int64(len(data)), Options{ImageOffset: -1})
	if err != nil {
		return nil
	}
	var best []byte
	for _, s := range im.Blocks() {
		if s.Compression != CompRICEPP {
			continue
		}
		if raw, err := im.ReadRaw(s); err == nil && (best == nil || len(raw) < len(best)) {
			best = raw
		}
	}
	return best
}

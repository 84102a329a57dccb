package encode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/block"
)

// ricepp and flac bind a category's metadata through ForMetadata: the
// bound compressor writes blocks that decode to the input, with the
// frame size as granularity; layouts they cannot carry are refused.
func TestForMetadataCodecs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pixels := make([]byte, 2*3000)
	for i := 0; i < len(pixels); i += 2 {
		binary.BigEndian.PutUint16(pixels[i:], uint16(1000+rng.IntN(64))<<2)
	}
	samples := make([]byte, 2*2*2000)
	for i := 0; i < len(samples); i += 2 {
		binary.LittleEndian.PutUint16(samples[i:], uint16(int16(rng.IntN(2000)-1000)))
	}
	for _, tc := range []struct {
		spec, meta string
		data       []byte
		comp       block.Compression
		frame      int
	}{
		{"ricepp", `{"bytes_per_sample":2,"component_count":1,"endianness":"big","unused_lsb_count":2}`, pixels, block.CompRICEPP, 2},
		{"ricepp:block_size=16", `{"bytes_per_sample":2,"component_count":2,"endianness":"little","unused_lsb_count":0}`, pixels, block.CompRICEPP, 4},
		{"flac:level=5", `{"bits_per_sample":16,"bytes_per_sample":2,"endianness":"little","number_of_channels":2,"padding":"lsb","signedness":"signed"}`, samples, block.CompFLAC, 4},
	} {
		c, err := NewCompressor(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Compress(tc.data); !errors.Is(err, block.ErrUnsupported) {
			t.Errorf("%s: Compress without a layout: %v, want ErrUnsupported", tc.spec, err)
		}
		bc, cons, err := ForMetadata(c, tc.meta)
		if err != nil {
			t.Fatalf("%s: ForMetadata: %v", tc.spec, err)
		}
		if cons.Granularity != tc.frame {
			t.Errorf("%s: granularity %d, want %d", tc.spec, cons.Granularity, tc.frame)
		}
		payload, err := bc.Compress(tc.data)
		if err != nil {
			t.Fatalf("%s: %v", tc.spec, err)
		}
		if bc.Compression() != tc.comp {
			t.Errorf("%s: compression %s, want %s", tc.spec, bc.Compression(), tc.comp)
		}
		got, err := block.Decompress(tc.comp, payload, int64(len(tc.data)))
		if err != nil || !bytes.Equal(got, tc.data) {
			t.Errorf("%s: decoded %d bytes, %v; not the input", tc.spec, len(got), err)
		}
		if _, err := bc.Compress(tc.data[:len(tc.data)-1]); !errors.Is(err, block.ErrUnsupported) {
			t.Errorf("%s: a partial frame: %v, want ErrUnsupported", tc.spec, err)
		}
	}
	for _, tc := range []struct{ spec, meta, want string }{
		{"ricepp", `{"bytes_per_sample":1,"component_count":1,"endianness":"big","unused_lsb_count":0}`, "unsupported layout"},
		{"ricepp", `{"bytes_per_sample":2,"component_count":3,"endianness":"big","unused_lsb_count":0}`, "unsupported layout"},
		{"ricepp", `{"bytes_per_sample":2,"component_count":1,"endianness":"middle","unused_lsb_count":0}`, "endianness"},
		{"ricepp", `not json`, "category metadata"},
		{"ricepp:block_size=8", ``, "block_size"},
		{"flac", `{"bits_per_sample":16}`, "flac"},
	} {
		c, err := NewCompressor(tc.spec)
		if err == nil {
			_, _, err = ForMetadata(c, tc.meta)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: %v, want an error with %q", tc.spec, tc.meta, err, tc.want)
		}
	}
}

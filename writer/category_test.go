package writer

import (
	"errors"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/block/encode"
	"github.com/godwarfs/godwarfs/dedup"
)

// frameCodec stands in for a codec such as FLAC: it takes only layouts
// of 1 or 2 channels and needs whole frames.
type frameCodec struct {
	encode.Compressor
	bound string
}

func (f frameCodec) ForMetadata(js string) (encode.Compressor, encode.Constraints, error) {
	switch {
	case strings.Contains(js, `"number_of_channels":1`):
		return frameCodec{f.Compressor, js}, encode.Constraints{Granularity: 2}, nil
	case strings.Contains(js, `"number_of_channels":2`):
		return frameCodec{f.Compressor, js}, encode.Constraints{Granularity: 4}, nil
	}
	return nil, encode.Constraints{}, errors.New("unsupported number of channels")
}

func TestCategoryCompression(t *testing.T) {
	def, err := encode.NewCompressor("zstd:level=1")
	if err != nil {
		t.Fatal(err)
	}
	null, _ := encode.NewCompressor("null")
	var log strings.Builder
	cc := &categoryCompression{def: def, log: &log, cats: map[string]encode.Compressor{
		"pcmaudio/waveform": frameCodec{Compressor: null}, "incompressible": null}}
	mono, stereo, many := `{"number_of_channels":1}`, `{"number_of_channels":2}`, `{"number_of_channels":9}`
	wf := func(js string) dedup.BlockCategory {
		return dedup.BlockCategory{Name: "pcmaudio/waveform", Metadata: js}
	}
	for _, tc := range []struct {
		bc     dedup.BlockCategory
		gran   int
		accept bool
		bound  string // the metadata the codec was bound to ("-": the block compression)
	}{
		{wf(mono), 2, true, mono},
		{wf(stereo), 4, true, stereo},
		{wf(many), 1, false, "-"},
		{dedup.BlockCategory{Name: "incompressible"}, 1, true, ""},
		{dedup.BlockCategory{Name: dedup.CategoryDefault}, 1, true, "-"},
	} {
		if g := cc.granularity(tc.bc.Name, tc.bc.Metadata); g != tc.gran {
			t.Errorf("%v: granularity %d, want %d", tc.bc, g, tc.gran)
		}
		if err := cc.accept(tc.bc.Name, tc.bc.Metadata); (err == nil) != tc.accept {
			t.Errorf("%v: accept %v", tc.bc, err)
		}
		c := cc.forBlock(tc.bc)
		switch fc, ok := c.(frameCodec); {
		case tc.bound == "-":
			if c != def {
				t.Errorf("%v: compressor %v, want the block compression", tc.bc, c.Compression())
			}
		case tc.bound == "":
			if c != null {
				t.Errorf("%v: compressor %v, want null", tc.bc, c.Compression())
			}
		case !ok || fc.bound != tc.bound:
			t.Errorf("%v: compressor %#v", tc.bc, c)
		}
	}
	cc.forBlock(wf(many))
	if n := strings.Count(log.String(), "warning: [pcmaudio/waveform] cannot compress blocks with metadata "+many); n != 1 {
		t.Errorf("%d warnings: %q", n, log.String())
	}
}

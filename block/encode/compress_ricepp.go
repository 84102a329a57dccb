package encode

import (
	"encoding/json"
	"fmt"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/block/ricepp"
)

// riceppCompressor is "ricepp:block_size=N" (16 to 512, default 128), the
// reference's options. Like FLAC it needs to know the data's layout: the
// fits/image category metadata, which ForMetadata binds it to.
type riceppCompressor struct {
	blockSize int
}

func newRiceppCompressor(so *specOptions) (Compressor, error) {
	bs, err := so.int("block_size", 128, 16, 512)
	if err != nil {
		return nil, err
	}
	return &riceppCompressor{blockSize: bs}, nil
}

func (r *riceppCompressor) Compression() block.Compression { return block.CompRICEPP }

// Compress fails: RICEPP needs the pixel layout (ForMetadata).
func (r *riceppCompressor) Compress([]byte) ([]byte, error) {
	return nil, fmt.Errorf("ricepp compresses only image data of a known layout (category fits): %w", block.ErrUnsupported)
}

// fitsLayout is the category metadata the fits categorizer writes for
// fits/image, as the reference's.
type fitsLayout struct {
	Endianness     string `json:"endianness"`
	BytesPerSample int    `json:"bytes_per_sample"`
	UnusedLSBCount int    `json:"unused_lsb_count"`
	ComponentCount int    `json:"component_count"`
}

// ForMetadata binds r to the pixel layout of a fits/image category; its
// blocks then hold whole pixels of every component (MetadataCompressor).
// The layouts accepted are the reference's: 2 bytes per sample, 1 or 2
// components, at most 8 unused low bits.
func (r *riceppCompressor) ForMetadata(metadataJSON string) (Compressor, Constraints, error) {
	var m fitsLayout
	if err := json.Unmarshal([]byte(metadataJSON), &m); err != nil {
		return nil, Constraints{}, fmt.Errorf("ricepp: category metadata %q: %w", metadataJSON, err)
	}
	if m.Endianness != "big" && m.Endianness != "little" {
		return nil, Constraints{}, fmt.Errorf("ricepp: endianness %q is neither big nor little", m.Endianness)
	}
	if m.BytesPerSample != 2 || m.ComponentCount < 1 || m.ComponentCount > 2 || m.UnusedLSBCount < 0 || m.UnusedLSBCount > 8 {
		return nil, Constraints{}, fmt.Errorf("ricepp: unsupported layout %s (2 bytes per sample, 1 or 2 components, up to 8 unused bits)", metadataJSON)
	}
	p := ricepp.Params{
		BlockSize: r.blockSize, Components: m.ComponentCount, BytesPerSample: m.BytesPerSample,
		UnusedLSBs: m.UnusedLSBCount, BigEndian: m.Endianness == "big",
	}
	if err := p.Validate(); err != nil {
		return nil, Constraints{}, fmt.Errorf("ricepp: %w", err)
	}
	return riceppBound{p}, Constraints{Granularity: m.ComponentCount * m.BytesPerSample}, nil
}

type riceppBound struct{ p ricepp.Params }

func (b riceppBound) Compression() block.Compression { return block.CompRICEPP }
func (b riceppBound) Compress(src []byte) ([]byte, error) {
	if len(src)%(b.p.Components*b.p.BytesPerSample) != 0 {
		return nil, fmt.Errorf("ricepp: %d bytes are not whole %d-byte pixels: %w", len(src), b.p.Components*b.p.BytesPerSample, block.ErrUnsupported)
	}
	return riceppPayload(src, b.p)
}

// riceppPayload returns the payload of a RICEPP block holding data, as
// the reference writes it.
func riceppPayload(data []byte, p ricepp.Params) ([]byte, error) {
	out, err := ricepp.Encode(block.AppendRiceppHeader(nil, len(data), p), data, p)
	if err != nil {
		return nil, fmt.Errorf("ricepp: %w", err)
	}
	return out, nil
}

package writer

import (
	"fmt"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/block/encode"
)

// compressors caches compressors by spec: setting up an encoder (zstd at
// high levels) costs more than compressing a metadata section.
type compressors map[string]encode.Compressor

func (c compressors) get(spec string) (encode.Compressor, error) {
	if comp, ok := c[spec]; ok {
		return comp, nil
	}
	comp, err := encode.NewCompressor(spec)
	if err != nil {
		return nil, err
	}
	c[spec] = comp
	return comp, nil
}

// prepare sets up the compressors for specs, so that encodeSection with
// them only reads c and can run beside other users.
func (c compressors) prepare(specs ...string) error {
	for _, spec := range specs {
		if _, err := c.get(spec); err != nil {
			return err
		}
	}
	return nil
}

// encodedSection is a section compressed ahead of its writing.
type encodedSection struct {
	t   block.SectionType
	ct  block.Compression
	out []byte
}

// encodeSection compresses payload with spec for a section of type t.
// The metadata keeps the smallest payload of the settings of spec worth
// trying (encode.CompressSectionSmallest): it is one section per image, so
// compressing it twice costs a second or two where a bad setting can cost
// a tenth of its size.
func (c compressors) encodeSection(t block.SectionType, spec string, payload []byte) (encodedSection, error) {
	comp, err := c.get(spec)
	if err != nil {
		return encodedSection{}, fmt.Errorf("%s compression: %w", t, err)
	}
	compress := encode.CompressSection
	if t == block.SectionMetadata {
		compress = encode.CompressSectionSmallest
	}
	ct, out, err := compress(comp, payload)
	if err != nil {
		return encodedSection{}, fmt.Errorf("compressing %s: %w", t, err)
	}
	return encodedSection{t, ct, out}, nil
}

// writeSection compresses payload with spec and writes it as a section of
// type t.
func (c compressors) writeSection(w *block.Writer, t block.SectionType, spec string, payload []byte) error {
	s, err := c.encodeSection(t, spec, payload)
	if err != nil {
		return err
	}
	return w.WriteSection(s.t, s.ct, s.out)
}

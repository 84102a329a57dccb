package writer

import (
	"fmt"

	"github.com/godwarfs/godwarfs/block"
)

// compressors caches compressors by spec: setting up an encoder (zstd at
// high levels) costs more than compressing a metadata section.
type compressors map[string]block.Compressor

func (c compressors) get(spec string) (block.Compressor, error) {
	if comp, ok := c[spec]; ok {
		return comp, nil
	}
	comp, err := block.NewCompressor(spec)
	if err != nil {
		return nil, err
	}
	c[spec] = comp
	return comp, nil
}

// writeSection compresses payload with spec and writes it as a section of
// type t.
func (c compressors) writeSection(w *block.Writer, t block.SectionType, spec string, payload []byte) error {
	comp, err := c.get(spec)
	if err != nil {
		return fmt.Errorf("%s compression: %w", t, err)
	}
	ct, out, err := block.CompressSection(comp, payload)
	if err != nil {
		return fmt.Errorf("compressing %s: %w", t, err)
	}
	return w.WriteSection(t, ct, out)
}

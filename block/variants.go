package block

import "fmt"

// variedCompressor is implemented by compressors that have other settings
// worth trying on a small input; see Variants.
type variedCompressor interface {
	variants() ([]Compressor, error)
}

// Variants returns c followed by compressors of the same algorithm, at the
// same level, set differently or by another encoder: each payload decodes
// the same way, but no one setting is smallest for every input. It is
// meant for a section compressed once per image whose size matters, the
// metadata, with CompressSmallest; a block is too costly to compress more
// than once. Compressors without variants give c alone.
func Variants(c Compressor) ([]Compressor, error) {
	v, ok := c.(variedCompressor)
	if !ok {
		return []Compressor{c}, nil
	}
	more, err := v.variants()
	if err != nil {
		return nil, err
	}
	return append([]Compressor{c}, more...), nil
}

// CompressSmallest is CompressSection with each of cs, keeping the
// smallest payload: the first of equals, NONE when none is smaller than
// src. The compressors must share an algorithm (see Variants).
func CompressSmallest(cs []Compressor, src []byte) (Compression, []byte, error) {
	bestC, best := CompNone, src
	for _, c := range cs {
		ct, out, err := CompressSection(c, src)
		if err != nil {
			return 0, nil, err
		}
		if len(out) < len(best) {
			bestC, best = ct, out
		}
	}
	return bestC, best, nil
}

// zstdVariantLevel is the lowest level with variants: the "ultra" levels,
// whose optimal parser takes matches from 3 bytes. On tabular data (the
// metadata's rows of fixed width) those short matches cost more than
// they save; 4 bytes, or the pure-Go encoder's parser, did better by 5 to
// 15% on the metadata of large trees, and worse on that of others.
const zstdVariantLevel = 20

// pureZstd returns the pure-Go encoder at level.
func pureZstd(level int) (Compressor, error) {
	so := &specOptions{algo: "zstd", opts: map[string]string{"level": fmt.Sprint(level)}, used: map[string]bool{}}
	return newZstdCompressor(so)
}

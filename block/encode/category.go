package encode

// Constraints are what a compressor needs of the blocks it is given, as
// the reference's compression constraints.
type Constraints struct {
	// Granularity is the frame size in bytes: blocks must hold whole
	// frames, and the segmenter then matches whole frames only (0 or 1:
	// any size). FLAC needs channels times bytes per sample, RICEPP
	// components times bytes per sample.
	Granularity int
}

// MetadataCompressor is implemented by compressors whose encoding depends
// on the category metadata of a block: the JSON that the pcmaudio and fits
// categorizers give the pcmaudio/waveform and fits/image categories (e.g.
// {"bits_per_sample":16,"bytes_per_sample":2,"endianness":"little",
// "number_of_channels":2,"padding":"lsb","signedness":"signed"}). A
// writer calls ForMetadata once for each distinct metadata of a category
// and compresses that category's blocks with the compressor it returns.
//
// Compressors that do not implement it take blocks of any category as
// plain bytes (zstd, lzma, ...), as with the reference.
type MetadataCompressor interface {
	Compressor
	// ForMetadata returns the compressor for blocks with the given
	// category metadata, and the constraints on those blocks. An error
	// says the compressor cannot take such data (the reference's
	// metadata requirements, e.g. FLAC and 64 channels): the categorizer
	// then leaves such files uncategorized, with a warning.
	ForMetadata(metadataJSON string) (Compressor, Constraints, error)
}

// ForMetadata returns the compressor and constraints for blocks of c with
// the given category metadata: c's own ForMetadata if it has one, else c
// unconstrained.
func ForMetadata(c Compressor, metadataJSON string) (Compressor, Constraints, error) {
	if mc, ok := c.(MetadataCompressor); ok {
		return mc.ForMetadata(metadataJSON)
	}
	return c, Constraints{}, nil
}

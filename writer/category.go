package writer

import (
	"fmt"
	"io"
	"sync"

	"github.com/godwarfs/godwarfs/block/encode"
	"github.com/godwarfs/godwarfs/dedup"
)

// categoryCompression picks the compressor of each block from its
// category (Target.CategoryCompression, else the block compression) and
// category metadata: a compressor that depends on the metadata
// (encode.MetadataCompressor, e.g. FLAC for pcmaudio/waveform) is bound to
// each distinct metadata once, and its constraints (the frame size) go to
// the segmenter. The categorizers ask it (accept) whether a file's layout
// can be stored, as the reference's categorizers check their
// compressor's metadata requirements.
type categoryCompression struct {
	def  encode.Compressor
	cats map[string]encode.Compressor
	log  io.Writer // warnings (nil: none)

	mu     sync.Mutex
	bound  map[dedup.BlockCategory]boundCompressor
	warned map[dedup.BlockCategory]bool
}

type boundCompressor struct {
	c   encode.Compressor
	cc  encode.Constraints
	err error
}

// resolve returns the compressor and constraints for blocks of bc.
func (cc *categoryCompression) resolve(bc dedup.BlockCategory) boundCompressor {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if b, ok := cc.bound[bc]; ok {
		return b
	}
	c, ok := cc.cats[bc.Name]
	if !ok {
		c = cc.def
	}
	var b boundCompressor
	b.c, b.cc, b.err = encode.ForMetadata(c, bc.Metadata)
	if cc.bound == nil {
		cc.bound = map[dedup.BlockCategory]boundCompressor{}
	}
	cc.bound[bc] = b
	return b
}

// accept is dedup.Options.AcceptCategory.
func (cc *categoryCompression) accept(category, metadataJSON string) error {
	return cc.resolve(dedup.BlockCategory{Name: category, Metadata: metadataJSON}).err
}

// granularity is dedup.Options.Granularity.
func (cc *categoryCompression) granularity(category, metadataJSON string) int {
	b := cc.resolve(dedup.BlockCategory{Name: category, Metadata: metadataJSON})
	if b.err != nil {
		return 1
	}
	return max(1, b.cc.Granularity)
}

// forBlock returns the compressor of a block of bc. Should the
// category's compressor refuse the metadata (the categorizer asks first,
// so only data it did not check gets here), the block compression is
// used instead, with a warning once per category and metadata.
func (cc *categoryCompression) forBlock(bc dedup.BlockCategory) encode.Compressor {
	b := cc.resolve(bc)
	if b.err == nil {
		return b.c
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if !cc.warned[bc] && cc.log != nil {
		if cc.warned == nil {
			cc.warned = map[dedup.BlockCategory]bool{}
		}
		cc.warned[bc] = true
		fmt.Fprintf(cc.log, "warning: [%s] cannot compress blocks with metadata %s (%v); using the block compression %s\n",
			bc.Name, bc.Metadata, b.err, cc.def.Compression())
	}
	return cc.def
}

// fallback returns the block compression for block i of category bc,
// whose own compressor could not store it (err: a FLAC block whose pad
// bits hold data, which FLAC would lose), and says so.
func (cc *categoryCompression) fallback(i int, bc dedup.BlockCategory, err error) encode.Compressor {
	if cc.log != nil {
		cc.mu.Lock()
		fmt.Fprintf(cc.log, "warning: [%s] block %d: %v; using the block compression %s\n", bc.Name, i, err, cc.def.Compression())
		cc.mu.Unlock()
	}
	return cc.def
}

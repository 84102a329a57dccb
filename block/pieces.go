package block

import (
	"errors"
	"fmt"
	"sort"
)

// Pieces is the layout of a block payload that decodes in parts: an lzma
// payload written as one xz stream of several xz blocks, whose index at
// the end of the stream says where each starts and how much it decodes
// to. A reader of a few bytes of the block then decodes the one piece
// holding them (ReadPiece) instead of the block from its start.
type Pieces struct {
	starts []int64   // uncompressed offset of each piece, and the total last
	blocks []xzBlock // offsets relative to the payload
}

// Len is the number of pieces.
func (p *Pieces) Len() int { return len(p.blocks) }

// Size is the uncompressed size of the whole block.
func (p *Pieces) Size() int64 { return p.starts[len(p.starts)-1] }

// Range returns the uncompressed bytes [start, end) of piece i.
func (p *Pieces) Range(i int) (start, end int64) { return p.starts[i], p.starts[i+1] }

// Find returns the piece holding uncompressed byte off (0 <= off < Size).
func (p *Pieces) Find(off int64) int {
	return sort.Search(len(p.blocks), func(i int) bool { return p.starts[i+1] > off }) // first piece ending after off
}

// Stored is the number of payload bytes piece i takes.
func (p *Pieces) Stored(i int) int64 { return (p.blocks[i].unpadded + 3) &^ 3 }

// xzTailRead is how much of a payload's end Pieces reads at first: the
// footer and the index of a block of many xz blocks (a few bytes each).
const xzTailRead = 4096

// Pieces reads the xz index of block section s and returns its pieces, or
// nil when s does not decode in parts: it is not lzma, or holds a single
// xz block, or is not one xz stream (stream padding, several streams) and
// is then left to the whole-payload decoder. It reads only the end and
// the first bytes of the payload, and checks them (CRCs of the footer,
// index and stream header, sizes within the payload and the limit), not
// the section checksum: the xz blocks' own checks guard the data.
func (im *Image) Pieces(s Section, limit int64) (*Pieces, error) {
	s, err := im.Header(s)
	if err != nil {
		return nil, err
	}
	if !extraCodecs || s.Compression != CompLZMA {
		return nil, nil
	}
	if err := im.checkBounds(s); err != nil {
		return nil, err
	}
	read := func(b []byte, off int64) error { return im.readAt(b, s.DataOffset+off) }
	p, err := piecesOf(s.Length, read, limit)
	if err != nil {
		return nil, im.sectionErr(s, err, "xz index")
	}
	return p, nil
}

// piecesOf reads the pieces of a payload of n bytes through read (at
// offsets within the payload).
func piecesOf(n int64, read func(b []byte, off int64) error, limit int64) (*Pieces, error) {
	if n < 2*xzStreamHeaderLen {
		return nil, corruptf("xz stream too short (%d bytes)", n)
	}
	tail := make([]byte, min(n, xzTailRead))
	if err := read(tail, n-int64(len(tail))); err != nil {
		return nil, err
	}
	foot := tail[len(tail)-12:]
	if allZero(foot[8:]) {
		return nil, nil // stream padding: not written by a piece writer
	}
	indexSize, err := xzFooter(foot)
	if err != nil {
		return nil, err
	}
	if indexSize > n-2*xzStreamHeaderLen {
		return nil, corruptf("xz index size %d exceeds stream", indexSize)
	}
	if need := indexSize + 12; need > int64(len(tail)) {
		tail = make([]byte, need)
		if err := read(tail, n-need); err != nil {
			return nil, err
		}
		foot = tail[len(tail)-12:]
	}
	idx := tail[int64(len(tail))-12-indexSize : len(tail)-12]
	blocks, padded, total, err := xzIndex(idx, n)
	if err != nil {
		return nil, err
	}
	if total > limit {
		return nil, tooLarge(total, limit)
	}
	if xzStreamHeaderLen+padded+indexSize+12 != n {
		// Several streams or padding: the whole-payload decoder's.
		return nil, nil
	}
	if len(blocks) < 2 {
		return nil, nil
	}
	var hdr [xzStreamHeaderLen]byte
	if err := read(hdr[:], 0); err != nil {
		return nil, err
	}
	if err := xzStreamHeader(hdr[:], foot); err != nil {
		return nil, err
	}
	if _, err := xzCheckSize(hdr[7]); err != nil {
		return nil, err
	}
	p := &Pieces{starts: make([]int64, len(blocks)+1), blocks: blocks}
	for i := range blocks {
		blocks[i].offset += xzStreamHeaderLen
		blocks[i].check = hdr[7]
		p.starts[i+1] = p.starts[i] + blocks[i].uncompressed
	}
	return p, nil
}

// ReadPiece reads and decodes piece i of block section s, whose pieces p
// are, into a buffer from alloc (called once with the piece's size). raw
// is a buffer for the compressed bytes, returned for reuse.
func (im *Image) ReadPiece(s Section, p *Pieces, i int, raw []byte, alloc func(n int) ([]byte, error)) (data, rawBuf []byte, err error) {
	if !extraCodecs {
		return nil, raw, fmt.Errorf("%s: %w", im.name, coreOnly(CompLZMA))
	}
	if i < 0 || i >= p.Len() {
		return nil, raw, fmt.Errorf("%s: block piece %d out of range (%d pieces)", im.name, i, p.Len())
	}
	if s, err = im.Header(s); err != nil {
		return nil, raw, err
	}
	b := p.blocks[i]
	stored := p.Stored(i)
	if int64(b.offset)+stored > s.Length {
		return nil, raw, im.sectionErr(s, ErrCorrupt, "xz block %d beyond the payload", i)
	}
	raw = outBuf(raw, stored)
	if err := im.readAt(raw, s.DataOffset+int64(b.offset)); err != nil {
		return nil, raw, im.sectionErr(s, err, "read xz block %d", i)
	}
	data, err = p.decode(raw, i, alloc)
	if err != nil {
		if ae, ok := errors.AsType[allocError](err); ok {
			return nil, raw, ae.err
		}
		return nil, raw, im.sectionErr(s, err, "decompress lzma")
	}
	return data, raw, nil
}

// allocError is an error of the caller's alloc, passed on as it is.
type allocError struct{ err error }

func (e allocError) Error() string { return e.err.Error() }

// decode decodes piece i from raw, its stored bytes, into a buffer from
// alloc.
func (p *Pieces) decode(raw []byte, i int, alloc func(n int) ([]byte, error)) ([]byte, error) {
	local := p.blocks[i]
	local.offset = 0
	h, err := parseXZBlockHeader(raw, local, i)
	if err != nil {
		return nil, err
	}
	dst, err := alloc(int(local.uncompressed))
	if err != nil {
		return nil, allocError{err}
	}
	out, err := decodeXZBlock(raw, local, h, i, dst)
	if err != nil {
		return nil, err
	}
	if len(out) > 0 && &out[0] != &dst[0] {
		copy(dst, out)
	}
	return dst[:len(out)], nil
}

// Package lz4hc is an LZ4 block encoder in the manner of liblz4's LZ4HC at
// levels 1 to 9: a hash-chain match finder over the 64 KiB window with a
// per-level limit on how many chain entries it tries, and a lazy parse
// that weighs up to three overlapping matches before writing the first,
// so that fewer bytes end up as literals than with a greedy parse.
//
// The output is a plain LZ4 block, readable by any LZ4 block decoder.
package lz4hc

import (
	"errors"
	"fmt"
)

// LZ4 block format limits.
const (
	minMatch    = 4     // shortest match the format can express
	lastLits    = 5     // the block's last bytes must be literals
	mfLimit     = 12    // no match may start in the block's last bytes
	maxOffset   = 65535 // farthest match the 16-bit offset can reach
	runMask     = 15    // literal length that spills into extra bytes
	mlMask      = 15    // match length (minus minMatch) that spills
	minCompress = mfLimit + 1
	// maxInput is liblz4's LZ4_MAX_INPUT_SIZE.
	maxInput = 0x7E000000
)

// Match finder tables.
const (
	hashLog   = 15
	hashSize  = 1 << hashLog
	chainSize = 1 << 16
	chainMask = chainSize - 1
	// hashBase is added to positions stored in the hash table, so that a
	// cleared entry (0) lies outside every window.
	hashBase = chainSize
)

// DefaultLevel is the level used for 0 or a negative level.
const DefaultLevel = 9

// ErrShortBuffer reports that the block did not fit in dst.
var ErrShortBuffer = errors.New("lz4hc: compressed block does not fit in the output buffer")

// Encoder compresses LZ4 blocks. Its tables are kept between calls to
// spare the allocation; an Encoder must not be used by two goroutines at
// once.
type Encoder struct {
	attempts int
	runs     bool // use the shortcut through runs of one byte value

	head  [hashSize]uint32  // newest position+hashBase per hash of 4 bytes
	chain [chainSize]uint16 // distance back to the previous position with the same hash
	next  int               // first position not yet in the tables
	src   []byte            // block being compressed
	limit int               // matches end by here: len(src)-lastLits
	mfl   int               // matches start by here: len(src)-mfLimit
}

// NewEncoder returns an encoder for an LZ4HC level. Levels 1 to 9 are
// liblz4's hash-chain levels: level 9 tries up to 256 earlier positions
// per search, each level below half as many, down to 2 at levels 1 and
// 2. Levels 10 to 12, which liblz4
// encodes with its optimal parser, are encoded as level 9 here. 0 or less
// is DefaultLevel.
func NewEncoder(level int) *Encoder {
	e := &Encoder{}
	e.SetLevel(level)
	return e
}

// SetLevel changes the level of later blocks; see NewEncoder.
func (e *Encoder) SetLevel(level int) {
	if level <= 0 {
		level = DefaultLevel
	}
	level = min(max(level, 2), 9)
	e.attempts = 1 << (level - 1)
	// Following a run chain step by step costs one attempt per byte, so
	// liblz4 skips along runs when the search is long enough to matter.
	e.runs = e.attempts > 128
}

// CompressBlock writes src as one LZ4 block into dst and returns its
// length. If the block does not fit in dst it returns ErrShortBuffer and
// may have overwritten any part of dst, but nothing beyond it. A dst of
// CompressBound(len(src)) bytes always suffices.
func (e *Encoder) CompressBlock(src, dst []byte) (int, error) {
	if len(src) > maxInput {
		return 0, fmt.Errorf("lz4hc: input of %d bytes exceeds the LZ4 limit of %d", len(src), maxInput)
	}
	w := writer{dst: dst[:len(dst):len(dst)], src: src}
	if len(src) >= minCompress {
		e.reset(src)
		ok := e.parse(&w)
		e.src = nil
		if !ok {
			return 0, ErrShortBuffer
		}
	}
	if !w.literals(len(src)) {
		return 0, ErrShortBuffer
	}
	return w.n, nil
}

// CompressBound is the largest block CompressBlock writes for n bytes.
func CompressBound(n int) int { return n + n/255 + 16 }

func (e *Encoder) reset(src []byte) {
	clear(e.head[:])
	// The chain needs no clearing: every entry is written when its
	// position is inserted, before any search can reach it.
	e.next = 0
	e.src = src
	e.limit = len(src) - lastLits
	e.mfl = len(src) - mfLimit
}

package flac

import (
	"encoding/binary"
	"math/bits"
)

// bitReader reads big-endian bit fields from a byte slice. cache holds the
// next n unread bits left-aligned; bits below them are either zero or the
// stream's following bits, so OR-ing a reload over them is harmless.
type bitReader struct {
	buf   []byte
	pos   int // next byte of buf not yet in cache
	cache uint64
	n     uint
}

func (br *bitReader) reset(buf []byte) {
	*br = bitReader{buf: buf}
}

// refill tops the cache up to at least 56 bits while input remains.
func (br *bitReader) refill() {
	if br.n > 56 {
		return
	}
	if br.pos+8 <= len(br.buf) {
		v := binary.BigEndian.Uint64(br.buf[br.pos:])
		br.cache |= v >> br.n
		k := (63 - br.n) >> 3
		br.pos += int(k)
		br.n += k << 3
		return
	}
	for br.n <= 56 && br.pos < len(br.buf) {
		br.cache |= uint64(br.buf[br.pos]) << (56 - br.n)
		br.pos++
		br.n += 8
	}
}

// read returns the next k bits (k <= 56) as an unsigned value.
func (br *bitReader) read(k uint) (uint64, error) {
	if br.n < k {
		br.refill()
		if br.n < k {
			return 0, errShort
		}
	}
	v := br.cache >> (64 - k)
	if k == 0 {
		v = 0
	}
	br.cache <<= k
	br.n -= k
	return v, nil
}

// readSigned returns the next k bits (1 <= k <= 56) as a two's complement
// value.
func (br *bitReader) readSigned(k uint) (int64, error) {
	v, err := br.read(k)
	if err != nil {
		return 0, err
	}
	return int64(v<<(64-k)) >> (64 - k), nil
}

// unary counts zero bits up to the next one bit and consumes them all.
// The count is bounded by the input, and callers cap it further.
func (br *bitReader) unary() (uint64, error) {
	var q uint64
	for {
		z := uint(bits.LeadingZeros64(br.cache))
		if z < br.n {
			br.cache <<= z + 1
			br.n -= z + 1
			return q + uint64(z), nil
		}
		q += uint64(br.n)
		br.cache, br.n = 0, 0
		br.refill()
		if br.n == 0 {
			return 0, errShort
		}
	}
}

// alignByte drops the bits up to the next byte boundary.
func (br *bitReader) alignByte() {
	r := br.n & 7
	br.cache <<= r
	br.n -= r
}

// bytePos is the offset in buf of the next unread (byte-aligned) bit.
func (br *bitReader) bytePos() int { return br.pos - int(br.n>>3) }

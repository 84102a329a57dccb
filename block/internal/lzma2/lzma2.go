// Package lzma2 decodes LZMA2 data, the payload of an xz block, into a
// buffer that holds the whole output.
//
// The block readers know a block's decoded size before they decode it
// (from the xz index), so the output buffer itself serves as the LZMA
// dictionary: a match is a copy within it, with no circular window and
// no reader in between. Input is untrusted: every size, distance and
// chunk bound is checked, and a match reaching beyond the declared
// dictionary is refused, as liblzma refuses it.
package lzma2

import (
	"errors"
	"fmt"
)

// ErrCorrupt is wrapped by every error about the data.
var ErrCorrupt = errors.New("corrupt LZMA2 data")

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// Decode decodes the LZMA2 stream at the start of src, which must produce
// exactly size bytes, into dst[:size] when dst has room for them, else
// into new memory. dictSize is the dictionary size the stream declares:
// no match reaches further back. It returns the output and how many
// bytes of src the stream took, its end marker included.
//
// New memory starts at eight times len(src) (64 KiB at least) and grows
// as chunks arrive, so a declared size that the data does not back is
// refused before all of it is allocated.
func Decode(dst, src []byte, dictSize, size int) ([]byte, int, error) {
	if size < 0 {
		return nil, 0, fmt.Errorf("lzma2: negative size %d", size)
	}
	d := decoder{limit: size, dictSize: max(dictSize, 1)}
	if cap(dst) >= size {
		d.out = dst[:size]
	} else {
		d.out = make([]byte, min(size, max(8*len(src), 64<<10)))
	}
	n, err := d.run(src)
	if err != nil {
		return nil, n, err
	}
	if d.pos != size {
		return nil, n, corruptf("the stream ends after %d bytes, want %d", d.pos, size)
	}
	return d.out[:size], n, nil
}

const (
	numStates    = 12
	posBitsMax   = 4
	probInit     = 1 << 10
	lenLowBits   = 3
	lenMidBits   = 3
	lenHighBits  = 8
	lenLowSyms   = 1 << lenLowBits
	lenMidSyms   = 1 << lenMidBits
	minMatchLen  = 2
	lenToPos     = 4 // distance models by match length: 2, 3, 4, 5+
	posSlotBits  = 6
	startPosIdx  = 4  // slots below this are the distance itself
	endPosIdx    = 14 // slots from this on code their low 4 bits with align
	fullDists    = 1 << (endPosIdx >> 1)
	alignBits    = 4
	literalProbs = 0x300
)

// lenCoder holds the probabilities of one length decoder.
type lenCoder struct {
	choice  uint16
	choice2 uint16
	low     [1 << posBitsMax][lenLowSyms]uint16
	mid     [1 << posBitsMax][lenMidSyms]uint16
	high    [1 << lenHighBits]uint16
}

// probs are the adaptive probabilities, reset together.
type probs struct {
	isMatch    [numStates << posBitsMax]uint16
	isRep      [numStates]uint16
	isRepG0    [numStates]uint16
	isRepG1    [numStates]uint16
	isRepG2    [numStates]uint16
	isRep0Long [numStates << posBitsMax]uint16
	posSlot    [lenToPos][1 << posSlotBits]uint16
	posSpecial [fullDists - endPosIdx + 1]uint16
	align      [1 << alignBits]uint16
	matchLen   lenCoder
	repLen     lenCoder
	literal    [literalProbs << 4]uint16 // lc+lp is at most 4 in LZMA2
}

type decoder struct {
	out       []byte // the output so far, and room for more
	limit     int    // the size the output must have
	pos       int    // bytes of out decoded
	dictStart int    // where the dictionary was last reset
	dictSize  int

	lc, lp, pb uint
	state      uint32
	rep        [4]uint32
	p          probs
}

func (d *decoder) resetState() {
	d.state = 0
	d.rep = [4]uint32{}
	p := &d.p
	for _, s := range [][]uint16{p.isMatch[:], p.isRep[:], p.isRepG0[:], p.isRepG1[:], p.isRepG2[:], p.isRep0Long[:], p.posSpecial[:], p.align[:], p.literal[:literalProbs<<(d.lc+d.lp)]} {
		for i := range s {
			s[i] = probInit
		}
	}
	for i := range p.posSlot {
		for j := range p.posSlot[i] {
			p.posSlot[i][j] = probInit
		}
	}
	for _, lc := range []*lenCoder{&p.matchLen, &p.repLen} {
		lc.choice, lc.choice2 = probInit, probInit
		for i := range lc.low {
			for j := range lc.low[i] {
				lc.low[i][j] = probInit
			}
			for j := range lc.mid[i] {
				lc.mid[i][j] = probInit
			}
		}
		for i := range lc.high {
			lc.high[i] = probInit
		}
	}
}

// setProps reads the lc/lp/pb byte of an LZMA2 chunk.
func (d *decoder) setProps(b byte) error {
	if b > (4*5+4)*9+8 {
		return corruptf("properties byte %#x", b)
	}
	d.pb = uint(b / 45)
	b %= 45
	d.lp = uint(b / 9)
	d.lc = uint(b % 9)
	if d.lc+d.lp > 4 {
		return corruptf("lc %d + lp %d exceeds 4", d.lc, d.lp)
	}
	return nil
}

// room makes out hold n more bytes, which the limit must allow.
func (d *decoder) room(n int) error {
	if n > d.limit-d.pos {
		return corruptf("the data is longer than %d bytes", d.limit)
	}
	if d.pos+n > len(d.out) {
		grown := make([]byte, min(d.limit, max(2*len(d.out), d.pos+n)))
		copy(grown, d.out[:d.pos])
		d.out = grown
	}
	return nil
}

// run decodes the chunks of src until the end marker.
func (d *decoder) run(src []byte) (int, error) {
	i := 0
	needDictReset, needProps := true, true
	for {
		if i >= len(src) {
			return i, corruptf("the stream ends before its end marker")
		}
		c := src[i]
		i++
		if c == 0 {
			return i, nil
		}
		if c >= 0xE0 || c == 1 {
			needProps = true
			needDictReset = false
			d.dictStart = d.pos
		} else if needDictReset {
			return i, corruptf("the first chunk does not reset the dictionary")
		}
		if c < 0x80 {
			if c > 2 {
				return i, corruptf("chunk control byte %#x", c)
			}
			if i+2 > len(src) {
				return i, corruptf("truncated chunk header")
			}
			n := int(src[i])<<8 | int(src[i+1]) + 1
			i += 2
			if i+n > len(src) {
				return i, corruptf("an uncompressed chunk of %d bytes, %d left", n, len(src)-i)
			}
			if err := d.room(n); err != nil {
				return i, err
			}
			copy(d.out[d.pos:], src[i:i+n])
			d.pos += n
			i += n
			continue
		}
		if i+4 > len(src) {
			return i, corruptf("truncated chunk header")
		}
		unpacked := int(c&0x1F)<<16 | int(src[i])<<8 | int(src[i+1]) + 1
		packed := int(src[i+2])<<8 | int(src[i+3]) + 1
		i += 4
		switch {
		case c >= 0xC0:
			if i >= len(src) {
				return i, corruptf("truncated chunk header")
			}
			if err := d.setProps(src[i]); err != nil {
				return i, err
			}
			i++
			needProps = false
			d.resetState()
		case needProps:
			return i, corruptf("an LZMA chunk without properties")
		case c >= 0xA0:
			d.resetState()
		}
		if i+packed > len(src) {
			return i, corruptf("an LZMA chunk of %d bytes, %d left", packed, len(src)-i)
		}
		if err := d.room(unpacked); err != nil {
			return i, err
		}
		if err := d.chunk(src[i:i+packed], d.pos+unpacked); err != nil {
			return i, err
		}
		i += packed
	}
}

// litNext is the state after a literal.
var litNext = [numStates]uint32{0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 4, 5}

// chunk decodes one LZMA chunk, whose compressed bytes are in, up to
// out[end].
func (d *decoder) chunk(in []byte, end int) error {
	var r rangeDec
	if err := r.init(in); err != nil {
		return err
	}
	out := d.out[:end]
	pos, dictStart, dictSize := d.pos, d.dictStart, uint64(d.dictSize)
	state := d.state
	rep0, rep1, rep2, rep3 := d.rep[0], d.rep[1], d.rep[2], d.rep[3]
	pbMask, lpMask, lc := uint32(1)<<d.pb-1, uint32(1)<<d.lp-1, d.lc
	p := &d.p
	for pos < end {
		posState := uint32(pos) & pbMask
		if r.bit(&p.isMatch[state<<posBitsMax|posState]) == 0 {
			var prev uint32
			if pos > dictStart {
				prev = uint32(out[pos-1])
			}
			ls := ((uint32(pos)&lpMask)<<lc + prev>>(8-lc)) * literalProbs
			probs := p.literal[ls : ls+literalProbs : ls+literalProbs]
			var sym uint32
			if state < 7 {
				sym = uint32(r.tree(probs, 8))
			} else {
				if uint64(rep0) >= uint64(pos-dictStart) {
					return corruptf("a literal matched at distance %d, %d bytes decoded", uint64(rep0)+1, pos-dictStart)
				}
				sym = r.matched(probs, uint32(out[pos-int(rep0)-1]))
			}
			out[pos] = byte(sym)
			pos++
			state = litNext[state]
			continue
		}
		var n int
		if r.bit(&p.isRep[state]) == 0 {
			n = r.length(&p.matchLen, posState)
			if state < 7 {
				state = 7
			} else {
				state = 10
			}
			dist := r.distance(p, n)
			if dist == 0xFFFFFFFF {
				return corruptf("an end marker inside a chunk")
			}
			rep3, rep2, rep1, rep0 = rep2, rep1, rep0, dist
		} else {
			if r.bit(&p.isRepG0[state]) == 0 {
				if r.bit(&p.isRep0Long[state<<posBitsMax|posState]) == 0 {
					// One byte from rep0.
					if uint64(rep0) >= uint64(pos-dictStart) {
						return corruptf("a repeat at distance %d, %d bytes decoded", uint64(rep0)+1, pos-dictStart)
					}
					if state < 7 {
						state = 9
					} else {
						state = 11
					}
					out[pos] = out[pos-int(rep0)-1]
					pos++
					continue
				}
			} else {
				var dist uint32
				if r.bit(&p.isRepG1[state]) == 0 {
					dist = rep1
				} else {
					if r.bit(&p.isRepG2[state]) == 0 {
						dist = rep2
					} else {
						dist, rep3 = rep3, rep2
					}
					rep2 = rep1
				}
				rep1, rep0 = rep0, dist
			}
			n = r.length(&p.repLen, posState)
			if state < 7 {
				state = 8
			} else {
				state = 11
			}
		}
		if uint64(rep0) >= uint64(pos-dictStart) || uint64(rep0) >= dictSize {
			return corruptf("a match at distance %d, %d bytes decoded, dictionary of %d", uint64(rep0)+1, pos-dictStart, dictSize)
		}
		if n > end-pos {
			return corruptf("a match of %d bytes runs past its chunk", n)
		}
		from := pos - int(rep0) - 1
		if pos-from >= n {
			copy(out[pos:pos+n], out[from:from+n])
		} else {
			// Overlapping: the match repeats its own output.
			for k := range n {
				out[pos+k] = out[from+k]
			}
		}
		pos += n
	}
	r.normalize()
	if r.i != len(in) || r.code != 0 {
		return corruptf("a chunk's %d compressed bytes do not end where its data does", len(in))
	}
	d.pos, d.state = pos, state
	d.rep = [4]uint32{rep0, rep1, rep2, rep3}
	return nil
}

// rangeDec is the range decoder over one chunk (at least 5 bytes). The
// chunk's end checks that it read no further than the chunk.
type rangeDec struct {
	in   []byte
	i    int
	rng  uint32
	code uint32
}

func (r *rangeDec) init(in []byte) error {
	if len(in) < 5 || in[0] != 0 {
		return corruptf("a chunk's range coder does not start with 0")
	}
	r.in, r.i = in, 5
	r.rng = 0xFFFFFFFF
	r.code = uint32(in[1])<<24 | uint32(in[2])<<16 | uint32(in[3])<<8 | uint32(in[4])
	return nil
}

func (r *rangeDec) normalize() {
	if r.rng < 1<<24 {
		r.shift()
	}
}

// shift shifts the next input byte into the code. Past the end of the
// input it shifts the last byte again; the chunk's end then finds that
// more was read than there is.
func (r *rangeDec) shift() {
	r.rng <<= 8
	r.code = r.code<<8 | uint32(r.in[min(r.i, len(r.in)-1)])
	r.i++
}

// bit decodes one bit with probability *p and updates it. tree and
// matched repeat its steps with the coder's state in locals: the
// compiler inlines none of these, and they decode most of the bits.
func (r *rangeDec) bit(p *uint16) uint32 {
	if r.rng < 1<<24 {
		r.shift()
	}
	v := uint32(*p)
	bound := (r.rng >> 11) * v
	if r.code < bound {
		r.rng = bound
		*p = uint16(v + (2048-v)>>5)
		return 0
	}
	r.rng -= bound
	r.code -= bound
	*p = uint16(v - v>>5)
	return 1
}

// tree decodes an n-bit symbol, high bit first, with probs[1:1<<n].
func (r *rangeDec) tree(probs []uint16, n uint) int {
	rng, code, i, in := r.rng, r.code, r.i, r.in
	last := len(in) - 1
	m := uint32(1)
	for range n {
		if rng < 1<<24 {
			rng <<= 8
			code = code<<8 | uint32(in[min(i, last)])
			i++
		}
		p := &probs[m]
		v := uint32(*p)
		bound := (rng >> 11) * v
		// Without branches: a literal's bits are as good as random, and
		// a mispredicted branch costs more than the arithmetic of both
		// outcomes. bit is 1 when code >= bound.
		bit := uint32((uint64(code)-uint64(bound))>>63) ^ 1
		mask := -bit
		rng = bound + (rng-2*bound)&mask
		code -= bound & mask
		*p = uint16(v + (2048-v)>>5&^mask - v>>5&mask)
		m = m<<1 | bit
	}
	r.rng, r.code, r.i = rng, code, i
	return int(m - 1<<n)
}

// matched decodes a literal after a match, whose byte at rep0 is match:
// while its bits agree with match's, they select other probabilities.
func (r *rangeDec) matched(probs []uint16, match uint32) uint32 {
	rng, code, i, in := r.rng, r.code, r.i, r.in
	last := len(in) - 1
	sym, offs := uint32(1), uint32(0x100)
	for sym < 0x100 {
		if rng < 1<<24 {
			rng <<= 8
			code = code<<8 | uint32(in[min(i, last)])
			i++
		}
		match <<= 1
		mb := match & offs
		p := &probs[offs+mb+sym]
		v := uint32(*p)
		bound := (rng >> 11) * v
		// As in tree, without branches.
		bit := uint32((uint64(code)-uint64(bound))>>63) ^ 1
		mask := -bit
		rng = bound + (rng-2*bound)&mask
		code -= bound & mask
		*p = uint16(v + (2048-v)>>5&^mask - v>>5&mask)
		sym = sym<<1 | bit
		// offs keeps mb's bit while the decoded bits follow match's.
		offs &= mb ^ ^mask
	}
	r.rng, r.code, r.i = rng, code, i
	return sym
}

// direct decodes n bits of probability one half.
func (r *rangeDec) direct(n uint) uint32 {
	var v uint32
	for range n {
		r.normalize()
		r.rng >>= 1
		b := uint32(0)
		if r.code >= r.rng {
			r.code -= r.rng
			b = 1
		}
		v = v<<1 | b
	}
	return v
}

// length decodes a match length.
func (r *rangeDec) length(c *lenCoder, posState uint32) int {
	if r.bit(&c.choice) == 0 {
		return r.tree(c.low[posState][:], lenLowBits) + minMatchLen
	}
	if r.bit(&c.choice2) == 0 {
		return r.tree(c.mid[posState][:], lenMidBits) + minMatchLen + lenLowSyms
	}
	return r.tree(c.high[:], lenHighBits) + minMatchLen + lenLowSyms + lenMidSyms
}

// distance decodes the distance (less one) of a match of length n.
func (r *rangeDec) distance(p *probs, n int) uint32 {
	slot := r.tree(p.posSlot[min(n-minMatchLen, lenToPos-1)][:], posSlotBits)
	if slot < startPosIdx {
		return uint32(slot)
	}
	nd := uint(slot>>1) - 1
	dist := uint32(2|slot&1) << nd
	if slot < endPosIdx {
		// Low bits first, from the models of this slot.
		base := int(dist) - slot - 1
		i := uint32(1)
		for k := range nd {
			b := r.bit(&p.posSpecial[base+int(i)])
			i = i<<1 | b
			dist |= b << k
		}
		return dist
	}
	dist += r.direct(nd-alignBits) << alignBits
	i := uint32(1)
	for k := range uint(alignBits) {
		b := r.bit(&p.align[i])
		i = i<<1 | b
		dist |= b << k
	}
	return dist
}

package ricepp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// Limits of the format, as accepted by the reference decoder.
const (
	MaxBlockSize  = 512 // samples per component and block
	MaxComponents = 2
	Version       = 1 // newest codec version this package reads and writes

	selectorBits = 4
	maxRiceK     = 13 // largest k of a Rice-coded block (selector 14)
	selRaw       = 15 // selector of a verbatim block
	sampleBits   = 16
)

// ErrCorrupt is wrapped by every error about a malformed stream.
var ErrCorrupt = errors.New("corrupt ricepp stream")

// ErrParams is wrapped by every error about unusable Params.
var ErrParams = errors.New("invalid ricepp parameters")

// Params describes the samples of a stream; they come from the block
// header, not from the stream.
type Params struct {
	BlockSize      int  // samples per component in one coded block, 1..512
	Components     int  // interleaved components, 1 or 2
	BytesPerSample int  // must be 2
	UnusedLSBs     int  // low bits that are zero in every sample, 0..15
	BigEndian      bool // byte order of the samples
}

// Validate reports whether p is within the limits of the format (and of
// the reference decoder).
func (p Params) Validate() error {
	switch {
	case p.BlockSize < 1 || p.BlockSize > MaxBlockSize:
		return fmt.Errorf("block size %d not in 1..%d: %w", p.BlockSize, MaxBlockSize, ErrParams)
	case p.Components < 1 || p.Components > MaxComponents:
		return fmt.Errorf("component count %d not in 1..%d: %w", p.Components, MaxComponents, ErrParams)
	case p.BytesPerSample != 2:
		return fmt.Errorf("%d bytes per sample, only 2 supported: %w", p.BytesPerSample, ErrParams)
	case p.UnusedLSBs < 0 || p.UnusedLSBs >= sampleBits:
		return fmt.Errorf("unused lsb count %d not in 0..%d: %w", p.UnusedLSBs, sampleBits-1, ErrParams)
	}
	return nil
}

// frameSize is the number of bytes one sample of every component takes;
// the data must be a whole number of frames.
func (p Params) frameSize() int { return p.Components * 2 }

// MaxEncodedLen returns the most bytes Encode can produce for n bytes of
// samples under p (every block verbatim).
func MaxEncodedLen(n int, p Params) int {
	if p.Validate() != nil {
		return 0
	}
	// The samples take n bytes verbatim; on top come each component's
	// initial value and block selectors (counted in bits, not n*8, so that
	// this cannot overflow).
	perComp := n / p.frameSize()
	blocks := (perComp + p.BlockSize - 1) / p.BlockSize
	return n + ((sampleBits+selectorBits*blocks)*p.Components+7)/8
}

// value returns the codec value of the sample stored at b[0:2].
func (p Params) value(b0, b1 byte) uint32 {
	var s uint32
	if p.BigEndian {
		s = uint32(b0)<<8 | uint32(b1)
	} else {
		s = uint32(b1)<<8 | uint32(b0)
	}
	return s >> p.UnusedLSBs
}

// ---- decoder ----

// Decode decodes the RICEPP stream src into dst, whose length is the size
// of the uncompressed data (a multiple of 2 × p.Components); it returns
// dst. Every byte of dst is written. A stream that is malformed, too short
// or followed by extra bytes gives an error wrapping ErrCorrupt.
func Decode(dst, src []byte, p Params) ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if len(dst)%p.frameSize() != 0 {
		return nil, fmt.Errorf("output size %d is not a multiple of %d bytes (%d components of 2 bytes): %w",
			len(dst), p.frameSize(), p.Components, ErrCorrupt)
	}
	if len(dst) == 0 {
		if len(src) != 0 {
			return nil, fmt.Errorf("%d bytes of stream for no samples: %w", len(src), ErrCorrupt)
		}
		return dst, nil
	}
	d := decoder{br: bitReader{src: src}, p: p}
	if err := d.run(dst); err != nil {
		return nil, err
	}
	used := (d.br.consumed() + 7) / 8
	if used != len(src) {
		return nil, fmt.Errorf("%d trailing bytes after the stream: %w", len(src)-used, ErrCorrupt)
	}
	return dst, nil
}

type decoder struct {
	br   bitReader
	p    Params
	last [MaxComponents]uint32
}

func (d *decoder) run(dst []byte) error {
	nc := d.p.Components
	for c := range nc {
		v, err := d.br.read(sampleBits)
		if err != nil {
			return fmt.Errorf("initial value of component %d: %w", c, err)
		}
		d.last[c] = uint32(v)
	}
	chunk := d.p.BlockSize * d.p.frameSize()
	for off := 0; off < len(dst); off += chunk {
		end := min(off+chunk, len(dst))
		for c := range nc {
			if err := d.block(dst[off+2*c:end], c); err != nil {
				return fmt.Errorf("block at byte %d, component %d: %w", off, c, err)
			}
		}
	}
	return nil
}

// block decodes the samples of component c found at out[0:2],
// out[stride:stride+2], ... (out starts at the component's first sample).
func (d *decoder) block(out []byte, c int) error {
	stride := 2 * d.p.Components
	n := (len(out) + stride - 2) / stride // samples of this component
	sel, err := d.br.read(selectorBits)
	if err != nil {
		return fmt.Errorf("selector: %w", err)
	}
	switch {
	case sel == 0:
		d.fill(out, n, stride, d.last[c])
	case sel == selRaw:
		for i := range n {
			v, err := d.br.read(sampleBits)
			if err != nil {
				return fmt.Errorf("verbatim sample %d: %w", i, err)
			}
			o := out[i*stride : i*stride+2]
			o[0], o[1] = byte(v), byte(v>>8)
		}
		o := out[(n-1)*stride:]
		d.last[c] = d.p.value(o[0], o[1])
	default:
		last, err := d.rice(out, n, stride, uint(sel-1), d.last[c])
		if err != nil {
			return err
		}
		d.last[c] = last
	}
	return nil
}

// fill stores value v in all n samples.
func (d *decoder) fill(out []byte, n, stride int, v uint32) {
	w := uint16(v << d.p.UnusedLSBs)
	b0, b1 := byte(w), byte(w>>8)
	if d.p.BigEndian {
		b0, b1 = b1, b0
	}
	for i := range n {
		o := out[i*stride : i*stride+2]
		o[0], o[1] = b0, b1
	}
}

// rice decodes n Rice-coded samples with k low bits. The bit reader state
// is kept in locals: this loop is the decoder's hot path.
func (d *decoder) rice(out []byte, n, stride int, k uint, last uint32) (uint32, error) {
	br := &d.br
	acc, nb, pos, src := br.acc, br.n, br.pos, br.src
	shift := uint(d.p.UnusedLSBs)
	big := d.p.BigEndian
	mask := uint64(1)<<k - 1
	need := k + 1
	for i := range n {
		if nb < 32 {
			// Refill to at least 56 bits from a whole 8-byte load when
			// possible; bits above nb already hold the same stream bits.
			if pos+8 <= len(src) {
				acc |= binary.LittleEndian.Uint64(src[pos:]) << nb
				adv := (63 - nb) >> 3
				pos += int(adv)
				nb += adv * 8
			} else {
				for nb <= 56 && pos < len(src) {
					acc |= uint64(src[pos]) << nb
					pos++
					nb += 8
				}
			}
		}
		var q uint64
		z := uint(bits.TrailingZeros64(acc))
		if z+need <= nb {
			q = uint64(z)<<k | (acc>>(z+1))&mask
			acc >>= z + need
			nb -= z + need
		} else {
			// Long unary run or the end of the data: take the slow way.
			br.acc, br.n, br.pos = acc, nb, pos
			zeros, err := br.unary()
			if err != nil {
				return 0, fmt.Errorf("sample %d: %w", i, err)
			}
			r, err := br.read(k)
			if err != nil {
				return 0, fmt.Errorf("sample %d: %w", i, err)
			}
			q = zeros<<k | r
			acc, nb, pos = br.acc, br.n, br.pos
		}
		// Odd mapped differences are negative: -(q>>1)-1.
		last += uint32((q >> 1) ^ -(q & 1))
		w := uint16(last << shift)
		o := out[i*stride : i*stride+2]
		if big {
			o[0], o[1] = byte(w>>8), byte(w)
		} else {
			o[0], o[1] = byte(w), byte(w>>8)
		}
	}
	br.acc, br.n, br.pos = acc, nb, pos
	return last, nil
}

// bitReader reads an LSB-first bitstream. acc holds n valid bits; the bits
// above them are zero or the stream bits that follow, so OR-ing those
// bits in again when refilling is harmless.
type bitReader struct {
	src []byte
	pos int // next byte of src to load
	acc uint64
	n   uint
}

var errEOF = fmt.Errorf("stream ends early: %w", ErrCorrupt)

// consumed returns the number of bits read so far.
func (r *bitReader) consumed() int { return r.pos*8 - int(r.n) }

// fill loads whole bytes while there is room for them.
func (r *bitReader) fill() {
	for r.n <= 56 && r.pos < len(r.src) {
		r.acc |= uint64(r.src[r.pos]) << r.n
		r.pos++
		r.n += 8
	}
}

// read returns the next k bits (k <= 32).
func (r *bitReader) read(k uint) (uint64, error) {
	if r.n < k {
		r.fill()
		if r.n < k {
			return 0, errEOF
		}
	}
	v := r.acc & (uint64(1)<<k - 1)
	r.acc >>= k
	r.n -= k
	return v, nil
}

// unary reads a run of zero bits and the one bit ending it, and returns
// the run length. The run is bounded by the data, so this cannot hang.
func (r *bitReader) unary() (uint64, error) {
	var zeros uint64
	for {
		r.fill()
		if r.n == 0 {
			return 0, fmt.Errorf("unary code: %w", errEOF)
		}
		valid := r.acc
		if r.n < 64 {
			valid &= uint64(1)<<r.n - 1
		}
		if valid != 0 {
			z := uint(bits.TrailingZeros64(valid))
			zeros += uint64(z)
			r.acc >>= z + 1
			r.n -= z + 1
			return zeros, nil
		}
		zeros += uint64(r.n)
		r.acc, r.n = 0, 0
	}
}

// ---- encoder ----

// Encode appends the RICEPP stream of the samples in src (a multiple of
// 2 × p.Components bytes) to dst and returns the extended slice. The
// output is bit for bit what the reference encoder produces. Unused low
// bits that are not zero are dropped, as the reference does, except in
// blocks stored verbatim.
func Encode(dst, src []byte, p Params) ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if len(src)%p.frameSize() != 0 {
		return nil, fmt.Errorf("input size %d is not a multiple of %d bytes (%d components of 2 bytes): %w",
			len(src), p.frameSize(), p.Components, ErrParams)
	}
	if len(src) == 0 {
		return dst, nil
	}
	if need := MaxEncodedLen(len(src), p); cap(dst)-len(dst) < need {
		nd := make([]byte, len(dst), len(dst)+need)
		copy(nd, dst)
		dst = nd
	}
	e := encoder{w: bitWriter{out: dst}, p: p}
	nc := p.Components
	for c := range nc {
		e.last[c] = p.value(src[2*c], src[2*c+1])
		e.w.write(uint64(e.last[c]), sampleBits)
	}
	chunk := p.BlockSize * p.frameSize()
	for off := 0; off < len(src); off += chunk {
		end := min(off+chunk, len(src))
		for c := range nc {
			e.block(src[off+2*c:end], c)
		}
	}
	return e.w.flush(), nil
}

type encoder struct {
	w     bitWriter
	p     Params
	last  [MaxComponents]uint32
	delta [MaxBlockSize]uint16
}

func (e *encoder) block(in []byte, c int) {
	stride := 2 * e.p.Components
	n := (len(in) + stride - 2) / stride
	delta := e.delta[:n]
	last := e.last[c]
	var sum uint64
	for i := range delta {
		v := e.p.value(in[i*stride], in[i*stride+1])
		diff := uint16(v - last)
		// 16-bit zigzag: negative differences map to odd numbers.
		d := diff << 1
		if diff&0x8000 != 0 {
			d = ^d
		}
		delta[i] = d
		sum += uint64(d)
		last = v
	}
	e.last[c] = last
	if sum == 0 {
		e.w.write(0, selectorBits)
		return
	}
	k, cost := bestSplit(delta, sum)
	if k <= maxRiceK && cost < uint64(sampleBits*n) {
		e.w.write(uint64(k+1), selectorBits)
		for _, d := range delta {
			e.w.unary(uint(d >> k))
			e.w.write(uint64(d), k)
		}
		return
	}
	e.w.write(selRaw, selectorBits)
	for i := range n {
		e.w.write(uint64(in[i*stride])|uint64(in[i*stride+1])<<8, sampleBits)
	}
}

// riceCost is the number of bits Rice coding delta with k low bits takes.
func riceCost(delta []uint16, k uint) uint64 {
	var high uint64
	for _, d := range delta {
		high += uint64(d >> k)
	}
	return uint64(len(delta))*uint64(k+1) + high
}

// bestSplit picks k the way the reference does (see the package doc):
// start near log2 of the mean and walk while the cost does not grow.
func bestSplit(delta []uint16, sum uint64) (uint, uint64) {
	mean := sum / uint64(len(delta))
	start := uint(max(bits.Len64(mean)-2, 0))
	c0, c1 := riceCost(delta, start), riceCost(delta, start+1)
	k, cost, up := start+1, c1, true
	if c1 > c0 {
		k, cost, up = start, c0, false
	}
	if c0 == c1 {
		return k, cost
	}
	for k > 0 && k < maxRiceK+1 {
		next := k + 1
		if !up {
			next = k - 1
		}
		nc := riceCost(delta, next)
		if nc > cost {
			break
		}
		k, cost = next, nc
	}
	return k, cost
}

// bitWriter appends an LSB-first bitstream to out.
type bitWriter struct {
	out []byte
	acc uint64
	n   uint // bits in acc, < 64
}

// write appends the low k bits of v (k <= 32).
func (w *bitWriter) write(v uint64, k uint) {
	v &= uint64(1)<<k - 1
	w.acc |= v << w.n
	w.n += k
	if w.n >= 64 {
		w.out = binary.LittleEndian.AppendUint64(w.out, w.acc)
		w.n -= 64
		// The bits of v that did not fit; v>>k-n is zero when none.
		w.acc = 0
		if w.n > 0 {
			w.acc = v >> (k - w.n)
		}
	}
}

// unary appends z zero bits and a one bit.
func (w *bitWriter) unary(z uint) {
	for z >= 32 {
		w.write(0, 32)
		z -= 32
	}
	w.write(1<<z, z+1)
}

// flush appends the partial last byte(s) and returns the stream.
func (w *bitWriter) flush() []byte {
	for w.n > 0 {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
		w.n -= min(w.n, 8)
	}
	return w.out
}

// Package flac decodes FLAC streams (RFC 9639) held in memory, as libFLAC
// writes them: 4 to 32 bits per sample, 1 to 8 channels, any block size up
// to 65536, fixed and LPC predictors of any order, stereo decorrelation
// (including the 33-bit side channel of 32-bit audio), wasted bits and
// escaped residual partitions. Frame CRCs are checked.
//
// Decoding is bounded: a frame holds at most 65536 samples per channel, so
// a Decoder never holds more than 8 x 65536 samples, whatever the input
// says, and a corrupt stream gives an error wrapping ErrFormat that says
// what is wrong. It never panics and always makes progress.
//
// The package does not check the MD5 signature of the STREAMINFO block:
// its callers check their own, stronger, checksums.
package flac

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
)

// ErrFormat is wrapped by every error about a malformed stream.
var ErrFormat = errors.New("invalid FLAC stream")

var errShort = fmt.Errorf("data ends inside a frame: %w", ErrFormat)

// ErrBlockLimit is wrapped by the error for a frame longer than the limit
// set with SetMaxBlockSize.
var ErrBlockLimit = errors.New("frame longer than allowed")

func formatErr(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrFormat)...)
}

// MaxBlockSize is the largest number of samples per channel in a frame.
const MaxBlockSize = 65536

// MaxChannels is the largest number of channels FLAC can code.
const MaxChannels = 8

// StreamInfo is the STREAMINFO metadata block.
type StreamInfo struct {
	MinBlockSize, MaxBlockSize int
	MinFrameSize, MaxFrameSize int // bytes; 0 when unknown
	SampleRate                 int
	Channels                   int
	BitsPerSample              int
	TotalSamples               uint64 // per channel; 0 when unknown
	MD5                        [16]byte
}

// Frame is one decoded frame. Samples holds one slice per channel, each
// BlockSize long; it is reused by the next call to Decoder.Next.
type Frame struct {
	BlockSize     int
	BitsPerSample int
	Samples       [][]int64
}

// Decoder decodes the frames of one FLAC stream.
type Decoder struct {
	info  StreamInfo
	data  []byte
	pos   int // start of the next frame
	br    bitReader
	bufs  [MaxChannels][]int64
	frame Frame
	coefs [32]int64
	pred  predictor
	limit int // largest block size accepted; 0: MaxBlockSize
}

// SetMaxBlockSize makes Next refuse, before decoding or allocating
// anything for it, a frame of more than n samples per channel; a caller
// that knows how much output it still expects passes that.
func (d *Decoder) SetMaxBlockSize(n int) { d.limit = max(n, 1) }

// NewDecoder reads the "fLaC" marker and the metadata blocks of stream
// (STREAMINFO first; the others are skipped) and returns a Decoder
// positioned at the first frame.
func NewDecoder(stream []byte) (*Decoder, error) {
	if len(stream) < 4 || string(stream[:4]) != "fLaC" {
		return nil, formatErr("missing fLaC stream marker")
	}
	d := &Decoder{data: stream}
	pos := 4
	for first := true; ; first = false {
		if len(stream)-pos < 4 {
			return nil, formatErr("metadata block header at %d truncated", pos)
		}
		h := stream[pos : pos+4]
		last := h[0]&0x80 != 0
		typ := h[0] & 0x7f
		n := int(h[1])<<16 | int(h[2])<<8 | int(h[3])
		pos += 4
		if len(stream)-pos < n {
			return nil, formatErr("metadata block of type %d at %d claims %d bytes, %d left", typ, pos-4, n, len(stream)-pos)
		}
		if first != (typ == 0) {
			return nil, formatErr("STREAMINFO must be the first metadata block and only that (block type %d at %d)", typ, pos-4)
		}
		if typ == 127 {
			return nil, formatErr("metadata block type 127 is invalid")
		}
		if typ == 0 {
			if n != 34 {
				return nil, formatErr("STREAMINFO block of %d bytes, want 34", n)
			}
			d.info = parseStreamInfo(stream[pos : pos+34])
			if err := checkStreamInfo(&d.info); err != nil {
				return nil, err
			}
		}
		pos += n
		if last {
			break
		}
	}
	d.pos = pos
	return d, nil
}

func parseStreamInfo(b []byte) StreamInfo {
	var si StreamInfo
	si.MinBlockSize = int(b[0])<<8 | int(b[1])
	si.MaxBlockSize = int(b[2])<<8 | int(b[3])
	si.MinFrameSize = int(b[4])<<16 | int(b[5])<<8 | int(b[6])
	si.MaxFrameSize = int(b[7])<<16 | int(b[8])<<8 | int(b[9])
	si.SampleRate = int(b[10])<<12 | int(b[11])<<4 | int(b[12])>>4
	si.Channels = int(b[12]>>1&7) + 1
	si.BitsPerSample = int(b[12]&1)<<4 | int(b[13]>>4) + 1
	si.TotalSamples = uint64(b[13]&15)<<32 | uint64(b[14])<<24 | uint64(b[15])<<16 | uint64(b[16])<<8 | uint64(b[17])
	copy(si.MD5[:], b[18:34])
	return si
}

func checkStreamInfo(si *StreamInfo) error {
	if si.BitsPerSample < 4 {
		return formatErr("STREAMINFO says %d bits per sample, below the minimum of 4", si.BitsPerSample)
	}
	if si.MinBlockSize > si.MaxBlockSize {
		return formatErr("STREAMINFO minimum block size %d above maximum %d", si.MinBlockSize, si.MaxBlockSize)
	}
	return nil
}

// Info returns the stream's STREAMINFO block.
func (d *Decoder) Info() StreamInfo { return d.info }

// Offset returns the offset in the stream of the next frame.
func (d *Decoder) Offset() int { return d.pos }

// Next decodes the next frame. It returns io.EOF at the end of the data.
func (d *Decoder) Next() (*Frame, error) {
	if d.pos >= len(d.data) {
		return nil, io.EOF
	}
	start := d.pos
	if err := d.decodeFrame(); err != nil {
		return nil, fmt.Errorf("frame at offset %d: %w", start, err)
	}
	return &d.frame, nil
}

// channel assignments of the frame header
const (
	chanLeftSide  = 8
	chanSideRight = 9
	chanMidSide   = 10
)

func (d *Decoder) decodeFrame() error {
	start := d.pos
	br := &d.br
	br.reset(d.data[start:])
	h, err := br.read(32)
	if err != nil {
		return err
	}
	if h>>18 != 0x3ffe {
		return formatErr("no frame sync code (found %#04x)", h>>16)
	}
	if h>>16&1 != 0 {
		return formatErr("reserved bit after the sync code is set")
	}
	bsCode := h >> 12 & 15
	rateCode := h >> 8 & 15
	chanCode := int(h >> 4 & 15)
	bpsCode := h >> 1 & 7
	if h&1 != 0 {
		return formatErr("reserved bit in frame header is set")
	}
	// Coded frame or sample number, UTF-8 style, up to 7 bytes.
	b0, err := br.read(8)
	if err != nil {
		return err
	}
	if b0&0xc0 == 0x80 || b0 == 0xff {
		return formatErr("bad coded frame number lead byte %#02x", b0)
	}
	for extra := bits.LeadingZeros8(^uint8(b0)) - 1; extra > 0; extra-- {
		c, err := br.read(8)
		if err != nil {
			return err
		}
		if c&0xc0 != 0x80 {
			return formatErr("bad coded frame number continuation byte %#02x", c)
		}
	}
	var blockSize int
	switch {
	case bsCode == 0:
		return formatErr("reserved block size code 0")
	case bsCode == 1:
		blockSize = 192
	case bsCode <= 5:
		blockSize = 576 << (bsCode - 2)
	case bsCode == 6:
		v, err := br.read(8)
		if err != nil {
			return err
		}
		blockSize = int(v) + 1
	case bsCode == 7:
		v, err := br.read(16)
		if err != nil {
			return err
		}
		blockSize = int(v) + 1
	default:
		blockSize = 256 << (bsCode - 8)
	}
	if d.limit > 0 && blockSize > d.limit {
		return fmt.Errorf("frame of %d samples, at most %d allowed: %w (%w)", blockSize, d.limit, ErrBlockLimit, ErrFormat)
	}
	switch rateCode {
	case 12:
		_, err = br.read(8)
	case 13, 14:
		_, err = br.read(16)
	case 15:
		return formatErr("invalid sample rate code 15")
	}
	if err != nil {
		return err
	}
	var bps int
	switch bpsCode {
	case 0:
		bps = d.info.BitsPerSample
	case 3:
		return formatErr("reserved sample size code 3")
	default:
		bps = [8]int{1: 8, 2: 12, 4: 16, 5: 20, 6: 24, 7: 32}[bpsCode]
	}
	nch := chanCode + 1
	switch {
	case chanCode > chanMidSide:
		return formatErr("reserved channel assignment %d", chanCode)
	case chanCode >= chanLeftSide:
		nch = 2
	}
	// The header is byte aligned here; its CRC-8 follows.
	hdrEnd := br.bytePos()
	crc, err := br.read(8)
	if err != nil {
		return err
	}
	if got := crc8(d.data[start : start+hdrEnd]); uint64(got) != crc {
		return formatErr("frame header CRC-8 is %#02x, computed %#02x", crc, got)
	}

	for ch := 0; ch < nch; ch++ {
		if cap(d.bufs[ch]) < blockSize {
			d.bufs[ch] = make([]int64, blockSize, max(blockSize, 4096))
		}
		s := d.bufs[ch][:blockSize]
		sbps := bps
		if (chanCode == chanSideRight && ch == 0) || ((chanCode == chanLeftSide || chanCode == chanMidSide) && ch == 1) {
			sbps++ // the side channel needs one bit more
		}
		if err := d.decodeSubframe(s, sbps); err != nil {
			return fmt.Errorf("subframe %d: %w", ch, err)
		}
	}
	br.alignByte()
	crcEnd := br.bytePos()
	crc, err = br.read(16)
	if err != nil {
		return err
	}
	if got := crc16(d.data[start : start+crcEnd]); uint64(got) != crc {
		return formatErr("frame CRC-16 is %#04x, computed %#04x", crc, got)
	}
	d.pos = start + br.bytePos()

	if nch == 2 {
		decorrelate(chanCode, d.bufs[0][:blockSize], d.bufs[1][:blockSize])
	}
	d.frame.BlockSize = blockSize
	d.frame.BitsPerSample = bps
	d.frame.Samples = d.frame.Samples[:0]
	for ch := 0; ch < nch; ch++ {
		d.frame.Samples = append(d.frame.Samples, d.bufs[ch][:blockSize])
	}
	return nil
}

func decorrelate(code int, a, b []int64) {
	b = b[:len(a)]
	switch code {
	case chanLeftSide: // a: left, b: side
		for i := range a {
			b[i] = a[i] - b[i]
		}
	case chanSideRight: // a: side, b: right
		for i := range a {
			a[i] += b[i]
		}
	case chanMidSide: // a: mid, b: side
		for i := range a {
			side := b[i]
			mid := a[i]<<1 | side&1
			a[i] = (mid + side) >> 1
			b[i] = (mid - side) >> 1
		}
	}
}

func (d *Decoder) decodeSubframe(s []int64, bps int) error {
	br := &d.br
	h, err := br.read(8)
	if err != nil {
		return err
	}
	if h&0x80 != 0 {
		return formatErr("subframe header padding bit is set")
	}
	typ := int(h >> 1 & 63)
	wasted := 0
	if h&1 != 0 {
		u, err := br.unary()
		if err != nil {
			return err
		}
		if u >= uint64(bps)-1 {
			return formatErr("%d wasted bits in a %d-bit subframe", u+1, bps)
		}
		wasted = int(u) + 1
		bps -= wasted
	}
	ubps := uint(bps)
	switch {
	case typ == 0: // constant
		v, err := br.readSigned(ubps)
		if err != nil {
			return err
		}
		for i := range s {
			s[i] = v
		}
	case typ == 1: // verbatim
		for i := range s {
			v, err := br.readSigned(ubps)
			if err != nil {
				return err
			}
			s[i] = v
		}
	case typ >= 8 && typ <= 12: // fixed predictor
		order := typ - 8
		if err := d.warmup(s, order, ubps); err != nil {
			return err
		}
		d.pred.set(fixedCoefs[order], 0)
		if err := d.residual(s, order, &d.pred); err != nil {
			return err
		}
	case typ >= 32: // LPC
		order := typ - 31
		if err := d.warmup(s, order, ubps); err != nil {
			return err
		}
		v, err := br.read(9)
		if err != nil {
			return err
		}
		if v>>5 == 15 {
			return formatErr("invalid LPC coefficient precision code 15")
		}
		prec := uint(v>>5) + 1
		shift := int64(v&31) << 59 >> 59
		if shift < 0 {
			return formatErr("negative LPC shift %d", shift)
		}
		coefs := d.coefs[:order]
		// Stored reversed, so that coefs[j] multiplies s[i-order+j].
		for j := order - 1; j >= 0; j-- {
			c, err := br.readSigned(prec)
			if err != nil {
				return err
			}
			coefs[j] = c
		}
		d.pred.set(coefs, uint(shift))
		if err := d.residual(s, order, &d.pred); err != nil {
			return err
		}
	default:
		return formatErr("reserved subframe type %#02x", typ)
	}
	if wasted > 0 {
		for i := range s {
			s[i] <<= uint(wasted)
		}
	}
	return nil
}

func (d *Decoder) warmup(s []int64, order int, bps uint) error {
	if order > len(s) {
		return formatErr("predictor order %d above block size %d", order, len(s))
	}
	for i := 0; i < order; i++ {
		v, err := d.br.readSigned(bps)
		if err != nil {
			return err
		}
		s[i] = v
	}
	return nil
}

// residual decodes the coded residual into s[order:] and adds p's
// prediction to it, in the same pass where it can (riceLPC*).
func (d *Decoder) residual(s []int64, order int, p *predictor) error {
	br := &d.br
	v, err := br.read(6)
	if err != nil {
		return err
	}
	method := v >> 4
	if method > 1 {
		return formatErr("reserved residual coding method %d", method)
	}
	paramBits := uint(4 + method)
	escape := uint64(1)<<paramBits - 1
	porder := uint(v & 15)
	n := len(s)
	if n>>porder<<porder != n {
		return formatErr("block size %d not divisible into %d partitions", n, 1<<porder)
	}
	psize := n >> porder
	if psize < order {
		return formatErr("first partition of %d samples shorter than predictor order %d", psize, order)
	}
	pos := order
	for part := 0; part < 1<<porder; part++ {
		end := (part + 1) * psize
		k, err := br.read(paramBits)
		if err != nil {
			return err
		}
		if k == escape {
			eb, err := br.read(5)
			if err != nil {
				return err
			}
			if eb == 0 {
				clear(s[pos:end])
			} else {
				for i := pos; i < end; i++ {
					r, err := br.readSigned(uint(eb))
					if err != nil {
						return err
					}
					s[i] = r
				}
			}
			p.restore(s, pos, end)
		} else if err := br.ricePredicted(s, pos, end, uint(k), p); err != nil {
			return err
		}
		pos = end
	}
	return nil
}

// rice decodes len(out) Rice-coded residuals with parameter k (<= 30).
// A residual must fit in 32 bits, which bounds the quotient.
//
// The loop keeps the reader's state in locals (registers) and handles a
// residual whose quotient, stop bit and low bits are all in the 64-bit
// cache without a call; it refills 8 bytes at a time only when fewer than
// 32 bits are left. Shift counts are masked to 63 where they are known to
// be below 64, which spares the compiler's code for larger shifts. The
// slow path (a long quotient, the last bytes of the input) hands the
// state back to br.
func (br *bitReader) rice(out []int64, k uint) error {
	k &= 31
	stop := uint64(1) << k // the stop bit, as it lands above the low bits
	buf, pos, cache, n := br.buf, br.pos, br.cache, br.n
	for i := 0; i < len(out); i++ {
		if n < 32 && pos <= len(buf)-8 {
			cache |= binary.BigEndian.Uint64(buf[pos:]) >> (n & 63)
			b := (63 - n) >> 3
			pos += int(b)
			n += b << 3
		}
		z := uint(bits.LeadingZeros64(cache))
		t := z + 1 + k
		if t <= n {
			// cache<<z starts with the stop bit; the k bits after it
			// come down with it, as stop|low.
			u := (cache << (z & 63)) >> ((63 - k) & 63)
			folded := uint64(z)<<k + u - stop
			cache <<= t & 63
			n -= t
			out[i] = int64(folded>>1) ^ -int64(folded&1)
			continue
		}
		br.pos, br.cache, br.n = pos, cache, n
		r, err := br.riceSlow(k)
		if err != nil {
			return err
		}
		out[i] = r
		pos, cache, n = br.pos, br.cache, br.n
	}
	br.pos, br.cache, br.n = pos, cache, n
	return nil
}

// riceSlow decodes one Rice-coded residual with parameter k (<= 30)
// whatever the state of the cache.
func (br *bitReader) riceSlow(k uint) (int64, error) {
	q, err := br.unary()
	if err != nil {
		return 0, err
	}
	if q > uint64(0xffffffff)>>k {
		return 0, formatErr("Rice-coded residual overflows 32 bits (quotient %d, parameter %d)", q, k)
	}
	low, err := br.read(k)
	if err != nil {
		return 0, err
	}
	folded := q<<k | low
	return int64(folded>>1) ^ -int64(folded&1), nil
}

package flac

import (
	"crypto/md5"
	"fmt"
	"math"
	"math/bits"
)

// EncoderOptions set up Encode. Its encoder is simpler than libFLAC's (one
// analysis window, estimated LPC order, no search over precisions), so its
// streams are somewhat larger; they are valid streams any decoder reads.
type EncoderOptions struct {
	BlockSize         int  // samples per channel in a frame; 0: 4096
	MaxPartitionOrder int  // Rice partition orders tried, 0 to 8
	Stereo            bool // try left/side, side/right and mid/side for two channels
	MaxLPCOrder       int  // 0: fixed predictors only; up to 32
	Exhaustive        bool // choose the LPC order by coding each, not by estimate
	SampleRate        int  // for STREAMINFO; 0: 48000
}

// LevelOptions returns the options for a libFLAC-style level 0 to 8.
func LevelOptions(level int) EncoderOptions {
	o := EncoderOptions{BlockSize: 4096, MaxPartitionOrder: 6, Stereo: true, MaxLPCOrder: 8}
	switch {
	case level <= 0:
		o = EncoderOptions{BlockSize: 1152, MaxPartitionOrder: 3}
	case level <= 2:
		o = EncoderOptions{BlockSize: 1152, MaxPartitionOrder: 3, Stereo: true}
	case level <= 4:
		o.MaxPartitionOrder, o.MaxLPCOrder = 4, 6
	case level >= 8:
		o.MaxPartitionOrder, o.MaxLPCOrder = 8, 12
	}
	return o
}

// Encode writes a FLAC stream (marker, STREAMINFO, frames) of interleaved
// samples, each of which must fit in bps bits (4 to 32).
func Encode(samples []int32, channels, bps int, o EncoderOptions) ([]byte, error) {
	if channels < 1 || channels > MaxChannels {
		return nil, fmt.Errorf("flac: cannot encode %d channels", channels)
	}
	if bps < 4 || bps > 32 {
		return nil, fmt.Errorf("flac: cannot encode %d bits per sample", bps)
	}
	if len(samples)%channels != 0 {
		return nil, fmt.Errorf("flac: %d samples are not whole frames of %d channels", len(samples), channels)
	}
	bs := o.BlockSize
	if bs == 0 {
		bs = 4096
	}
	if bs < 16 || bs > 65535 {
		return nil, fmt.Errorf("flac: block size %d outside 16 to 65535", bs)
	}
	rate := o.SampleRate
	if rate == 0 {
		rate = 48000
	}
	lo, hi := int32(-1)<<(bps-1), int32(uint32(1)<<(bps-1)-1)
	for i, s := range samples {
		if s < lo || s > hi {
			return nil, fmt.Errorf("flac: sample %d (%d) does not fit in %d bits", i, s, bps)
		}
	}
	e := &encoder{opts: o, bps: bps, channels: channels}
	e.opts.MaxPartitionOrder = min(max(o.MaxPartitionOrder, 0), 8)
	w := &e.w
	w.buf = make([]byte, 0, len(samples)*bps/16+1024)
	w.buf = append(w.buf, "fLaC"...)
	w.buf = append(w.buf, 0x80, 0, 0, 34) // last metadata block: STREAMINFO
	infoAt := len(w.buf)
	w.buf = append(w.buf, make([]byte, 34)...)

	total := len(samples) / channels
	minFrame, maxFrame := 0, 0
	for i, frame := 0, 0; i < total; i, frame = i+bs, frame+1 {
		n := min(bs, total-i)
		start := len(w.buf)
		e.frame(samples[i*channels:(i+n)*channels], n, frame)
		size := len(w.buf) - start
		if minFrame == 0 || size < minFrame {
			minFrame = size
		}
		maxFrame = max(maxFrame, size)
	}

	si := w.buf[infoAt : infoAt+34]
	minBlock := bs
	if total < bs {
		minBlock = total
	}
	si[0], si[1], si[2], si[3] = byte(minBlock>>8), byte(minBlock), byte(bs>>8), byte(bs)
	si[4], si[5], si[6] = byte(minFrame>>16), byte(minFrame>>8), byte(minFrame)
	si[7], si[8], si[9] = byte(maxFrame>>16), byte(maxFrame>>8), byte(maxFrame)
	t := uint64(total)
	si[10], si[11] = byte(rate>>12), byte(rate>>4)
	si[12] = byte(rate<<4) | byte(channels-1)<<1 | byte((bps-1)>>4)
	si[13] = byte((bps-1)&15)<<4 | byte(t>>32&15)
	si[14], si[15], si[16], si[17] = byte(t>>24), byte(t>>16), byte(t>>8), byte(t)
	copy(si[18:], sampleMD5(samples, bps))
	return w.buf, nil
}

// sampleMD5 is the STREAMINFO signature: MD5 of the samples interleaved,
// little endian, in whole bytes.
func sampleMD5(samples []int32, bps int) []byte {
	nb := (bps + 7) / 8
	h := md5.New()
	buf := make([]byte, 0, 4096*nb)
	for _, s := range samples {
		for b := 0; b < nb; b++ {
			buf = append(buf, byte(s>>(8*b)))
		}
		if len(buf) >= 4000*nb {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Write(buf)
	return h.Sum(nil)
}

type encoder struct {
	opts     EncoderOptions
	bps      int
	channels int
	w        bitWriter
	ch       [MaxChannels + 2][]int64 // per channel; [c], [c+1] side and mid
	plans    [MaxChannels]subframePlan
	win      []float64 // LPC analysis window of the last block size
	fbuf     []float64
}

// subframePlan is the coding chosen for one subframe.
type subframePlan struct {
	bits     int     // estimated size
	kind     int     // 0 constant, 1 verbatim, 2 fixed, 3 LPC
	coefs    []int64 // LPC: quantized, coefs[0] weighs the previous sample
	prec     int     // LPC coefficient precision in bits
	shift    int     // LPC quantization shift
	order    int
	wasted   int
	bps      int // after removing wasted bits
	porder   int
	params   []int // per partition; -1 escaped (with escBits)
	escBits  []int
	samples  []int64 // shifted by wasted
	residual []int64
}

func (e *encoder) frame(interleaved []int32, n, number int) {
	w := &e.w
	nch := e.channels
	for c := 0; c < nch+2; c++ {
		if cap(e.ch[c]) < n {
			e.ch[c] = make([]int64, n)
		}
		e.ch[c] = e.ch[c][:n]
	}
	for i := 0; i < n; i++ {
		for c := 0; c < nch; c++ {
			e.ch[c][i] = int64(interleaved[i*nch+c])
		}
	}
	assign := nch - 1
	var plans []*subframePlan
	if nch == 2 && e.opts.Stereo {
		l, r, side, mid := e.ch[0], e.ch[1], e.ch[2], e.ch[3]
		for i := range l {
			side[i] = l[i] - r[i]
			mid[i] = (l[i] + r[i]) >> 1
		}
		pl, pr, ps, pm := &e.plans[0], &e.plans[1], &e.plans[2], &e.plans[3]
		e.plan(pl, l, e.bps)
		e.plan(pr, r, e.bps)
		e.plan(ps, side, e.bps+1)
		e.plan(pm, mid, e.bps)
		best := pl.bits + pr.bits
		plans = []*subframePlan{pl, pr}
		for _, alt := range []struct {
			code int
			a, b *subframePlan
		}{{chanLeftSide, pl, ps}, {chanSideRight, ps, pr}, {chanMidSide, pm, ps}} {
			if alt.a.bits+alt.b.bits < best {
				best, assign, plans = alt.a.bits+alt.b.bits, alt.code, []*subframePlan{alt.a, alt.b}
			}
		}
	} else {
		for c := 0; c < nch; c++ {
			e.plan(&e.plans[c], e.ch[c], e.bps)
			plans = append(plans, &e.plans[c])
		}
	}

	start := len(w.buf)
	w.write(0xfff8, 16) // sync, reserved 0, fixed block size
	var bsCode uint64
	switch {
	case n == 192:
		bsCode = 1
	case n <= 256:
		bsCode = 6
	default:
		bsCode = 7
	}
	w.write(bsCode<<4|0, 8) // sample rate: from STREAMINFO
	var bpsCode uint64      // 0: from STREAMINFO
	switch e.bps {
	case 8, 12:
		bpsCode = uint64(e.bps/4 - 1)
	case 16, 20, 24:
		bpsCode = uint64(e.bps / 4)
	case 32:
		bpsCode = 7
	}
	w.write(uint64(assign)<<4|bpsCode<<1, 8)
	w.writeCodedNumber(uint64(number))
	switch bsCode {
	case 6:
		w.write(uint64(n-1), 8)
	case 7:
		w.write(uint64(n-1), 16)
	}
	w.flush()
	w.buf = append(w.buf, crc8(w.buf[start:]))
	for _, p := range plans {
		w.subframe(p)
	}
	w.align()
	crc := crc16(w.buf[start:])
	w.buf = append(w.buf, byte(crc>>8), byte(crc))
}

// plan chooses the cheapest coding of s (sbps bits per sample).
func (e *encoder) plan(p *subframePlan, s []int64, sbps int) {
	n := len(s)
	p.samples = s
	p.wasted, p.bps = 0, sbps
	var or int64
	constant := true
	for _, v := range s {
		or |= v
		if v != s[0] {
			constant = false
		}
	}
	if constant {
		p.kind, p.bits = 0, 8+sbps
		return
	}
	if tz := bits.TrailingZeros64(uint64(or)); tz > 0 {
		tz = min(tz, sbps-1)
		if cap(p.residual) < 2*n {
			p.residual = make([]int64, 2*n)
		}
		shifted := p.residual[n : 2*n]
		for i, v := range s {
			shifted[i] = v >> tz
		}
		p.samples, p.wasted, p.bps = shifted, tz, sbps-tz
	}
	p.kind, p.bits = 1, 8+p.wasted+n*p.bps
	if cap(p.residual) < 2*n {
		p.residual = make([]int64, 2*n)
	}
	res := p.residual[:n]
	kind, bestOrder, bestBits := 1, -1, p.bits
	for order := 0; order <= 4 && order < n; order++ {
		if !fixedResidual(p.samples, res, order) {
			continue
		}
		_, b := e.partition(res[order:], n, order, nil, nil)
		b += 8 + p.wasted + order*p.bps
		if b < bestBits {
			kind, bestOrder, bestBits = 2, order, b
		}
	}
	if e.opts.MaxLPCOrder > 0 {
		if order, b := e.planLPC(p, res); b < bestBits {
			kind, bestOrder, bestBits = 3, order, b
		}
	}
	if kind == 1 {
		return
	}
	if kind == 2 {
		fixedResidual(p.samples, res, bestOrder)
	} else {
		lpcResidual(p.samples, res, p.coefs[:bestOrder], p.shift)
		p.coefs = p.coefs[:bestOrder]
	}
	porder, _ := e.partition(res[bestOrder:], n, bestOrder, nil, nil)
	p.kind, p.order, p.bits, p.porder = kind, bestOrder, bestBits, porder
	np := 1 << porder
	if cap(p.params) < np {
		p.params, p.escBits = make([]int, np), make([]int, np)
	}
	p.params, p.escBits = p.params[:np], p.escBits[:np]
	e.partition(res[bestOrder:], n, bestOrder, p.params, p.escBits)
}

// fixedResidual computes the residual of the fixed predictor of the
// order; it reports false when one does not fit in 32 bits.
func fixedResidual(s, res []int64, order int) bool {
	n := len(s)
	res = res[:n]
	var acc int64
	for i := order; i < n; i++ {
		var r int64
		switch order {
		case 0:
			r = s[i]
		case 1:
			r = s[i] - s[i-1]
		case 2:
			r = s[i] - 2*s[i-1] + s[i-2]
		case 3:
			r = s[i] - 3*(s[i-1]-s[i-2]) - s[i-3]
		case 4:
			r = s[i] - 4*(s[i-1]+s[i-3]) + 6*s[i-2] + s[i-4]
		}
		res[i] = r
		acc |= r ^ r>>63
	}
	return acc <= 1<<31-1
}

// partition chooses the Rice partition order for the residual r (of a
// block of n samples with the predictor order) and returns it with the
// estimated bits; with params non-nil (room for its partitions) it
// records the parameter of each partition of that order (-1: escaped,
// escBits set). The sums of the finest partitions are taken once and
// added up pairwise for the coarser orders.
func (e *encoder) partition(r []int64, n, order int, params, escBits []int) (int, int) {
	maxP := e.opts.MaxPartitionOrder
	if params != nil {
		maxP = bits.Len(uint(len(params))) - 1
	}
	for maxP > 0 && (n%(1<<maxP) != 0 || n>>maxP < order || n>>maxP < 1) {
		maxP--
	}
	// level po occupies [1<<po-1, 1<<(po+1)-1) of sums and ors
	var sums, ors [511]uint64
	fine := sums[1<<maxP-1 : 1<<(maxP+1)-1]
	fineOr := ors[1<<maxP-1 : 1<<(maxP+1)-1]
	psize := n >> maxP
	pos := 0
	for p := range fine {
		end := (p+1)*psize - order
		var sum, or uint64
		for _, v := range r[pos:end] {
			f := uint64(v<<1 ^ v>>63)
			sum += f
			or |= f
		}
		fine[p], fineOr[p] = sum, or
		pos = end
	}
	for po := maxP - 1; po >= 0; po-- {
		for p := 0; p < 1<<po; p++ {
			c := 1<<(po+1) - 1 + 2*p
			sums[1<<po-1+p] = sums[c] + sums[c+1]
			ors[1<<po-1+p] = ors[c] | ors[c+1]
		}
	}
	bestP, bestBits := 0, -1
	for po := maxP; po >= 0; po-- {
		if params != nil && po != maxP {
			break
		}
		psize := n >> po
		total := 6
		for p := 0; p < 1<<po; p++ {
			cnt := psize
			if p == 0 {
				cnt -= order
			}
			sum, or := sums[1<<po-1+p], ors[1<<po-1+p]
			k, cost := riceParam(sum, cnt)
			// escaped: 5 bits of width, then raw two's complement values
			eb := bits.Len64(or>>1) + 1
			if or == 0 {
				eb = 0
			}
			ecost := 5 + eb*cnt
			if eb <= 31 && ecost < cost {
				k, cost = -1, ecost
			}
			total += 5 + cost
			if params != nil {
				params[p], escBits[p] = k, eb
			}
		}
		if bestBits < 0 || total < bestBits {
			bestP, bestBits = po, total
		}
	}
	return bestP, bestBits
}

// riceParam estimates the best Rice parameter (0 to 30) for cnt values
// whose zigzag-folded sum is sum, and the bits they take with it.
func riceParam(sum uint64, cnt int) (int, int) {
	if cnt == 0 {
		return 0, 0
	}
	mean := sum / uint64(cnt)
	k := 0
	if mean > 0 {
		k = min(bits.Len64(mean)-1, 30)
	}
	// A subframe's cost is far below 2^30 bits (at most 65535 samples of
	// 33 bits), so the cap keeps the sum within a 32-bit int.
	best, bestCost := k, math.MaxInt
	for kk := max(k-1, 0); kk <= min(k+1, 30); kk++ {
		c := cnt*(kk+1) + int(min(sum>>kk, 1<<30))
		if c < bestCost {
			best, bestCost = kk, c
		}
	}
	return best, bestCost
}

func (w *bitWriter) subframe(p *subframePlan) {
	typ := uint64(p.kind) // constant 0, verbatim 1
	switch p.kind {
	case 2:
		typ = 8 + uint64(p.order)
	case 3:
		typ = 32 + uint64(p.order) - 1
	}
	if p.kind == 0 {
		w.write(0, 8)
		w.writeSigned(p.samples[0], p.bps)
		return
	}
	if p.wasted > 0 {
		w.write(typ<<1|1, 8)
		w.write(0, uint(p.wasted-1))
		w.write(1, 1)
	} else {
		w.write(typ<<1, 8)
	}
	if p.kind == 1 {
		for _, v := range p.samples {
			w.writeSigned(v, p.bps)
		}
		return
	}
	for _, v := range p.samples[:p.order] {
		w.writeSigned(v, p.bps)
	}
	if p.kind == 3 {
		w.write(uint64(p.prec-1), 4)
		w.write(uint64(p.shift), 5)
		for _, c := range p.coefs {
			w.writeSigned(c, p.prec)
		}
	}
	method, pbits, escape := uint64(0), uint(4), 15
	for _, k := range p.params {
		if k > 14 {
			method, pbits, escape = 1, 5, 31
		}
	}
	w.write(method<<4|uint64(p.porder), 6)
	n := len(p.samples)
	psize := n >> p.porder
	pos := p.order
	for i, k := range p.params {
		end := (i + 1) * psize
		if k < 0 {
			w.write(uint64(escape), pbits)
			w.write(uint64(p.escBits[i]), 5)
			if p.escBits[i] > 0 {
				for _, v := range p.residual[pos:end] {
					w.writeSigned(v, p.escBits[i])
				}
			}
		} else {
			w.write(uint64(k), pbits)
			for _, v := range p.residual[pos:end] {
				f := uint64(v<<1 ^ v>>63)
				q := f >> uint(k)
				for q >= 32 {
					w.write(0, 32)
					q -= 32
				}
				w.write(1, uint(q)+1)
				w.write(f&(1<<uint(k)-1), uint(k))
			}
		}
		pos = end
	}
}

// bitWriter appends big-endian bit fields to buf; acc holds the n bits
// not yet flushed, right-aligned.
type bitWriter struct {
	buf []byte
	acc uint64
	n   uint
}

// write appends the low k bits of v (k <= 32).
func (w *bitWriter) write(v uint64, k uint) {
	if k == 0 {
		return
	}
	if w.n+k > 64 {
		w.flush()
	}
	w.acc = w.acc<<k | v&(1<<k-1)
	w.n += k
}

// writeSigned appends v as a k-bit (k <= 33) two's complement value.
func (w *bitWriter) writeSigned(v int64, k int) {
	if k > 32 {
		w.write(uint64(v)>>32&1, 1)
		k = 32
	}
	w.write(uint64(v), uint(k))
}

// flush moves the whole bytes of acc to buf.
func (w *bitWriter) flush() {
	for w.n >= 8 {
		w.n -= 8
		w.buf = append(w.buf, byte(w.acc>>w.n))
	}
}

// align pads with zero bits to a byte boundary and flushes.
func (w *bitWriter) align() {
	if r := w.n & 7; r != 0 {
		w.write(0, 8-r)
	}
	w.flush()
}

// writeCodedNumber writes v in the UTF-8 style coding of frame headers.
func (w *bitWriter) writeCodedNumber(v uint64) {
	if v < 0x80 {
		w.write(v, 8)
		return
	}
	extra := 1
	for v >= 1<<(6*extra+6-extra) {
		extra++
	}
	lead := uint64(0xff00>>(extra+1)) & 0xff
	w.write(lead|v>>(6*extra), 8)
	for i := extra - 1; i >= 0; i-- {
		w.write(0x80|v>>(6*i)&0x3f, 8)
	}
}

package flac

//go:generate go run gen_fused.go

// A FLAC sample is its residual plus a prediction from the samples before
// it. Decoding the residual (a Rice code: a unary quotient, then k low
// bits) is a chain of dependent operations per sample, and so is the
// prediction, since each sample depends on the one just computed. The two
// chains are independent of each other, so the riceLPC* loops
// (fused_gen.go, written by gen_fused.go) run them in the same loop, where
// the processor overlaps them, instead of one pass after the other.
//
// Each generated loop is a filter of a fixed width (4, 8, 12, 16 or 32
// coefficients, lower orders with zero coefficients in front), unrolled.
// The newest sample is kept in a register rather than read back from
// memory just after its store, and its product is added last, so that the
// others are ready before it is. The residual r joins the sum as r<<shift:
// (sum + r<<shift) >> shift is sum>>shift + r, one dependent add fewer.
//
// With at most 15-bit coefficients, 33-bit samples, 32-bit residuals and
// order 32 the sums fit in 53 bits, so int64 arithmetic is exact for every
// valid stream, and merely wraps, without harm, for an invalid one.

// fixedCoefs are the fixed predictors of orders 0 to 4 as LPC
// coefficients (reversed, as predictor.coefs) with shift 0.
var fixedCoefs = [5][]int64{
	nil,
	{1},
	{-1, 2},
	{1, -3, 3},
	{-1, 4, -6, 4},
}

// predictor is a subframe's fixed or LPC predictor.
type predictor struct {
	coefs  []int64 // reversed: coefs[j] weighs s[i-len(coefs)+j]
	shift  uint
	width  int       // of the generated filter; 0 for order 0
	padded [32]int64 // coefs right-aligned: the filter is padded[32-width:]
}

// set makes p the predictor coefs (len(coefs) <= 32), shift.
func (p *predictor) set(coefs []int64, shift uint) {
	p.coefs, p.shift = coefs, shift&63
	p.width = 0
	if len(coefs) > 0 {
		p.width = riceLPCWidth(len(coefs))
	}
	p.padded = [32]int64{}
	copy(p.padded[32-len(coefs):], coefs)
}

// ricePredicted decodes Rice-coded residuals with parameter k into
// s[pos:end] (pos >= the predictor's order) and restores the samples.
func (br *bitReader) ricePredicted(s []int64, pos, end int, k uint, p *predictor) error {
	if p.width == 0 {
		return br.rice(s[pos:end], k)
	}
	if pos < p.width {
		// These samples have fewer than width before them.
		e := min(p.width, end)
		if err := br.rice(s[pos:e], k); err != nil {
			return err
		}
		p.restore(s, pos, e)
		pos = e
	}
	for pos < end {
		pos = br.riceLPCFused(s, pos, end, k, p)
		if pos == end {
			break
		}
		r, err := br.riceSlow(k)
		if err != nil {
			return err
		}
		s[pos] = r
		p.restore(s, pos, pos+1)
		pos++
	}
	return nil
}

// restore adds the prediction to the residuals in s[from:to], in order
// (from >= the predictor's order).
func (p *predictor) restore(s []int64, from, to int) {
	order := len(p.coefs)
	if order == 0 {
		return
	}
	for i := max(from, order); i < to; i++ {
		h := s[i-order : i]
		h = h[:len(p.coefs)]
		var sum int64
		for j, c := range p.coefs {
			sum += c * h[j]
		}
		s[i] += sum >> p.shift
	}
}

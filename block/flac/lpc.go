package flac

import (
	"math"
)

// planLPC finds LPC coefficients for p.samples (up to MaxLPCOrder) and
// returns the chosen order and its estimated bits, leaving the quantized
// coefficients in p.coefs, p.prec and p.shift; bits is huge when LPC does
// not apply. res is scratch of len(p.samples).
func (e *encoder) planLPC(p *subframePlan, res []int64) (int, int) {
	s := p.samples
	n := len(s)
	maxOrder := min(e.opts.MaxLPCOrder, 32, n-1)
	if maxOrder < 1 {
		return 0, math.MaxInt
	}
	// Autocorrelation of the Tukey(0.5)-windowed signal.
	w := e.window(n)
	x := e.fscratch(n)
	for i, v := range s {
		x[i] = float64(v) * w[i]
	}
	var r [33]float64
	for lag := 0; lag <= maxOrder; lag++ {
		var sum float64
		for i := lag; i < n; i++ {
			sum += x[i] * x[i-lag]
		}
		r[lag] = sum
	}
	if r[0] == 0 {
		return 0, math.MaxInt
	}
	// Levinson-Durbin: the predictor of every order and its error.
	var lpc [32][32]float64
	var errs [32]float64
	var a [32]float64
	errv := r[0]
	orders := 0
	for m := 1; m <= maxOrder; m++ {
		acc := r[m]
		for j := 1; j < m; j++ {
			acc -= a[j-1] * r[m-j]
		}
		k := acc / errv
		var na [32]float64
		for j := 1; j < m; j++ {
			na[j-1] = a[j-1] - k*a[m-j-1]
		}
		na[m-1] = k
		a = na
		errv *= 1 - k*k
		if !(errv > 0) {
			break
		}
		lpc[m-1], errs[m-1] = a, errv
		orders = m
	}
	if orders == 0 {
		return 0, math.MaxInt
	}
	prec := 15
	if p.bps <= 16 {
		prec = min(15, max(12, p.bps-2))
	}
	candidates := make([]int, 0, orders)
	if e.opts.Exhaustive {
		for m := 1; m <= orders; m++ {
			candidates = append(candidates, m)
		}
	} else {
		// The residual of order m takes about log2 of its deviation per
		// sample; each order costs a coefficient and a warm-up sample.
		best, bestEst := 1, math.Inf(1)
		for m := 1; m <= orders; m++ {
			est := 0.5*float64(n-m)*math.Log2(max(errs[m-1], 1e-30)/float64(n)) + float64(m*(prec+p.bps))
			if est < bestEst {
				best, bestEst = m, est
			}
		}
		candidates = append(candidates, best)
	}
	bestOrder, bestBits := 0, math.MaxInt
	var bestCoefs [32]int64
	bestShift := 0
	for _, m := range candidates {
		coefs, shift, ok := quantize(lpc[m-1][:m], prec)
		if !ok || !lpcResidual(s, res, coefs, shift) {
			continue
		}
		_, b := e.partition(res[m:], n, m, nil, nil)
		b += 8 + p.wasted + m*p.bps + 9 + m*prec
		if b < bestBits {
			bestOrder, bestBits, bestShift = m, b, shift
			copy(bestCoefs[:], coefs)
		}
	}
	if bestOrder == 0 {
		return 0, math.MaxInt
	}
	if cap(p.coefs) < 32 {
		p.coefs = make([]int64, 32)
	}
	p.coefs = p.coefs[:32]
	copy(p.coefs, bestCoefs[:])
	p.prec, p.shift = prec, bestShift
	return bestOrder, bestBits
}

// quantize turns coefficients into prec-bit integers and a shift (0 to
// 15), carrying each rounding error into the next coefficient.
func quantize(c []float64, prec int) ([]int64, int, bool) {
	var cmax float64
	for _, v := range c {
		cmax = max(cmax, math.Abs(v))
	}
	if cmax == 0 || math.IsNaN(cmax) || math.IsInf(cmax, 0) {
		return nil, 0, false
	}
	_, exp := math.Frexp(cmax) // cmax = f * 2^exp, 0.5 <= f < 1
	shift := min(prec-1-exp, 15)
	if shift < 0 {
		return nil, 0, false
	}
	hi := int64(1)<<(prec-1) - 1
	out := make([]int64, len(c))
	var carry float64
	for i, v := range c {
		x := v*float64(int64(1)<<shift) + carry
		q := int64(math.Round(x))
		q = min(max(q, -hi-1), hi)
		carry = x - float64(q)
		out[i] = q
	}
	return out, shift, true
}

// lpcResidual computes the residual of the quantized predictor (coefs[0]
// weighs the previous sample) into res[len(coefs):]; it reports false
// when a residual does not fit in 32 bits.
func lpcResidual(s, res []int64, coefs []int64, shift int) bool {
	order := len(coefs)
	var acc int64
	for i := order; i < len(s); i++ {
		var sum int64
		for j, c := range coefs {
			sum += c * s[i-1-j]
		}
		r := s[i] - sum>>uint(shift)
		res[i] = r
		acc |= r ^ r>>63
	}
	return acc <= 1<<31-1
}

// window returns the Tukey(0.5) window of n points, cached per size.
func (e *encoder) window(n int) []float64 {
	if len(e.win) == n {
		return e.win
	}
	e.win = make([]float64, n)
	taper := n / 4 // half of the 50% tapered part on each side
	for i := range e.win {
		e.win[i] = 1
		if taper > 0 {
			switch {
			case i < taper:
				e.win[i] = 0.5 - 0.5*math.Cos(math.Pi*float64(i)/float64(taper))
			case i >= n-taper:
				e.win[i] = 0.5 - 0.5*math.Cos(math.Pi*float64(n-1-i)/float64(taper))
			}
		}
	}
	return e.win
}

func (e *encoder) fscratch(n int) []float64 {
	if cap(e.fbuf) < n {
		e.fbuf = make([]float64, n)
	}
	return e.fbuf[:n]
}

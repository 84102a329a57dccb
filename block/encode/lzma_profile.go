package encode

import (
	"math"
	"strings"
)

// lzmaAutoPB marks a pb option left to lzmaProfile.
const lzmaAutoPB = -1

// lzmaTextNice is the least nice length lzmaProfile gives input without
// 4-byte structure at presets 6 to 9 (whose own is 64, or 273 extreme).
// Longer nice lengths find the longer repeats of text trees; up to 96 the
// optimal parser's fewer positions pay for the longer matches it weighs,
// beyond that the encoder gets slower faster than the blocks get smaller.
const lzmaTextNice = 96

// lzmaPB parses lzma:pb=N (the position bits LZMA2 models, 0 to 4) or
// pb=auto, the default, which leaves it to lzmaProfile.
func lzmaPB(so *specOptions) (int, error) {
	v, ok := so.opts["pb"]
	if !ok || strings.EqualFold(v, "auto") {
		so.used["pb"] = true
		return lzmaAutoPB, nil
	}
	return so.int("pb", 2, 0, 4)
}

// lzmaProfile picks LZMA2's position bits, and for presets 6 to 9 its nice
// length, for one input when the spec left pb to it (pb < 0). pb 2, the
// presets', gives the literal and match models one state per position
// modulo 4, which pays for data laid out in 16- or 32-bit units
// (executables, tables of numbers, PCM) and only splits the statistics
// four ways for text and byte code: there pb 0 is smaller, and a nice
// length above the presets' 64 finds the longer repeats text trees have.
// Structured input keeps the preset's settings: executables came out
// larger with either change.
//
// It returns the pb to use and the least nice length (0: none beyond the
// preset's); a nice length the spec sets is left alone.
func lzmaProfile(src []byte, pb, level, nice int) (int, int) {
	if pb >= 0 {
		return pb, 0
	}
	if wordStructured(src) {
		return 2, 0
	}
	if nice == 0 && level >= 6 {
		return 0, lzmaTextNice
	}
	return 0, 0
}

// wordStructured reports whether the byte values of src depend on their
// position modulo 4: the mutual information between the two, less its
// bias for a sample of this size, is above a threshold that separates
// executables (0.025 bits measured) from text, JavaScript bundles, JSON,
// SVG and WebAssembly (at most 0.0011 bits). Inputs under 64 KiB keep the
// presets' pb: too small to tell, and too small for it to matter.
func wordStructured(src []byte) bool {
	const minInput, threshold = 64 << 10, 0.005
	if len(src) < minInput {
		return true
	}
	var lanes [4][256]uint32
	n := len(src) &^ 3
	for i := 0; i < n; i += 4 {
		lanes[0][src[i]]++
		lanes[1][src[i+1]]++
		lanes[2][src[i+2]]++
		lanes[3][src[i+3]]++
	}
	var all [256]uint32
	laneH := 0.0
	for l := range lanes {
		laneH += entropy(lanes[l][:], float64(n/4)) / 4
		for b, c := range lanes[l] {
			all[b] += c
		}
	}
	seen := 0
	for _, c := range all {
		if c > 0 {
			seen++
		}
	}
	// Plug-in estimates of mutual information are biased upwards by about
	// (values-1)(lanes-1) / (2 N ln 2) bits.
	bias := float64(seen-1) * 3 / (2 * float64(n) * math.Ln2)
	return entropy(all[:], float64(n))-laneH-bias > threshold
}

func entropy(counts []uint32, n float64) float64 {
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

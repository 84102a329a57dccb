package metadata

import (
	"encoding/binary"
	"sort"
)

// A small FSST encoder. It is not the reference implementation's SIMD
// trainer, but it produces symbol tables in the exported layout of §3.13
// that any FSST decoder (and the upstream one) accepts: up to 255 symbols of
// 1..8 bytes, code 255 is the escape for literal bytes.

const (
	fsstVersion    = 20190218
	fsstMaxSymbols = 255
	fsstMaxLen     = 8
	fsstEscape     = 0xFF
	fsstRounds     = 5
	// fsstSampleBytes bounds the training work on large tables; the
	// symbol table only has to be good, not optimal.
	fsstSampleBytes = 1 << 20
)

// fsstTable maps symbols to codes. Codes follow the export order (lengths
// 2..8, then 1), so export and decoding agree without renumbering.
type fsstTable struct {
	syms  []string // by code
	codes map[string]byte
}

func newFSSTTable(syms []string) *fsstTable {
	// Export groups symbols by length in the order 2,3,...,8,1.
	rank := func(s string) int {
		if len(s) == 1 {
			return fsstMaxLen + 1
		}
		return len(s)
	}
	sort.SliceStable(syms, func(i, j int) bool {
		if ri, rj := rank(syms[i]), rank(syms[j]); ri != rj {
			return ri < rj
		}
		return syms[i] < syms[j]
	})
	t := &fsstTable{syms: syms, codes: make(map[string]byte, len(syms))}
	for i, s := range syms {
		t.codes[s] = byte(i)
	}
	return t
}

// match returns the code and length of the longest symbol prefixing b;
// length 0 means none.
func (t *fsstTable) match(b []byte) (byte, int) {
	for l := min(len(b), fsstMaxLen); l >= 1; l-- {
		if c, ok := t.codes[string(b[:l])]; ok {
			return c, l
		}
	}
	return 0, 0
}

// encode appends the greedy longest-match encoding of src to dst.
func (t *fsstTable) encode(dst, src []byte) []byte {
	for i := 0; i < len(src); {
		if c, l := t.match(src[i:]); l > 0 {
			dst = append(dst, c)
			i += l
			continue
		}
		dst = append(dst, fsstEscape, src[i])
		i++
	}
	return dst
}

// export serialises the table: version word, zero-terminated flag (0),
// length histogram, then the symbol bytes in code order.
func (t *fsstTable) export() []byte {
	var hist [fsstMaxLen]byte
	for _, s := range t.syms {
		hist[len(s)-1]++
	}
	// The suffix limit is an encoder-side hint that decoders ignore; record
	// the 2-byte group size, which is a valid value for it.
	word := uint64(fsstVersion)<<32 | uint64(hist[1])<<24 | uint64(len(t.syms))<<8 | 1
	out := binary.LittleEndian.AppendUint64(nil, word)
	out = append(out, 0)
	out = append(out, hist[:]...)
	for _, s := range t.syms {
		out = append(out, s...)
	}
	return out
}

// trainFSST builds a symbol table by repeatedly encoding the (sampled)
// corpus with the current table and keeping the symbols and symbol pairs
// with the highest byte gain, like FSST's own training loop.
func trainFSST(strs []string) *fsstTable {
	total := 0
	for _, s := range strs {
		total += len(s)
	}
	step := 1
	if total > fsstSampleBytes {
		step = total/fsstSampleBytes + 1
	}
	t := newFSSTTable(nil)
	for range fsstRounds {
		freq := map[string]int{}
		for i := 0; i < len(strs); i += step {
			b := []byte(strs[i])
			prev := ""
			for p := 0; p < len(b); {
				_, l := t.match(b[p:])
				if l == 0 {
					l = 1
				}
				sym := string(b[p : p+l])
				freq[sym]++
				if prev != "" {
					cat := prev + sym
					if len(cat) > fsstMaxLen {
						cat = cat[:fsstMaxLen]
					}
					freq[cat]++
				}
				prev = sym
				p += l
			}
		}
		type cand struct {
			s    string
			gain int
		}
		cands := make([]cand, 0, len(freq))
		for s, f := range freq {
			// Skip symbols whose table entry costs more than they save
			// (matters for the small tables typical of names).
			save := f*max(len(s)-1, 1) - len(s)
			if save <= 0 {
				continue
			}
			cands = append(cands, cand{s, save})
		}
		sort.Slice(cands, func(i, j int) bool {
			if cands[i].gain != cands[j].gain {
				return cands[i].gain > cands[j].gain
			}
			return cands[i].s < cands[j].s
		})
		n := min(len(cands), fsstMaxSymbols)
		syms := make([]string, n)
		for i := range n {
			syms[i] = cands[i].s
		}
		t = newFSSTTable(syms)
	}
	return t
}

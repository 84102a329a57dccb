package lz4hc

import "encoding/binary"

// writer appends LZ4 sequences to dst. Each method checks the room it
// needs first and reports false, writing nothing, when dst is too small.
type writer struct {
	dst    []byte
	n      int    // bytes written to dst
	src    []byte // the block's input
	anchor int    // first input byte not yet written
}

// lenBytes is how many extra bytes a length field of v needs after the
// 4 bits it has in the token.
func lenBytes(v int) int {
	if v < 15 {
		return 0
	}
	return (v-15)/255 + 1
}

// putLen writes the extra bytes of a length field of v >= 15.
func (w *writer) putLen(v int) {
	for v -= 15; v >= 255; v -= 255 {
		w.dst[w.n] = 255
		w.n++
	}
	w.dst[w.n] = byte(v)
	w.n++
}

// token writes the token and literal run of a sequence whose match
// length field is ml (0 for the last sequence, which has no match).
func (w *writer) token(lits []byte, ml int) {
	ll := len(lits)
	w.dst[w.n] = byte(min(ll, runMask)<<4 | min(ml, mlMask))
	w.n++
	if ll >= runMask {
		w.putLen(ll)
	}
	w.n += copy(w.dst[w.n:], lits)
}

// match writes the literals up to m and then m.
func (w *writer) match(m match) bool {
	lits := w.src[w.anchor:m.start]
	ml := m.len - minMatch
	need := 1 + lenBytes(len(lits)) + len(lits) + 2 + lenBytes(ml)
	if need > len(w.dst)-w.n {
		return false
	}
	w.token(lits, ml)
	binary.LittleEndian.PutUint16(w.dst[w.n:], uint16(m.start-m.ref))
	w.n += 2
	if ml >= mlMask {
		w.putLen(ml)
	}
	w.anchor = m.end()
	return true
}

// literals ends the block with the input from the anchor to end.
func (w *writer) literals(end int) bool {
	lits := w.src[w.anchor:end]
	if 1+lenBytes(len(lits))+len(lits) > len(w.dst)-w.n {
		return false
	}
	w.token(lits, 0)
	w.anchor = end
	return true
}

package lz4hc

import (
	"encoding/binary"
	"math/bits"
)

// match is a copy of len bytes from ref to start (ref < start).
type match struct {
	start, ref, len int
}

func (m match) end() int { return m.start + m.len }

// advance drops the first n bytes of m.
func (m match) advance(n int) match {
	return match{m.start + n, m.ref + n, m.len - n}
}

func hash4(v uint32) uint32 { return v * 2654435761 >> (32 - hashLog) }

func load32(b []byte, i int) uint32 { return binary.LittleEndian.Uint32(b[i:]) }

// insert adds the positions before p to the hash chains.
func (e *Encoder) insert(p int) {
	src, head, chain := e.src, &e.head, &e.chain
	for i := e.next; i < p; i++ {
		h := hash4(load32(src, i))
		d := min(i+hashBase-int(head[h]), maxOffset)
		chain[i&chainMask] = uint16(d)
		head[h] = uint32(i + hashBase)
	}
	e.next = max(e.next, p)
}

// forward counts how many bytes from a on equal those from b, stopping
// at e.limit.
func (e *Encoder) forward(a, b int) int {
	src, n := e.src, 0
	for a+n+8 <= e.limit {
		if x := binary.LittleEndian.Uint64(src[a+n:]) ^ binary.LittleEndian.Uint64(src[b+n:]); x != 0 {
			return n + bits.TrailingZeros64(x)>>3
		}
		n += 8
	}
	for a+n < e.limit && src[a+n] == src[b+n] {
		n++
	}
	return n
}

// backward counts how many bytes before a equal those before b, going
// back at most to low (b < a).
func (e *Encoder) backward(a, b, low int) int {
	src, n, most := e.src, 0, min(a-low, b)
	for n+8 <= most {
		if x := binary.LittleEndian.Uint64(src[a-n-8:]) ^ binary.LittleEndian.Uint64(src[b-n-8:]); x != 0 {
			return n + bits.LeadingZeros64(x)>>3
		}
		n += 8
	}
	for n < most && src[a-n-1] == src[b-n-1] {
		n++
	}
	return n
}

// runFrom counts the bytes equal to c from p on, stopping at e.limit.
func (e *Encoder) runFrom(p int, c byte) int {
	src, n := e.src, 0
	pat := uint64(c) * 0x0101010101010101
	for p+n+8 <= e.limit {
		if x := binary.LittleEndian.Uint64(src[p+n:]) ^ pat; x != 0 {
			return n + bits.TrailingZeros64(x)>>3
		}
		n += 8
	}
	for p+n < e.limit && src[p+n] == c {
		n++
	}
	return n
}

// runBefore counts the bytes equal to c just before p.
func (e *Encoder) runBefore(p int, c byte) int {
	n := 0
	for p-n > 0 && e.src[p-n-1] == c {
		n++
	}
	return n
}

// search looks for a match longer than longest that covers ip, starting
// no earlier than low, among the positions hashed like the 4 bytes at ip.
// Matching backwards from ip towards low lets a match found inside an
// earlier one take over part of it. It reports false if it found none.
func (e *Encoder) search(ip, low, longest int) (best match, found bool) {
	src := e.src
	e.insert(ip)
	lowest := max(0, ip-maxOffset)
	reach := ip - low
	pat := load32(src, ip)
	run := runUnknown
	srcRun := 0

	chain, runs := &e.chain, e.runs
	cand := int(e.head[hash4(pat)]) - hashBase
	tries := e.attempts
	for {
		// A match that starts at low or later and is longer than longest
		// covers every byte from ip to low+longest. So a candidate must
		// agree with the 4 bytes ending there before it is worth
		// counting; scan checks them and the 4 at ip. liblz4 checks
		// only two of those bytes: both checks pass every candidate
		// that can win, so the matches found are the same.
		if low+longest >= e.limit {
			return best, found
		}
		off := max(0, longest-reach-3)
		var why int
		cand, tries, why = scan(src, chain, cand, tries, lowest, off, load32(src, ip+off), pat, runs)
		if why == scanDone {
			return best, found
		}
		if why == scanHit {
			back := 0
			if reach > 0 && cand > 0 && src[ip-1] == src[cand-1] {
				back = e.backward(ip, cand, low)
			}
			if n := minMatch + e.forward(ip+minMatch, cand+minMatch) + back; n > longest {
				longest = n
				best, found = match{ip - back, cand - back, n}, true
			}
		}
		tries--
		delta := int(chain[cand&chainMask])
		if delta == 1 && runs {
			// The chain steps back one byte at a time through a run of
			// one byte value. Rather than spend an attempt per byte,
			// jump to the place in that run that can match all of ip's
			// run and what follows it, or to the run's start.
			if run == runUnknown {
				run, srcRun = runNone, 0
				if pat == uint32(src[ip])*0x01010101 {
					run, srcRun = runYes, minMatch+e.runFrom(ip+minMatch, src[ip])
				}
			}
			if c := cand - 1; run == runYes && c >= lowest && load32(src, c) == pat {
				next, m, ok := e.skipRun(ip, c, lowest, srcRun, reach == 0, longest)
				if ok {
					longest, best, found = m.len, m, true
				}
				cand = next
				continue
			}
		}
		cand -= delta
	}
}

// Why scan stopped.
const (
	scanDone = iota // out of tries or window
	scanHit         // at a candidate that may beat the longest match
	scanRun         // at a candidate inside a run of one byte value
)

// scan follows the chain from cand and stops at the first candidate that
// agrees with ip's 4 bytes pat and has key at cand+off, or, with runs,
// at one whose chain link is a step of one byte. It returns the
// candidate and the tries left, not counting the one stopped at. It
// holds the innermost loop of the encoder, kept small so that its
// variables stay in registers.
func scan(src []byte, chain *[chainSize]uint16, cand, tries, lowest, off int, key, pat uint32, runs bool) (int, int, int) {
	for ; cand >= lowest && tries > 0; tries-- {
		if load32(src, cand+off) == key && load32(src, cand) == pat {
			return cand, tries, scanHit
		}
		d := int(chain[cand&chainMask])
		if d == 1 && runs {
			return cand, tries, scanRun
		}
		cand -= d
	}
	return cand, tries, scanDone
}

// Whether the bytes at a search's ip start a run of one byte value.
const (
	runUnknown = iota
	runNone
	runYes
)

// skipRun handles a candidate c inside a run of the byte value of ip's
// run, which is srcRun bytes long. If c's run has room for all of ip's
// run, the next candidate is the position whose run ends exactly as
// long, so that bytes after the run can match too. Otherwise it is the
// start of c's run; when matches may not extend backwards, that start is
// taken as a match right away (m, ok) and the search goes on past it.
func (e *Encoder) skipRun(ip, c, lowest, srcRun int, noBack bool, longest int) (next int, m match, ok bool) {
	c0 := e.src[ip]
	fwd := minMatch + e.runFrom(c+minMatch, c0)
	back := min(e.runBefore(c, c0), c-lowest)
	seg := back + fwd
	if seg >= srcRun && fwd <= srcRun {
		return c + fwd - srcRun, m, false
	}
	next = c - back
	if !noBack {
		return next, m, false
	}
	if n := min(seg, srcRun); n > longest {
		m, ok = match{ip, next, n}, true
	}
	return next - int(e.chain[next&chainMask]), m, ok
}

package lz4hc

// optimalML is the longest match whose length fits in the token alone.
// When two matches overlap, the first is cut to at most this length and
// the second takes the rest: shortening a long first match costs nothing
// as long as it still needs no extra length byte.
const optimalML = mlMask - 1 + minMatch

// parse writes the sequences of e.src, all but the last literals. It
// reports false if they do not fit.
func (e *Encoder) parse(w *writer) bool {
	for ip := 0; ip <= e.mfl; {
		m, ok := e.search(ip, ip, minMatch-1)
		if !ok {
			ip++
			continue
		}
		if ip, ok = e.resolve(w, m); !ok {
			return false
		}
	}
	return true
}

// resolve writes m1, a match found at the current position, after
// weighing it against longer matches that begin inside it. Up to three
// candidates are held at once: m1, the next (m2) and the one after (m3).
// A candidate that starts too soon after the one before is dropped, and
// overlapping ones are cut so that each byte is covered once. It returns
// the position after the last match written, or false if dst is full.
func (e *Encoder) resolve(w *writer, m1 match) (int, bool) {
	// m0 is the first match found, kept so that m1 can fall back to it
	// when a later candidate turns out not to reach further.
	m0 := m1
second:
	for {
		m2, ok := e.wider(m1, 2)
		if !ok {
			return m1.end(), w.match(m1)
		}
		if m0.start < m1.start && m2.start < m1.start+m0.len {
			m1 = m0
		}
		if m2.start-m1.start < 3 {
			// m1 would leave m2 too little to gain from: m2 replaces it.
			m1 = m2
			continue
		}
		for {
			if m2.start-m1.start < optimalML {
				_, m2 = squeeze(m1, m2)
			}
			m3, ok := e.wider(m2, 3)
			if !ok {
				// Two candidates: write both, m1 cut where m2 begins.
				m1.len = min(m1.len, m2.start-m1.start)
				return m2.end(), w.match(m1) && w.match(m2)
			}
			if m3.start < m1.end()+3 {
				// m3 leaves m2 no room of its own: drop m2.
				if m3.start < m1.end() {
					m2 = m3
					continue
				}
				// m1 ends before m3: write it, and carry on with m3 as
				// the first candidate and what is left of m2 as the
				// fallback.
				if m2.start < m1.end() {
					m2 = m2.advance(m1.end() - m2.start)
					if m2.len < minMatch {
						m2 = m3
					}
				}
				if !w.match(m1) {
					return 0, false
				}
				m0, m1 = m2, m3
				continue second
			}
			// Three ascending candidates: m1 can be written, cut to
			// leave m2 its part.
			if m2.start < m1.end() {
				if m2.start-m1.start < optimalML {
					m1, m2 = squeeze(m1, m2)
				} else {
					m1.len = m2.start - m1.start
				}
			}
			if !w.match(m1) {
				return 0, false
			}
			m1, m2 = m2, m3
		}
	}
}

// wider looks for a match longer than m that starts inside it, searching
// from back bytes before its end, as long as m does not reach into the
// block's last bytes.
func (e *Encoder) wider(m match, back int) (match, bool) {
	if m.end() > e.mfl {
		return m, false
	}
	return e.search(m.end()-back, m.start, m.len)
}

// squeeze cuts m1 to at most optimalML bytes, but no shorter than where
// m2 begins and no longer than leaves m2 minMatch bytes, and moves the
// start of m2 to where m1 then ends.
func squeeze(m1, m2 match) (match, match) {
	n := min(m1.len, optimalML, m2.end()-minMatch-m1.start)
	m1.len = n
	if d := m1.start + n - m2.start; d > 0 {
		m2 = m2.advance(d)
	}
	return m1, m2
}

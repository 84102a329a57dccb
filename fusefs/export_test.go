//go:build linux && !386 && !arm

package fusefs

// RequestCounts returns how many FUSE requests of each opcode reached the
// driver so far.
func RequestCounts(s *Server) map[string]int64 {
	m := map[string]int64{}
	for i := range s.d.perf.ops {
		m[opNames[i]] = s.d.perf.ops[i].Load()
	}
	return m
}

// CacheStatsOf returns the block cache counters of the mounted source.
func CacheStatsOf(s *Server) CacheStats { return s.d.src.CacheStats() }

// OpenHandles returns how many files and directories the kernel holds
// open on the mount: the only state the driver keeps besides the image.
func OpenHandles(s *Server) (files, dirs int) {
	r := s.raw
	return r.files.len(), r.dirs.len()
}

// How many leading entries of a listing carry attributes, and how often
// a listing probes whether attributes are still wanted (plusPolicy).
const (
	PlusHead  = plusHead
	PlusProbe = plusProbe
)

// ListingsHeld returns how many directory listings the driver keeps for
// reads without a handle.
func ListingsHeld(s *Server) int {
	c := &s.raw.listings
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.ent {
		if e.ok {
			n++
		}
	}
	return n
}

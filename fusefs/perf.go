//go:build !windows && !(linux && (386 || arm))

package fusefs

import (
	"fmt"
	"math/bits"
	"strings"
	"sync/atomic"
	"time"
)

// latencyHist is a lock-free histogram of operation latencies in
// power-of-two nanosecond buckets; precise enough for percentiles in a
// perfmon report and cheap enough to stay on in the read path.
type latencyHist struct {
	buckets [64]atomic.Int64
	count   atomic.Int64
	sum     atomic.Int64 // nanoseconds
	max     atomic.Int64
}

func (h *latencyHist) add(d time.Duration) {
	ns := max(int64(d), 1)
	h.buckets[bits.Len64(uint64(ns))-1].Add(1)
	h.count.Add(1)
	h.sum.Add(ns)
	for {
		m := h.max.Load()
		if ns <= m || h.max.CompareAndSwap(m, ns) {
			break
		}
	}
}

// percentile returns the upper bound of the bucket holding the p-th
// percentile (0 < p <= 100).
func (h *latencyHist) percentile(p float64) time.Duration {
	n := h.count.Load()
	if n == 0 {
		return 0
	}
	want := int64(float64(n)*p/100 + 0.5)
	want = max(want, 1)
	var seen int64
	for i := range h.buckets {
		seen += h.buckets[i].Load()
		if seen >= want {
			ub := time.Duration(uint64(1)<<(i+1) - 1)
			return min(ub, time.Duration(h.max.Load()))
		}
	}
	return time.Duration(h.max.Load())
}

// perfCounters holds driver-level counters, reported by perfmon.
type perfCounters struct {
	reads       atomic.Int64
	readBytes   atomic.Int64
	readErrors  atomic.Int64
	lookups     atomic.Int64
	readdirs    atomic.Int64
	prefetches  atomic.Int64
	seqTriggers atomic.Int64
	readLat     latencyHist
	ops         opCounts // requests by opcode
}

func (p *perfCounters) report(cs CacheStats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[dwarfs perfmon]\n")
	p.ops.report(&b)
	fmt.Fprintf(&b, "fuse.lookup: %d\n", p.lookups.Load())
	fmt.Fprintf(&b, "fuse.readdir: %d\n", p.readdirs.Load())
	fmt.Fprintf(&b, "fuse.read: %d calls, %d bytes, %d errors\n", p.reads.Load(), p.readBytes.Load(), p.readErrors.Load())
	h := &p.readLat
	if n := h.count.Load(); n > 0 {
		fmt.Fprintf(&b, "fuse.read latency: avg %v, p50 %v, p90 %v, p99 %v, p99.9 %v, max %v\n",
			time.Duration(h.sum.Load()/n), h.percentile(50), h.percentile(90),
			h.percentile(99), h.percentile(99.9), time.Duration(h.max.Load()))
	}
	fmt.Fprintf(&b, "readahead: %d sequential triggers, %d prefetches\n", p.seqTriggers.Load(), p.prefetches.Load())
	fmt.Fprintf(&b, "block cache: %d hits, %d misses, %d blocks decoded (%d bytes, %d into evicted blocks' memory), %d evictions, %d marked spent\n",
		cs.Hits, cs.Misses, cs.Decoded, cs.DecodedBytes, cs.Reused, cs.Evictions, cs.Spent)
	fmt.Fprintf(&b, "block cache size: current %d, loading %d, held by reads %d, peak %d, capacity %d bytes (%d overcommits)\n",
		cs.CurrentBytes, cs.LoadingBytes, cs.PinnedBytes, cs.PeakBytes, cs.Capacity, cs.Overcommits)
	return b.String()
}

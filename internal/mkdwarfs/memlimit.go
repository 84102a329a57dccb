package mkdwarfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// ErrMemoryLimit is returned when a build cannot stay within
// --memory-limit.
var ErrMemoryLimit = errors.New("the build cannot stay within --memory-limit")

// memBase is what a build takes before it holds any of the input: the
// runtime, the binary's code and data, goroutine stacks, I/O buffers.
const memBase = 40 << 20

// memPlan is how a build shares its --memory-limit.
type memPlan struct {
	limit int64
	// fixed is what the options take whatever the input: block buffers
	// of the segmenter and the compression workers, and the encoders'
	// state.
	fixed int64
	// queue bounds the blocks waiting to be compressed or written.
	queue int64
	// codecs is the encoders' part of fixed.
	codecs int64
}

// planMemory checks that limit leaves room for what the options need
// whatever the input, and says what they need when it does not.
func planMemory(limit int64, blockBits, workers, lookback int, comp string) (memPlan, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	blk := int64(1) << blockBits
	// The segmenter holds the blocks it searches and the one it fills;
	// each worker one block in and one compressed block out.
	seg := blk * int64(max(lookback, 1)+1)
	codecs := int64(workers) * codecMemory(comp, blk)
	p := memPlan{limit: limit, fixed: memBase + seg + int64(workers)*2*blk + codecs, codecs: codecs}
	// What is left goes to the tree, its metadata, and blocks waiting
	// for a worker: those get at most a quarter, at least one block.
	p.queue = max(blk, min(int64(2*workers)*blk, (limit-p.fixed)/4))
	// The tree of even a small input needs some room.
	if need := p.fixed + p.queue + 16<<20; need > limit {
		return p, fmt.Errorf("%w: --memory-limit=%s is too low for these options: blocks of %s (-S %d), %d compression workers (-N) with %s and a segment lookback of %d blocks need at least %s; raise the limit or lower -S or -N",
			ErrMemoryLimit, sizeString(limit), sizeString(blk), blockBits, workers, comp, lookback, sizeString(need))
	}
	return p, nil
}

// codecMemory estimates what an encoder of spec keeps per worker
// beyond its input and output: match finders and windows.
func codecMemory(spec string, blk int64) int64 {
	algo, args, _ := strings.Cut(spec, ":")
	param := func(name string, def int64) int64 {
		for _, a := range strings.Split(args, ":") {
			k, v, ok := strings.Cut(a, "=")
			if ok && k == name {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil {
					return n
				}
			}
		}
		return def
	}
	switch algo {
	case "zstd":
		// A window of the block (or up to its 2^wlog) with hash and
		// chain tables of about as much again; the high levels search
		// more and keep a second table.
		w := min(blk, int64(1)<<min(param("window", 27), 31))
		if param("level", 3) >= 16 {
			return 6 * w
		}
		return 3 * w
	case "lzma":
		// A binary-tree match finder takes 9.5 times the dictionary.
		d := blk
		if b := param("dict_size", 0); b > 0 {
			d = min(d, int64(1)<<b)
		}
		return d*19/2 + 4<<20
	case "brotli":
		return 4 * min(blk, int64(1)<<param("lgwin", 22))
	case "lz4", "lz4hc":
		return 1 << 20
	default:
		return blk
	}
}

// guardMemory makes the Go heap keep within the plan, and ends the build
// with a clear error (through cancel) when what the input needs alone
// outgrows the limit, instead of a build that thrashes or is killed. The
// returned function stops the guard and restores the heap limit.
func guardMemory(p memPlan, cancel context.CancelCauseFunc) (stop func()) {
	// The runtime's limit covers all the Go memory (block buffers
	// included) but not the cgo encoders' state nor the binary's code,
	// which memBase holds; the guard compares the live heap with what is
	// left once blocks and encoders are at their most.
	heap := p.limit - p.fixed
	prev := int64(-1)
	if os.Getenv("GOMEMLIMIT") == "" {
		prev = debug.SetMemoryLimit(p.limit - p.codecs - memBase)
	}
	done := make(chan struct{})
	go func() {
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			metrics.Read(s)
			if s[0].Value.Kind() != metrics.KindUint64 {
				return
			}
			// Live heap after the last collection: what the build holds,
			// not garbage a collection would return. The collector needs
			// room for garbage on top: with less, the runtime caps its
			// CPU and lets the heap pass the limit (at 15/16, a build of
			// 10M entries peaked 6% over it).
			if live := int64(s[0].Value.Uint64()); live > heap/16*13 {
				cancel(fmt.Errorf("%w: the input's tree and metadata hold %s after a collection, too close to the %s --memory-limit=%s leaves for them next to %s of blocks and encoders; raise the limit",
					ErrMemoryLimit, sizeString(live), sizeString(heap), sizeString(p.limit), sizeString(p.fixed)))
				return
			}
		}
	}()
	return func() {
		close(done)
		if prev >= 0 {
			debug.SetMemoryLimit(prev)
		}
	}
}

// sizeString is n in the largest binary unit that keeps one decimal.
func sizeString(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

package block

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// pinEnv is a cache of 100-byte blocks filled with their number (block 98
// has 200 bytes, block 99 500), capacity 300; loads of blocks in gated
// wait for gate.
type pinEnv struct {
	c     *Cache
	gate  chan struct{}
	gated map[int]bool
}

func newPinEnv(t *testing.T, gated ...int) *pinEnv {
	e := &pinEnv{gate: make(chan struct{}), gated: map[int]bool{}}
	for _, b := range gated {
		e.gated[b] = true
	}
	e.c = NewCache(func(ctx context.Context, b int, alloc AllocFunc) ([]byte, error) {
		buf, err := alloc(pinEnvSize(b))
		if err != nil {
			return nil, err
		}
		if e.gated[b] {
			select {
			case <-e.gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		for i := range buf {
			buf[i] = byte(b)
		}
		return buf, nil
	}, CacheOptions{Capacity: 300, Workers: 2})
	e.c.s.mapMin = 1 // map every buffer, so a use after release faults
	// A clock that moves on every reading: Tidy(0) then finds every
	// entry idle, also where the system clock is coarse (Windows).
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	e.c.s.now = func() time.Time { mu.Lock(); defer mu.Unlock(); now = now.Add(time.Millisecond); return now }
	t.Cleanup(e.c.Close)
	return e
}

func (e *pinEnv) pin(t *testing.T, b int) *Pin {
	t.Helper()
	p := new(Pin)
	if err := e.c.Get(context.Background(), b, p); err != nil {
		t.Fatalf("Get(%d): %v", b, err)
	}
	checkBlock(t, p.Bytes(), b)
	return p
}

func (e *pinEnv) touch(t *testing.T, blocks ...int) {
	t.Helper()
	for _, b := range blocks {
		e.pin(t, b).Release()
	}
}

// waitStats polls until cond holds; a wait, not a timed assertion.
func (e *pinEnv) waitStats(t *testing.T, what string, cond func(CacheStats) bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(e.c.Stats()); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never reached: %s: %+v", what, e.c.Stats())
		}
	}
}

func pinEnvSize(b int) int {
	switch b {
	case 98:
		return 200
	case 99:
		return 500
	}
	return 100
}

func checkBlock(t *testing.T, d []byte, b int) {
	t.Helper()
	want := pinEnvSize(b)
	if len(d) != want || !bytes.Equal(d, bytes.Repeat([]byte{byte(b)}, want)) {
		t.Fatalf("block %d: %d bytes, not %d bytes of %d", b, len(d), want, b)
	}
}

// checkCached checks that exactly the blocks want of 1..9 are cached.
func checkCached(t *testing.T, c *Cache, want ...int) {
	t.Helper()
	var got []int
	for b := 1; b <= 9; b++ {
		if c.Contains(b) {
			got = append(got, b)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("cached blocks %v, want %v", got, want)
	}
}

func checkUsage(t *testing.T, c *Cache, current, loading, pinned int64) {
	t.Helper()
	st := c.Stats()
	if st.CurrentBytes != current || st.LoadingBytes != loading || st.PinnedBytes != pinned {
		t.Fatalf("cached/loading/pinned %d/%d/%d bytes, want %d/%d/%d (%+v)",
			st.CurrentBytes, st.LoadingBytes, st.PinnedBytes, current, loading, pinned, st)
	}
}

func TestCachePins(t *testing.T) {
	tests := []struct {
		name  string
		gated []int
		// mapped: the case needs block memory the cache maps itself,
		// which systems without mappings (OffHeap) do not have.
		mapped bool
		run    func(t *testing.T, e *pinEnv)
	}{{
		name: "evicted pinned block stays readable until released",
		run: func(t *testing.T, e *pinEnv) {
			p := e.pin(t, 1)
			e.c.Tidy(0)
			if e.c.Contains(1) {
				t.Fatal("block 1 still cached after Tidy(0)")
			}
			checkUsage(t, e.c, 0, 0, 100)
			checkBlock(t, p.Bytes(), 1)
			p.Release()
			checkUsage(t, e.c, 0, 0, 0)
		},
	}, {
		name: "release of a cached block keeps it cached",
		run: func(t *testing.T, e *pinEnv) {
			p := e.pin(t, 1)
			p.Release()
			checkUsage(t, e.c, 100, 0, 0)
			q := e.pin(t, 1)
			defer q.Release()
			if st := e.c.Stats(); st.Hits != 1 || st.Decoded != 1 {
				t.Errorf("second Get was not a hit: %+v", st)
			}
		},
	}, {
		name: "two pins of one block: freed after the last release",
		run: func(t *testing.T, e *pinEnv) {
			p, q := e.pin(t, 1), e.pin(t, 1)
			e.c.Tidy(0)
			p.Release()
			checkUsage(t, e.c, 0, 0, 100)
			checkBlock(t, q.Bytes(), 1)
			q.Release()
			checkUsage(t, e.c, 0, 0, 0)
		},
	}, {
		name: "making room skips pinned blocks",
		run: func(t *testing.T, e *pinEnv) {
			p := e.pin(t, 1) // least recently used from here on
			defer p.Release()
			e.touch(t, 2, 3, 4)
			if !e.c.Contains(1) || e.c.Contains(2) || !e.c.Contains(3) || !e.c.Contains(4) {
				t.Errorf("cached: 1=%v 2=%v 3=%v 4=%v, want 1, 3, 4", e.c.Contains(1), e.c.Contains(2), e.c.Contains(3), e.c.Contains(4))
			}
			checkUsage(t, e.c, 300, 0, 0)
		},
	}, {
		name: "everything pinned: overcommit, back within capacity once released",
		run: func(t *testing.T, e *pinEnv) {
			pins := []*Pin{e.pin(t, 1), e.pin(t, 2), e.pin(t, 3), e.pin(t, 4)}
			if st := e.c.Stats(); st.Overcommits != 1 || st.PeakBytes != 400 {
				t.Errorf("overcommits %d peak %d, want 1 and 400", st.Overcommits, st.PeakBytes)
			}
			if e.c.Contains(4) {
				t.Error("block beyond the capacity was cached")
			}
			checkUsage(t, e.c, 300, 0, 100)
			for _, p := range pins {
				p.Release()
			}
			e.touch(t, 5)
			checkUsage(t, e.c, 300, 0, 0)
		},
	}, {
		name:   "a load decodes into the memory of a block it evicts",
		mapped: true,
		run: func(t *testing.T, e *pinEnv) {
			p := e.pin(t, 1) // pinned: its memory is not the one reused
			e.touch(t, 2, 3, 4)
			checkBlock(t, p.Bytes(), 1)
			p.Release()
			if st := e.c.Stats(); st.Reused != 1 || st.Evictions != 1 {
				t.Errorf("reused %d evictions %d, want 1 and 1", st.Reused, st.Evictions)
			}
			e.touch(t, 4, 3, 2) // hits, all correct after the reuse
			checkUsage(t, e.c, 300, 0, 0)
		},
	}, {
		name: "a load of another size gets memory of its own",
		run: func(t *testing.T, e *pinEnv) {
			e.touch(t, 1, 2, 3, 98)
			if st := e.c.Stats(); st.Reused != 0 || st.Evictions != 2 {
				t.Errorf("reused %d evictions %d, want 0 and 2", st.Reused, st.Evictions)
			}
			e.touch(t, 3, 98)
			checkUsage(t, e.c, 300, 0, 0)
		},
	}, {
		name: "spent blocks make room first, the latest spent first",
		run: func(t *testing.T, e *pinEnv) {
			e.touch(t, 1, 2, 3)
			e.c.Spent(2)
			e.c.Spent(3)
			e.c.Spent(7) // not cached: no effect
			e.touch(t, 4)
			checkCached(t, e.c, 1, 2, 4)
			e.touch(t, 5)
			checkCached(t, e.c, 1, 4, 5)
			if st := e.c.Stats(); st.Spent != 2 || st.Evictions != 2 {
				t.Errorf("spent %d evictions %d, want 2 and 2", st.Spent, st.Evictions)
			}
		},
	}, {
		name: "a spent block read again is an ordinary one",
		run: func(t *testing.T, e *pinEnv) {
			e.touch(t, 1, 2, 3)
			e.c.Spent(3)
			e.touch(t, 3, 4) // 3 is the most recently used now; 1 the least
			checkCached(t, e.c, 2, 3, 4)
		},
	}, {
		name: "a pinned spent block stays; Tidy and Close drop spent blocks",
		run: func(t *testing.T, e *pinEnv) {
			e.touch(t, 1, 2)
			p := e.pin(t, 3)
			e.c.Spent(2)
			e.c.Spent(3)
			e.touch(t, 4) // 3, the latest spent, is pinned: 2 goes
			checkCached(t, e.c, 1, 3, 4)
			p.Release()
			e.c.Tidy(0)
			checkCached(t, e.c)
			checkUsage(t, e.c, 0, 0, 0)
			e.touch(t, 5)
			e.c.Spent(5)
			e.c.Close()
			checkUsage(t, e.c, 0, 0, 0)
		},
	}, {
		name: "double release panics",
		run: func(t *testing.T, e *pinEnv) {
			p := e.pin(t, 1)
			p.Release()
			defer func() {
				r := recover()
				if err, ok := r.(error); !ok || !errors.Is(err, ErrReleased) {
					t.Errorf("second Release: recovered %v, want ErrReleased", r)
				}
				checkUsage(t, e.c, 100, 0, 0)
			}()
			p.Release()
		},
	}, {
		name: "Bytes after Release and Get into a held Pin panic",
		run: func(t *testing.T, e *pinEnv) {
			p := e.pin(t, 1)
			mustPanic(t, "Get into a held Pin", func() { e.c.Get(context.Background(), 2, p) })
			p.Release()
			mustPanic(t, "Bytes after Release", func() { p.Bytes() })
			if err := e.c.Get(context.Background(), 2, p); err != nil { // an empty Pin is reusable
				t.Fatal(err)
			}
			checkBlock(t, p.Bytes(), 2)
			p.Release()
			checkUsage(t, e.c, 200, 0, 0)
		},
	}, {
		name:  "room is made before decoding, loads count against capacity",
		gated: []int{4},
		run: func(t *testing.T, e *pinEnv) {
			e.touch(t, 1, 2, 3)
			done := make(chan *Pin)
			go func() {
				p := new(Pin)
				if err := e.c.Get(context.Background(), 4, p); err != nil {
					t.Error(err)
				}
				done <- p
			}()
			e.waitStats(t, "block 4 loading", func(st CacheStats) bool { return st.LoadingBytes == 100 })
			if e.c.Contains(1) {
				t.Error("block 1 not evicted before block 4 was decoded")
			}
			checkUsage(t, e.c, 200, 100, 0)
			close(e.gate)
			p := <-done
			checkBlock(t, p.Bytes(), 4)
			p.Release()
			checkUsage(t, e.c, 300, 0, 0)
			if st := e.c.Stats(); st.PeakBytes != 300 {
				t.Errorf("peak %d, want 300", st.PeakBytes)
			}
		},
	}, {
		name:  "a waiter that gives up holds nothing",
		gated: []int{1},
		run: func(t *testing.T, e *pinEnv) {
			ctx, cancel := context.WithCancel(context.Background())
			got := make(chan error)
			go func() {
				var p Pin
				got <- e.c.Get(ctx, 1, &p)
			}()
			e.waitStats(t, "block 1 loading", func(st CacheStats) bool { return st.LoadingBytes == 100 })
			cancel()
			if err := <-got; !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled Get: %v", err)
			}
			close(e.gate)
			e.waitStats(t, "block 1 cached", func(st CacheStats) bool { return st.Decoded == 1 })
			e.c.Tidy(0) // frees it unless someone still holds a reference
			checkUsage(t, e.c, 0, 0, 0)
		},
	}, {
		name: "oversized block: evicts all it can, pinned outside the cache, freed on release",
		run: func(t *testing.T, e *pinEnv) {
			e.touch(t, 1)
			p := e.pin(t, 99)
			if e.c.Contains(99) || e.c.Contains(1) {
				t.Errorf("cached: 99=%v 1=%v, want neither", e.c.Contains(99), e.c.Contains(1))
			}
			checkUsage(t, e.c, 0, 0, 500)
			p.Release()
			checkUsage(t, e.c, 0, 0, 0)
		},
	}, {
		name: "close with pinned blocks: readable until released",
		run: func(t *testing.T, e *pinEnv) {
			p := e.pin(t, 1)
			e.touch(t, 2)
			e.c.Close()
			checkUsage(t, e.c, 0, 0, 100)
			checkBlock(t, p.Bytes(), 1)
			var q Pin
			if err := e.c.Get(context.Background(), 1, &q); !errors.Is(err, ErrClosed) {
				t.Errorf("Get after Close: %v", err)
			}
			p.Release()
			checkUsage(t, e.c, 0, 0, 0)
		},
	}, {
		name: "failed load frees its buffer",
		run: func(t *testing.T, e *pinEnv) {
			c := NewCache(func(ctx context.Context, b int, alloc AllocFunc) ([]byte, error) {
				if _, err := alloc(100); err != nil {
					return nil, err
				}
				return nil, errors.New("bad block")
			}, CacheOptions{Capacity: 300})
			defer c.Close()
			var p Pin
			if err := c.Get(context.Background(), 1, &p); err == nil || err.Error() != "bad block" {
				t.Errorf("Get: %v, want bad block", err)
			}
			checkUsage(t, c, 0, 0, 0)
		},
	}, {
		name: "a loader must return the buffer it was given",
		run: func(t *testing.T, e *pinEnv) {
			c := NewCache(func(ctx context.Context, b int, alloc AllocFunc) ([]byte, error) {
				if _, err := alloc(4); err != nil {
					return nil, err
				}
				return []byte("heap"), nil
			}, CacheOptions{Capacity: 300})
			defer c.Close()
			var p Pin
			err := c.Get(context.Background(), 1, &p)
			if want := "block cache: load block 1: result is not in the buffer the cache provided"; err == nil || err.Error() != want {
				t.Errorf("Get: %v, want %q", err, want)
			}
			checkUsage(t, c, 0, 0, 0)
		},
	}}
	for _, tc := range tests {
		// The env maps every buffer where the system maps any.
		if tc.mapped && !OffHeap(1<<30) {
			t.Logf("not here: %s: decoded blocks are Go heap on this system, left to the collector, not reused", tc.name)
			continue
		}
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newPinEnv(t, tc.gated...)) })
	}
}

// TestCacheStress runs readers (some of them cancelling), prefetches and
// Tidy against a cache too small for the blocks, under -race in make
// test. Every read checks the block's content, and every buffer is a
// mapping of its own, so a block freed while pinned would fault or read
// wrong. Readers pin one block at a time, so with room for readers+workers
// blocks the cache never exceeds its capacity.
func TestCacheStress(t *testing.T) {
	const readers, workers, nblocks = 6, 3, 40
	size := func(b int) int { return 1000 + b*53%700 }
	const capacity = (readers + workers) * 1700
	c := NewCache(func(ctx context.Context, b int, alloc AllocFunc) ([]byte, error) {
		buf, err := alloc(size(b))
		if err != nil {
			return nil, err
		}
		for i := range buf {
			buf[i] = byte(b + i)
		}
		return buf, nil
	}, CacheOptions{Capacity: capacity, Workers: workers})
	c.s.mapMin = 1
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			c.Tidy(0)
			c.Prefetch(rand.IntN(nblocks))
			c.Spent(rand.IntN(nblocks))
		}
	})
	var readersWG sync.WaitGroup
	for g := range readers {
		readersWG.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 400 {
				b := rng.IntN(nblocks)
				ctx, cancel := context.WithCancel(context.Background())
				if rng.IntN(8) == 0 {
					cancel() // gives up at once or soon
				}
				var p Pin
				err := c.Get(ctx, b, &p)
				cancel()
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						t.Error(err)
					}
					continue
				}
				d := p.Bytes()
				if len(d) != size(b) {
					t.Errorf("block %d: %d bytes, want %d", b, len(d), size(b))
				}
				for i, v := range d {
					if v != byte(b+i) {
						t.Errorf("block %d: byte %d is %d", b, i, v)
						break
					}
				}
				p.Release()
			}
		})
	}
	readersWG.Wait()
	close(stop)
	wg.Wait()
	st := c.Stats()
	if st.PeakBytes > capacity || st.Overcommits != 0 {
		t.Errorf("capacity %d exceeded: %+v", capacity, st)
	}
	c.Close()
	checkUsage(t, c, 0, 0, 0)
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", what)
		}
	}()
	f()
}

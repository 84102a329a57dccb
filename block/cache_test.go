package block

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// copying adapts a loader that returns a block's bytes to a LoadFunc,
// copying them into the cache's buffer.
func copying(f func(ctx context.Context, b int) ([]byte, error)) LoadFunc {
	return func(ctx context.Context, b int, alloc AllocFunc) ([]byte, error) {
		d, err := f(ctx, b)
		if err != nil {
			return nil, err
		}
		buf, err := alloc(len(d))
		if err != nil {
			return nil, err
		}
		copy(buf, d)
		return buf, nil
	}
}

// get returns a copy of block b and releases its pin.
func get(c *Cache, ctx context.Context, b int) ([]byte, error) {
	var p Pin
	if err := c.Get(ctx, b, &p); err != nil {
		return nil, err
	}
	defer p.Release()
	return append([]byte{}, p.Bytes()...), nil
}

func TestCacheCapacityAndLRU(t *testing.T) {
	var loads atomic.Int64
	c := NewCache(copying(func(ctx context.Context, b int) ([]byte, error) {
		loads.Add(1)
		return make([]byte, 100+b), nil
	}), CacheOptions{Capacity: 350, Workers: 2})
	defer c.Close()
	ctx := context.Background()
	for _, b := range []int{0, 1, 2} { // 100+101+102 = 303
		if d, err := get(c, ctx, b); err != nil || len(d) != 100+b {
			t.Fatal(err)
		}
	}
	get(c, ctx, 0) // 0 becomes most recent; LRU order now 1, 2, 0
	get(c, ctx, 3) // 103 bytes: must evict 1
	if c.Contains(1) || !c.Contains(0) || !c.Contains(2) || !c.Contains(3) {
		t.Errorf("after eviction: 0=%v 1=%v 2=%v 3=%v", c.Contains(0), c.Contains(1), c.Contains(2), c.Contains(3))
	}
	get(c, ctx, 4) // 104: evicts 2
	if c.Contains(2) || !c.Contains(0) {
		t.Error("LRU order not respected")
	}
	st := c.Stats()
	if st.PeakBytes > 350 || st.CurrentBytes > 350 || st.Capacity != 350 {
		t.Errorf("capacity exceeded: %+v", st)
	}
	if st.Hits != 1 || st.Misses != 5 || st.Decoded != 5 || st.Evictions != 2 || loads.Load() != 5 {
		t.Errorf("stats %+v loads %d", st, loads.Load())
	}
	// Oversized blocks are returned, not retained.
	big := NewCache(copying(func(ctx context.Context, b int) ([]byte, error) { return make([]byte, 1000), nil }), CacheOptions{Capacity: 500})
	defer big.Close()
	if d, err := get(big, ctx, 1); err != nil || len(d) != 1000 {
		t.Fatal(err)
	}
	if big.Contains(1) || big.Stats().CurrentBytes != 0 || big.Stats().Oversized != 1 {
		t.Errorf("oversized retained: %+v", big.Stats())
	}
}

// Readers pin one block at a time and at most Workers loads hold a buffer,
// so a capacity of (readers+workers) blocks always leaves an unpinned
// block to evict: the cache never exceeds it, in-flight loads included.
func TestCacheRandomPeak(t *testing.T) {
	const readers, workers, maxBlock = 8, 4, 1500
	const capacity = (readers + workers) * maxBlock // 18000 of 23 blocks, ~28700 bytes
	c := NewCache(copying(func(ctx context.Context, b int) ([]byte, error) {
		return make([]byte, 1000+b*37%500), nil
	}), CacheOptions{Capacity: capacity, Workers: workers})
	defer c.Close()
	var wg sync.WaitGroup
	for g := range readers {
		wg.Go(func() {
			for i := range 200 {
				if _, err := get(c, context.Background(), (i*7+g)%23); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if st := c.Stats(); st.PeakBytes > capacity || st.CurrentBytes > capacity || st.Overcommits != 0 || st.Evictions == 0 {
		t.Errorf("capacity exceeded or nothing evicted: %+v", st)
	}
}

func TestCacheSingleflight(t *testing.T) {
	var loads atomic.Int64
	release := make(chan struct{})
	c := NewCache(copying(func(ctx context.Context, b int) ([]byte, error) {
		loads.Add(1)
		<-release
		return []byte("data"), nil
	}), CacheOptions{Capacity: 1 << 20, Workers: 4})
	defer c.Close()
	var wg sync.WaitGroup
	var started sync.WaitGroup
	started.Add(16)
	for range 16 {
		wg.Go(func() {
			started.Done()
			d, err := get(c, context.Background(), 7)
			if err != nil || string(d) != "data" {
				t.Errorf("Get: %q %v", d, err)
			}
		})
	}
	started.Wait()
	// Wait until all 16 are registered as misses before releasing the load.
	for deadline := time.Now().Add(2 * time.Second); c.Stats().Misses < 16 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if n := loads.Load(); n != 1 {
		t.Errorf("loads = %d, want 1", n)
	}
	if st := c.Stats(); st.Decoded != 1 || st.Shared != 15 {
		t.Errorf("stats %+v", st)
	}
}

func TestCacheWorkerBound(t *testing.T) {
	var cur, peak atomic.Int64
	c := NewCache(copying(func(ctx context.Context, b int) ([]byte, error) {
		n := cur.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		cur.Add(-1)
		return []byte{byte(b)}, nil
	}), CacheOptions{Capacity: 1 << 20, Workers: 3})
	defer c.Close()
	var wg sync.WaitGroup
	for b := range 20 {
		wg.Go(func() { get(c, context.Background(), b) })
	}
	wg.Wait()
	if p := peak.Load(); p > 3 || p < 1 {
		t.Errorf("peak concurrency %d, want <= 3", p)
	}
}

func TestCacheErrorsAndContext(t *testing.T) {
	boom := errors.New("boom")
	var fail atomic.Bool
	fail.Store(true)
	block := make(chan struct{})
	c := NewCache(copying(func(ctx context.Context, b int) ([]byte, error) {
		if b == 99 {
			select {
			case <-block:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if b == 13 {
			panic("bad block")
		}
		if fail.Load() {
			return nil, fmt.Errorf("load %d: %w", b, boom)
		}
		return []byte("ok"), nil
	}), CacheOptions{Capacity: 100, Workers: 2})
	if _, err := get(c, context.Background(), 1); !errors.Is(err, boom) {
		t.Errorf("err %v", err)
	}
	fail.Store(false)
	if d, err := get(c, context.Background(), 1); err != nil || string(d) != "ok" {
		t.Errorf("error was cached: %v", err)
	}
	if _, err := get(c, context.Background(), 13); err == nil {
		t.Error("panic not reported")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := get(c, ctx, 99); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ctx: %v", err)
	}
	done := make(chan struct{})
	go func() { c.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Close hangs on in-flight load")
	}
	if _, err := get(c, context.Background(), 1); !errors.Is(err, ErrClosed) {
		t.Errorf("after close: %v", err)
	}
}

func TestCachePrefetch(t *testing.T) {
	var loads atomic.Int64
	c := NewCache(copying(func(ctx context.Context, b int) ([]byte, error) {
		loads.Add(1)
		return []byte{byte(b)}, nil
	}), CacheOptions{Capacity: 100, Workers: 1})
	defer c.Close()
	c.Prefetch(5)
	for deadline := time.Now().Add(2 * time.Second); !c.Contains(5) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if d, err := get(c, context.Background(), 5); err != nil || d[0] != 5 {
		t.Fatal(err)
	}
	c.Prefetch(5) // cached: no new load
	if st := c.Stats(); st.Hits != 1 || loads.Load() != 1 || st.Prefetches != 1 {
		t.Errorf("stats %+v loads %d", st, loads.Load())
	}
	for b := range 100 { // budget bounds outstanding prefetches; must not block
		c.Prefetch(b)
	}
}

func TestCacheTidy(t *testing.T) {
	c := NewCache(copying(func(ctx context.Context, b int) ([]byte, error) { return []byte{1}, nil }), CacheOptions{Capacity: 100})
	defer c.Close()
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	c.s.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ctx := context.Background()
	get(c, ctx, 1)
	advance(10 * time.Second)
	get(c, ctx, 2)
	advance(5 * time.Second)
	get(c, ctx, 3)
	advance(time.Second)
	get(c, ctx, 2) // refresh: idle 0s now
	c.Tidy(3 * time.Second)
	if c.Contains(1) || !c.Contains(2) || !c.Contains(3) {
		t.Errorf("tidy: 1=%v 2=%v 3=%v", c.Contains(1), c.Contains(2), c.Contains(3))
	}
	c.Tidy(0)
	if c.Contains(3) || !c.Contains(2) {
		t.Errorf("tidy(0): 2=%v 3=%v", c.Contains(2), c.Contains(3))
	}
	if st := c.Stats(); st.Expired != 2 || st.CurrentBytes != 1 {
		t.Errorf("stats %+v", st)
	}
}

package block

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"
)

// LoadFunc produces the decompressed contents of a block.
type LoadFunc func(ctx context.Context, block int) ([]byte, error)

// CacheOptions controls NewCache.
type CacheOptions struct {
	Capacity int64 // bytes of decompressed data held at most
	Workers  int   // decode pool size, >=1
}

// CacheStats is a snapshot of cache counters.
type CacheStats struct {
	Hits         int64 // Gets answered from the cache
	Misses       int64 // Gets that had to wait for a load (own or shared)
	Shared       int64 // misses that joined a load already in flight
	Decoded      int64 // successful loads
	DecodedBytes int64 // bytes produced by successful loads
	Failed       int64 // loads that returned an error
	Prefetches   int64 // loads started by Prefetch
	Evictions    int64 // entries dropped to make room
	Expired      int64 // entries dropped by Tidy
	Oversized    int64 // loaded blocks larger than Capacity (returned, not kept)
	CurrentBytes int64
	PeakBytes    int64
	Capacity     int64
}

// Cache is a bounded LRU cache of decompressed blocks. Concurrent Gets of
// one block share a single load, and loads run on a bounded pool. Returned
// slices are shared between callers and must not be modified.
type Cache struct {
	load     LoadFunc
	capacity int64
	sem      chan struct{} // one token per decode worker
	prefetch chan struct{} // bounds outstanding prefetches
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	now      func() time.Time // replaceable in tests

	mu       sync.Mutex
	closed   bool
	lru      list.List // of *cacheEntry, front = most recently used
	entries  map[int]*list.Element
	inflight map[int]*cacheCall
	stats    CacheStats
}

type cacheEntry struct {
	block    int
	data     []byte
	lastUsed time.Time
}

type cacheCall struct {
	done chan struct{}
	data []byte
	err  error
}

// NewCache creates a cache that loads missing blocks with load.
func NewCache(load LoadFunc, opts CacheOptions) *Cache {
	workers := max(opts.Workers, 1)
	ctx, cancel := context.WithCancel(context.Background())
	c := &Cache{
		load:     load,
		capacity: max(opts.Capacity, 0),
		sem:      make(chan struct{}, workers),
		prefetch: make(chan struct{}, 2*workers),
		ctx:      ctx,
		cancel:   cancel,
		now:      time.Now,
		entries:  map[int]*list.Element{},
		inflight: map[int]*cacheCall{},
	}
	c.stats.Capacity = c.capacity
	return c
}

// Get returns the decompressed block, loading it if necessary. A block
// larger than the capacity is returned but not retained. Load errors are not
// cached. If ctx ends first Get returns ctx.Err(); the shared load goes on
// and its result is still cached for later callers.
func (c *Cache) Get(ctx context.Context, block int) ([]byte, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("block cache: get block %d: %w", block, ErrClosed)
	}
	if el, ok := c.entries[block]; ok {
		e := el.Value.(*cacheEntry)
		e.lastUsed = c.now()
		c.lru.MoveToFront(el)
		c.stats.Hits++
		c.mu.Unlock()
		return e.data, nil
	}
	c.stats.Misses++
	cl, ok := c.inflight[block]
	if ok {
		c.stats.Shared++
	} else {
		cl = c.startLocked(ctx, block, false)
	}
	c.mu.Unlock()
	select {
	case <-cl.done:
		return cl.data, cl.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Prefetch starts loading block in the background if it is neither cached
// nor in flight and the prefetch budget (2x workers) allows it. Best effort.
func (c *Cache) Prefetch(block int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if _, ok := c.entries[block]; ok {
		return
	}
	if _, ok := c.inflight[block]; ok {
		return
	}
	select {
	case c.prefetch <- struct{}{}:
	default:
		return // budget exhausted; prefetching is only a hint
	}
	c.stats.Prefetches++
	c.startLocked(context.Background(), block, true)
}

// startLocked registers and launches a load; c.mu must be held.
func (c *Cache) startLocked(ctx context.Context, block int, isPrefetch bool) *cacheCall {
	cl := &cacheCall{done: make(chan struct{})}
	c.inflight[block] = cl
	c.wg.Add(1)
	go c.run(ctx, block, cl, isPrefetch)
	return cl
}

func (c *Cache) run(ctx context.Context, block int, cl *cacheCall, isPrefetch bool) {
	defer c.wg.Done()
	if isPrefetch {
		defer func() { <-c.prefetch }()
	}
	var data []byte
	var err error
	select {
	case c.sem <- struct{}{}:
		data, err = c.callLoad(ctx, block)
		<-c.sem
	case <-c.ctx.Done():
		err = fmt.Errorf("block cache: load block %d: %w", block, ErrClosed)
	}
	c.mu.Lock()
	delete(c.inflight, block)
	if err == nil {
		c.stats.Decoded++
		c.stats.DecodedBytes += int64(len(data))
		c.insertLocked(block, data)
	} else {
		c.stats.Failed++
	}
	c.mu.Unlock()
	cl.data, cl.err = data, err
	close(cl.done)
}

// callLoad runs the loader detached from the caller's cancellation (other
// callers may be waiting for the same block) but cancelled by Close, and
// turns a panic in the loader into an error so waiters are never stranded.
func (c *Cache) callLoad(ctx context.Context, block int) (data []byte, err error) {
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	defer func() {
		if r := recover(); r != nil {
			data, err = nil, fmt.Errorf("block cache: load block %d panicked: %v", block, r)
		}
	}()
	return c.load(lctx, block)
}

// insertLocked adds a loaded block, evicting least recently used entries to
// stay within capacity; c.mu must be held.
func (c *Cache) insertLocked(block int, data []byte) {
	size := int64(len(data))
	if c.closed {
		return
	}
	if size > c.capacity {
		c.stats.Oversized++
		return
	}
	if el, ok := c.entries[block]; ok {
		c.removeLocked(el)
	}
	for c.stats.CurrentBytes+size > c.capacity {
		c.removeLocked(c.lru.Back())
		c.stats.Evictions++
	}
	c.entries[block] = c.lru.PushFront(&cacheEntry{block: block, data: data, lastUsed: c.now()})
	c.stats.CurrentBytes += size
	c.stats.PeakBytes = max(c.stats.PeakBytes, c.stats.CurrentBytes)
}

func (c *Cache) removeLocked(el *list.Element) {
	e := c.lru.Remove(el).(*cacheEntry)
	delete(c.entries, e.block)
	c.stats.CurrentBytes -= int64(len(e.data))
}

// Contains reports whether block is currently cached (for tests and stats).
func (c *Cache) Contains(block int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.entries[block]
	return ok
}

// Workers is the size of the decode pool.
func (c *Cache) Workers() int { return cap(c.sem) }

// Stats returns a snapshot of the counters.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Tidy drops entries that have not been used for longer than maxAge.
func (c *Cache) Tidy(maxAge time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	// The list is ordered by last use, so the idle entries are at the back.
	for el := c.lru.Back(); el != nil; el = c.lru.Back() {
		if now.Sub(el.Value.(*cacheEntry).lastUsed) <= maxAge {
			break
		}
		c.removeLocked(el)
		c.stats.Expired++
	}
}

// Close drops all entries, cancels running loads and waits for them. Later
// Gets fail with ErrClosed.
func (c *Cache) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.lru.Init()
	clear(c.entries)
	c.stats.CurrentBytes = 0
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

package block

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"
)

// LoadFunc produces the decompressed contents of a block. It must put them
// into memory it gets from alloc (called at most once, once the block's
// size is known and before decoding, so the cache can make room for it
// first) and return that buffer, or a prefix of it. Only an empty block
// may skip alloc.
type LoadFunc func(ctx context.Context, block int, alloc AllocFunc) ([]byte, error)

// AllocFunc returns a buffer of n bytes for the block being loaded,
// counted against the cache's capacity from then on. Its contents are
// undefined (it may be the memory of a block just evicted): the loader
// must write all of the bytes it returns.
type AllocFunc func(n int) ([]byte, error)

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
	Spent        int64 // entries marked by Spent
	Reused       int64 // loads that decoded into the memory of an evicted block
	Expired      int64 // entries dropped by Tidy
	Oversized    int64 // loaded blocks larger than Capacity (returned, not kept)
	Overcommits  int64 // loads that found no unpinned block left to evict
	CurrentBytes int64 // blocks in the cache
	LoadingBytes int64 // buffers of loads in progress
	PinnedBytes  int64 // blocks out of the cache that readers still hold
	PeakBytes    int64 // most of CurrentBytes+LoadingBytes+PinnedBytes at once
	Capacity     int64
}

// ErrReleased is the panic value of a second Release of one Pin.
var ErrReleased = errors.New("block cache: block released twice")

// Cache is a bounded LRU cache of decompressed blocks, in which blocks a
// sequential reader has gone past (see Spent) are the first to go.
// Concurrent Gets of one block share a single load, and loads run on a
// bounded pool.
//
// Get pins the block: its memory stays valid until the Pin is released, even if the block leaves the cache in the meantime, and is
// freed (handed back to the system) once it is out of the cache and no
// Pin holds it. Everything the cache holds counts against its capacity:
// the cached blocks, the blocks being decoded (room is made for them
// before decoding starts) and evicted blocks still pinned. Only when every
// cached block is pinned does a load exceed the capacity (Overcommits);
// such a block is not cached but freed once its readers release it, so
// the cached blocks alone never exceed the capacity.
type Cache struct {
	load     LoadFunc
	capacity int64
	mapMin   int           // smallest buffer mapped of its own
	sem      chan struct{} // one token per decode worker
	prefetch chan struct{} // bounds outstanding prefetches
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	now      func() time.Time // replaceable in tests

	mu       sync.Mutex
	closed   bool
	lru      list.List // of *cacheEntry, front = most recently used
	spent    list.List // of *cacheEntry marked by Spent, front = latest
	entries  map[int]*list.Element
	inflight map[int]*cacheCall
	stats    CacheStats
}

// cacheEntry is one decoded block. All fields but block and data are
// guarded by Cache.mu.
type cacheEntry struct {
	block    int
	buf      blockBuf
	data     []byte // buf.b[:size of the block]
	refs     int    // Pins not yet released
	cached   bool   // in the LRU or the spent list
	spent    bool   // in the spent list
	lastUsed time.Time
}

// size is what the entry counts against the capacity.
func (e *cacheEntry) size() int64 { return int64(len(e.buf.b)) }

type cacheCall struct {
	done chan struct{}
	// Guarded by Cache.mu:
	waiters  int  // Gets waiting; each gets a reference when the load ends
	finished bool // entry and err are set
	entry    *cacheEntry
	err      error
}

// Pin holds a decompressed block in memory. A Pin is filled by Get and
// emptied by Release, and may be filled again after that; its bytes stay
// valid until Release and no slice of them may be used afterwards. A Pin
// must not be copied: each Get needs exactly one Release.
type Pin struct {
	_     noCopy
	c     *Cache
	e     *cacheEntry // nil when empty
	block int
}

// noCopy makes go vet report copies of a Pin.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// Bytes returns the block's data, which must not be modified. It panics
// on an empty Pin.
func (p *Pin) Bytes() []byte {
	if p.e == nil {
		panic(fmt.Errorf("block cache: Bytes of block %d after Release", p.block))
	}
	return p.e.data
}

// Held reports whether the Pin holds a block.
func (p *Pin) Held() bool { return p.e != nil }

// Block is the number of the block the Pin holds or last held.
func (p *Pin) Block() int { return p.block }

// Release lets go of the block. A block that has left the cache is freed
// when its last Pin is released. Releasing an empty Pin (a second Release)
// panics with ErrReleased: the caller may have used memory that is gone.
func (p *Pin) Release() {
	e := p.e
	if e == nil {
		panic(fmt.Errorf("%w (block %d)", ErrReleased, p.block))
	}
	p.e = nil
	c := p.c
	c.mu.Lock()
	free := c.unrefLocked(e)
	c.mu.Unlock()
	free.free()
}

// fill makes p hold e, on which a reference was taken for it.
func (p *Pin) fill(c *Cache, e *cacheEntry) {
	p.c, p.e, p.block = c, e, e.block
}

// unrefLocked drops one reference to e and returns its buffer if that
// freed it (for the caller to free after unlocking); c.mu must be held.
func (c *Cache) unrefLocked(e *cacheEntry) blockBuf {
	e.refs--
	if e.refs > 0 || e.cached {
		return blockBuf{}
	}
	c.stats.PinnedBytes -= e.size()
	return e.buf
}

// NewCache creates a cache that loads missing blocks with load.
func NewCache(load LoadFunc, opts CacheOptions) *Cache {
	workers := max(opts.Workers, 1)
	ctx, cancel := context.WithCancel(context.Background())
	c := &Cache{
		load:     load,
		capacity: max(opts.Capacity, 0),
		mapMin:   mapMin,
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

// Get makes p hold the decompressed block, loading it if necessary; p
// must be empty and the caller must Release it. A block larger than the
// capacity is returned but not retained. Load errors are not cached. If
// ctx ends first Get returns ctx.Err(); the shared load goes on and its
// result is still cached for later callers. On error p stays empty.
func (c *Cache) Get(ctx context.Context, block int, p *Pin) error {
	if p.e != nil {
		panic(fmt.Errorf("block cache: Get of block %d into a Pin that still holds block %d", block, p.block))
	}
	p.block = block
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("block cache: get block %d: %w", block, ErrClosed)
	}
	if el, ok := c.entries[block]; ok {
		e := el.Value.(*cacheEntry)
		e.refs++
		e.lastUsed = c.now()
		if e.spent {
			// Read again after all: an ordinary block from now on.
			c.spent.Remove(el)
			e.spent = false
			c.entries[block] = c.lru.PushFront(e)
		} else {
			c.lru.MoveToFront(el)
		}
		c.stats.Hits++
		c.mu.Unlock()
		p.fill(c, e)
		return nil
	}
	c.stats.Misses++
	cl, ok := c.inflight[block]
	if ok {
		c.stats.Shared++
	} else {
		cl = c.startLocked(ctx, block, false)
	}
	cl.waiters++
	c.mu.Unlock()
	select {
	case <-cl.done:
		if cl.err != nil {
			return cl.err
		}
		p.fill(c, cl.entry)
		return nil
	case <-ctx.Done():
		// Give back the reference the load holds (or will hold) for us.
		var free blockBuf
		c.mu.Lock()
		if !cl.finished {
			cl.waiters--
		} else if cl.err == nil {
			free = c.unrefLocked(cl.entry)
		}
		c.mu.Unlock()
		free.free()
		return ctx.Err()
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
	var buf blockBuf
	var data []byte
	var err error
	select {
	case c.sem <- struct{}{}:
		data, err = c.callLoad(ctx, block, &buf)
		<-c.sem
	case <-c.ctx.Done():
		err = fmt.Errorf("block cache: load block %d: %w", block, ErrClosed)
	}
	var free []blockBuf
	c.mu.Lock()
	delete(c.inflight, block)
	c.stats.LoadingBytes -= int64(len(buf.b))
	if err == nil {
		c.stats.Decoded++
		c.stats.DecodedBytes += int64(len(data))
		e := &cacheEntry{block: block, buf: buf, data: data, refs: cl.waiters, lastUsed: c.now()}
		free = c.insertLocked(e)
		cl.entry = e
	} else {
		c.stats.Failed++
		free = append(free, buf)
	}
	cl.finished, cl.err = true, err
	c.mu.Unlock()
	for _, b := range free {
		b.free()
	}
	close(cl.done)
}

// callLoad runs the loader detached from the caller's cancellation (other
// callers may be waiting for the same block) but cancelled by Close, and
// turns a panic in the loader into an error so waiters are never stranded.
// The buffer the loader allocated is left in *buf, also on failure.
func (c *Cache) callLoad(ctx context.Context, block int, buf *blockBuf) (data []byte, err error) {
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	defer func() {
		if r := recover(); r != nil {
			data, err = nil, fmt.Errorf("block cache: load block %d panicked: %v", block, r)
		}
	}()
	allocated := false
	alloc := func(n int) ([]byte, error) {
		if allocated {
			return nil, fmt.Errorf("block cache: load block %d: second buffer requested", block)
		}
		if n < 0 {
			return nil, fmt.Errorf("block cache: load block %d: negative size %d", block, n)
		}
		allocated = true
		*buf = c.reserve(n)
		return buf.b, nil
	}
	data, err = c.load(lctx, block, alloc)
	if err != nil {
		return nil, err
	}
	if len(data) > 0 && (len(data) > len(buf.b) || unsafe.SliceData(data) != unsafe.SliceData(buf.b)) {
		return nil, fmt.Errorf("block cache: load block %d: result is not in the buffer the cache provided", block)
	}
	return data, nil
}

// reserve makes room for a load of n bytes, evicting unpinned blocks,
// counts it as loading and returns its buffer. That is the mapping of an
// evicted block of the same size where there is one: a block streamed
// through a full cache then reuses memory whose pages are already there,
// instead of the system zeroing a fresh mapping page by page (a good part
// of the cost of decoding a large block).
func (c *Cache) reserve(n int) blockBuf {
	c.mu.Lock()
	free := c.makeRoomLocked(int64(n))
	if c.usedLocked()+int64(n) > c.capacity && int64(n) <= c.capacity {
		c.stats.Overcommits++
	}
	c.stats.LoadingBytes += int64(n)
	c.notePeakLocked()
	var buf blockBuf
	for i, b := range free {
		if b.mapped && len(b.b) == n {
			buf = b
			free = append(free[:i], free[i+1:]...)
			c.stats.Reused++
			break
		}
	}
	c.mu.Unlock()
	for _, b := range free {
		b.free()
	}
	if buf.b == nil {
		buf = newBlockBuf(n, c.mapMin)
	}
	return buf
}

// usedLocked is the memory the cache accounts for; c.mu must be held.
func (c *Cache) usedLocked() int64 {
	return c.stats.CurrentBytes + c.stats.LoadingBytes + c.stats.PinnedBytes
}

func (c *Cache) notePeakLocked() {
	c.stats.PeakBytes = max(c.stats.PeakBytes, c.usedLocked())
}

// makeRoomLocked evicts unpinned blocks until n more bytes fit (evicting
// a pinned block would free nothing yet) and returns the buffers to free;
// c.mu must be held. Spent blocks go first, the latest spent first, then
// the least recently used.
func (c *Cache) makeRoomLocked(n int64) []blockBuf {
	var free []blockBuf
	evict := func(el *list.Element, next func(*list.Element) *list.Element) {
		for el != nil && c.usedLocked()+n > c.capacity {
			after := next(el)
			if e := el.Value.(*cacheEntry); e.refs == 0 {
				free = append(free, c.removeLocked(el))
				c.stats.Evictions++
			}
			el = after
		}
	}
	evict(c.spent.Front(), (*list.Element).Next)
	evict(c.lru.Back(), (*list.Element).Prev)
	return free
}

// insertLocked adds a loaded block (whose buffer was counted as loading
// until now) and returns the buffers to free; c.mu must be held.
func (c *Cache) insertLocked(e *cacheEntry) []blockBuf {
	var free []blockBuf
	if el, ok := c.entries[e.block]; ok {
		free = append(free, c.removeLocked(el))
	}
	oversized := e.size() > c.capacity
	if !c.closed && !oversized {
		// Room was made when the load started; a load that found
		// everything pinned then may find some of it released now.
		free = append(free, c.makeRoomLocked(e.size())...)
	}
	if c.closed || oversized || c.usedLocked()+e.size() > c.capacity {
		// Not kept: handed to the waiting Gets, freed with their Pins,
		// so memory beyond the capacity lasts only while it is read.
		if oversized && !c.closed {
			c.stats.Oversized++
		}
		if e.refs == 0 {
			return append(free, e.buf)
		}
		c.stats.PinnedBytes += e.size()
		return free
	}
	e.cached = true
	c.entries[e.block] = c.lru.PushFront(e)
	c.stats.CurrentBytes += e.size()
	c.notePeakLocked()
	return free
}

// removeLocked takes el out of the cache and returns its buffer if no Pin
// holds it (for the caller to free after unlocking); c.mu must be held.
func (c *Cache) removeLocked(el *list.Element) blockBuf {
	e := el.Value.(*cacheEntry)
	if e.spent {
		c.spent.Remove(el)
	} else {
		c.lru.Remove(el)
	}
	delete(c.entries, e.block)
	e.cached, e.spent = false, false
	c.stats.CurrentBytes -= e.size()
	if e.refs > 0 {
		c.stats.PinnedBytes += e.size()
		return blockBuf{}
	}
	return e.buf
}

// Spent hints that block will not be read again soon: a sequential reader
// has gone past it. When the cache needs room, spent blocks go before all
// others, the latest spent first. So reading a file larger than the cache
// from start to end does not push everything else out, and a second pass
// over it still finds its first part cached; plain LRU would have dropped
// each block just before it is read again. A spent block that is read
// again becomes an ordinary one. Blocks not cached are left alone.
func (c *Cache) Spent(block int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[block]
	if !ok {
		return
	}
	e := el.Value.(*cacheEntry)
	if e.spent {
		c.spent.MoveToFront(el)
		return
	}
	c.lru.Remove(el)
	e.spent = true
	c.entries[block] = c.spent.PushFront(e)
	c.stats.Spent++
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
	var free []blockBuf
	c.mu.Lock()
	now := c.now()
	// The LRU is ordered by last use, so its idle entries are at the back.
	for el := c.lru.Back(); el != nil; el = c.lru.Back() {
		if now.Sub(el.Value.(*cacheEntry).lastUsed) <= maxAge {
			break
		}
		free = append(free, c.removeLocked(el))
		c.stats.Expired++
	}
	for el := c.spent.Front(); el != nil; {
		next := el.Next()
		if now.Sub(el.Value.(*cacheEntry).lastUsed) > maxAge {
			free = append(free, c.removeLocked(el))
			c.stats.Expired++
		}
		el = next
	}
	c.mu.Unlock()
	for _, b := range free {
		b.free()
	}
}

// Close drops all entries, cancels running loads and waits for them. Later
// Gets fail with ErrClosed. Pins taken before stay valid until released.
func (c *Cache) Close() {
	var free []blockBuf
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	for el := c.lru.Back(); el != nil; el = c.lru.Back() {
		free = append(free, c.removeLocked(el))
	}
	for el := c.spent.Back(); el != nil; el = c.spent.Back() {
		free = append(free, c.removeLocked(el))
	}
	c.mu.Unlock()
	for _, b := range free {
		b.free()
	}
	c.cancel()
	c.wg.Wait()
}

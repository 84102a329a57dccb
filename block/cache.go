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

// PieceLoadFunc produces the decompressed contents of one piece of a
// block (a part that decodes on its own, such as one xz block of a block
// written with an index), with the same contract as LoadFunc.
type PieceLoadFunc func(ctx context.Context, block, piece int, alloc AllocFunc) ([]byte, error)

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
//
// A Cache made by NewCache has the capacity and the pool to itself; the
// Caches a SharedCache makes (one per image) share them: one capacity
// bounds their blocks together, and a load in one evicts the least
// recently used blocks of any.
type Cache struct {
	s         *SharedCache
	load      LoadFunc
	loadPiece PieceLoadFunc // nil: no pieces
	own       bool          // made by NewCache: Close closes s too
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup

	// Guarded by s.mu:
	closed   bool
	entries  map[cacheKey]*list.Element // in s.lru or s.spent
	inflight map[cacheKey]*cacheCall
	stats    CacheStats // this cache's counters and bytes
}

// SharedCache is the memory budget, the LRU order and the decode pool
// that the Caches it makes share, so that a process serving many images
// bounds their decoded blocks with one capacity. Its lock is theirs.
type SharedCache struct {
	mapMin   int           // smallest buffer mapped of its own
	sem      chan struct{} // one token per decode worker
	prefetch chan struct{} // bounds outstanding prefetches
	spare    chan []byte   // see Spare
	now      func() time.Time

	mu       sync.Mutex
	capacity int64
	lru      list.List // of *cacheEntry, front = most recently used
	spent    list.List // of *cacheEntry marked by Spent, front = latest
	caches   map[*Cache]struct{}
	retired  CacheStats // counters of closed caches
	// The bytes of all caches together; the capacity bounds their sum.
	current, loading, pinned, peak int64
}

// NewSharedCache creates the shared part of several caches: opts'
// capacity bounds them together and its workers are their one pool.
func NewSharedCache(opts CacheOptions) *SharedCache {
	workers := max(opts.Workers, 1)
	return &SharedCache{
		capacity: max(opts.Capacity, 0),
		mapMin:   mapMin,
		sem:      make(chan struct{}, workers),
		prefetch: make(chan struct{}, 2*workers),
		spare:    make(chan []byte, workers),
		now:      time.Now,
		caches:   map[*Cache]struct{}{},
	}
}

// NewCache creates a cache that loads its missing blocks with load and
// shares s's capacity and pool. Closing it drops its blocks only.
func (s *SharedCache) NewCache(load LoadFunc) *Cache {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Cache{
		s:        s,
		load:     load,
		ctx:      ctx,
		cancel:   cancel,
		entries:  map[cacheKey]*list.Element{},
		inflight: map[cacheKey]*cacheCall{},
	}
	s.mu.Lock()
	s.caches[c] = struct{}{}
	c.stats.Capacity = s.capacity
	s.mu.Unlock()
	return c
}

// Workers is the size of the decode pool.
func (s *SharedCache) Workers() int { return cap(s.sem) }

// Spare holds spare buffers for compressed payloads, one per decode
// worker, for the loaders of the caches to take and give back: they are
// bounded by the pool the caches share, not by the number of caches.
func (s *SharedCache) Spare() chan []byte { return s.spare }

// Stats returns the counters of all caches, those closed included, and
// the bytes they hold together.
func (s *SharedCache) Stats() CacheStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.retired
	for c := range s.caches {
		addCounters(&st, &c.stats)
	}
	st.CurrentBytes, st.LoadingBytes, st.PinnedBytes = s.current, s.loading, s.pinned
	st.PeakBytes, st.Capacity = s.peak, s.capacity
	return st
}

// Caches is how many caches are open on s.
func (s *SharedCache) Caches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.caches)
}

// addCounters adds the event counters of b to a (not the byte figures).
func addCounters(a, b *CacheStats) {
	a.Hits += b.Hits
	a.Misses += b.Misses
	a.Shared += b.Shared
	a.Decoded += b.Decoded
	a.DecodedBytes += b.DecodedBytes
	a.Failed += b.Failed
	a.Prefetches += b.Prefetches
	a.Evictions += b.Evictions
	a.Spent += b.Spent
	a.Reused += b.Reused
	a.Expired += b.Expired
	a.Oversized += b.Oversized
	a.Overcommits += b.Overcommits
}

// SetCapacity changes the capacity, evicting unpinned blocks of every
// cache at once if they no longer fit.
func (s *SharedCache) SetCapacity(n int64) {
	s.mu.Lock()
	s.capacity = max(n, 0)
	for c := range s.caches {
		c.stats.Capacity = s.capacity
	}
	free := s.makeRoomLocked(0)
	s.mu.Unlock()
	for _, b := range free {
		b.free()
	}
}

// Tidy drops the blocks of every cache not used for longer than maxAge.
func (s *SharedCache) Tidy(maxAge time.Duration) { s.tidy(nil, maxAge) }

// cacheKey names what an entry holds: a whole block (piece wholeBlock)
// or one piece of it.
type cacheKey struct{ block, piece int }

// wholeBlock is the piece of a key for a whole block.
const wholeBlock = -1

func (k cacheKey) String() string {
	if k.piece == wholeBlock {
		return fmt.Sprintf("block %d", k.block)
	}
	return fmt.Sprintf("block %d piece %d", k.block, k.piece)
}

// cacheEntry is one decoded block or piece. All fields but c, key and
// data are guarded by SharedCache.mu.
type cacheEntry struct {
	c        *Cache // the cache that loaded it
	key      cacheKey
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
	// Guarded by SharedCache.mu:
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
	_   noCopy
	c   *Cache
	e   *cacheEntry // nil when empty
	key cacheKey
}

// noCopy makes go vet report copies of a Pin.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// Bytes returns the block's data, which must not be modified. It panics
// on an empty Pin.
func (p *Pin) Bytes() []byte {
	if p.e == nil {
		panic(fmt.Errorf("block cache: Bytes of %v after Release", p.key))
	}
	return p.e.data
}

// Held reports whether the Pin holds a block.
func (p *Pin) Held() bool { return p.e != nil }

// Block is the number of the block the Pin holds or last held.
func (p *Pin) Block() int { return p.key.block }

// Piece is the piece of the block the Pin holds or last held (GetPiece),
// or -1 for a whole block (Get).
func (p *Pin) Piece() int { return p.key.piece }

// Release lets go of the block. A block that has left the cache is freed
// when its last Pin is released. Releasing an empty Pin (a second Release)
// panics with ErrReleased: the caller may have used memory that is gone.
func (p *Pin) Release() {
	e := p.e
	if e == nil {
		panic(fmt.Errorf("%w (%v)", ErrReleased, p.key))
	}
	p.e = nil
	s := p.c.s
	s.mu.Lock()
	free := e.c.unrefLocked(e)
	s.mu.Unlock()
	free.free()
}

// fill makes p hold e, on which a reference was taken for it.
func (p *Pin) fill(c *Cache, e *cacheEntry) {
	p.c, p.e, p.key = c, e, e.key
}

// unrefLocked drops one reference to e, one of c's, and returns its
// buffer if that freed it (for the caller to free after unlocking); s.mu
// must be held.
func (c *Cache) unrefLocked(e *cacheEntry) blockBuf {
	e.refs--
	if e.refs > 0 || e.cached {
		return blockBuf{}
	}
	c.addPinnedLocked(-e.size())
	return e.buf
}

// The byte figures of a cache and of the shared budget move together;
// s.mu must be held.

func (c *Cache) addCurrentLocked(n int64) {
	c.stats.CurrentBytes += n
	c.s.current += n
}

func (c *Cache) addLoadingLocked(n int64) {
	c.stats.LoadingBytes += n
	c.s.loading += n
}

func (c *Cache) addPinnedLocked(n int64) {
	c.stats.PinnedBytes += n
	c.s.pinned += n
}

// NewCache creates a cache that loads missing blocks with load, with a
// capacity and decode pool of its own.
func NewCache(load LoadFunc, opts CacheOptions) *Cache {
	c := NewSharedCache(opts).NewCache(load)
	c.own = true
	return c
}

// Get makes p hold the decompressed block, loading it if necessary; p
// must be empty and the caller must Release it. A block larger than the
// capacity is returned but not retained. Load errors are not cached. If
// ctx ends first Get returns ctx.Err(); the shared load goes on and its
// result is still cached for later callers. On error p stays empty.
func (c *Cache) Get(ctx context.Context, block int, p *Pin) error {
	return c.get(ctx, cacheKey{block, wholeBlock}, p)
}

// GetPiece is Get for one piece of a block, loaded by the cache's
// PieceLoadFunc (see SetPieceLoader). Pieces are entries like blocks,
// counted against the same capacity, so the memory a scattered read
// holds follows the pieces it reads, not the size of their blocks.
func (c *Cache) GetPiece(ctx context.Context, block, piece int, p *Pin) error {
	if piece < 0 {
		return fmt.Errorf("block cache: block %d: negative piece %d", block, piece)
	}
	return c.get(ctx, cacheKey{block, piece}, p)
}

// SetPieceLoader sets the loader of the pieces GetPiece asks for. It
// must be called before the cache is used.
func (c *Cache) SetPieceLoader(load PieceLoadFunc) { c.loadPiece = load }

func (c *Cache) get(ctx context.Context, key cacheKey, p *Pin) error {
	if p.e != nil {
		panic(fmt.Errorf("block cache: Get of %v into a Pin that still holds %v", key, p.key))
	}
	p.key = key
	s := c.s
	s.mu.Lock()
	if c.closed {
		s.mu.Unlock()
		return fmt.Errorf("block cache: get %v: %w", key, ErrClosed)
	}
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*cacheEntry)
		e.refs++
		e.lastUsed = s.now()
		if e.spent {
			// Read again after all: an ordinary block from now on.
			s.spent.Remove(el)
			e.spent = false
			c.entries[key] = s.lru.PushFront(e)
		} else {
			s.lru.MoveToFront(el)
		}
		c.stats.Hits++
		s.mu.Unlock()
		p.fill(c, e)
		return nil
	}
	c.stats.Misses++
	cl, ok := c.inflight[key]
	if ok {
		c.stats.Shared++
	} else {
		cl = c.startLocked(ctx, key, false)
	}
	cl.waiters++
	s.mu.Unlock()
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
		s.mu.Lock()
		if !cl.finished {
			cl.waiters--
		} else if cl.err == nil {
			free = c.unrefLocked(cl.entry)
		}
		s.mu.Unlock()
		free.free()
		return ctx.Err()
	}
}

// Prefetch starts loading block in the background if it is neither cached
// nor in flight and the prefetch budget (2x workers, shared by the caches
// of a SharedCache) allows it. Best effort.
func (c *Cache) Prefetch(block int) { c.prefetch(cacheKey{block, wholeBlock}) }

// PrefetchPiece is Prefetch for one piece of a block.
func (c *Cache) PrefetchPiece(block, piece int) {
	if piece >= 0 {
		c.prefetch(cacheKey{block, piece})
	}
}

func (c *Cache) prefetch(key cacheKey) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.closed {
		return
	}
	if _, ok := c.entries[key]; ok {
		return
	}
	if _, ok := c.inflight[key]; ok {
		return
	}
	select {
	case s.prefetch <- struct{}{}:
	default:
		return // budget exhausted; prefetching is only a hint
	}
	c.stats.Prefetches++
	c.startLocked(context.Background(), key, true)
}

// startLocked registers and launches a load; s.mu must be held.
func (c *Cache) startLocked(ctx context.Context, key cacheKey, isPrefetch bool) *cacheCall {
	cl := &cacheCall{done: make(chan struct{})}
	c.inflight[key] = cl
	c.wg.Add(1)
	go c.run(ctx, key, cl, isPrefetch)
	return cl
}

func (c *Cache) run(ctx context.Context, key cacheKey, cl *cacheCall, isPrefetch bool) {
	defer c.wg.Done()
	s := c.s
	if isPrefetch {
		defer func() { <-s.prefetch }()
	}
	var buf blockBuf
	var data []byte
	var err error
	select {
	case s.sem <- struct{}{}:
		data, err = c.callLoad(ctx, key, &buf)
		<-s.sem
	case <-c.ctx.Done():
		err = fmt.Errorf("block cache: load %v: %w", key, ErrClosed)
	}
	var free []blockBuf
	s.mu.Lock()
	delete(c.inflight, key)
	c.addLoadingLocked(-int64(len(buf.b)))
	if err == nil {
		c.stats.Decoded++
		c.stats.DecodedBytes += int64(len(data))
		e := &cacheEntry{c: c, key: key, buf: buf, data: data, refs: cl.waiters, lastUsed: s.now()}
		free = c.insertLocked(e)
		cl.entry = e
	} else {
		c.stats.Failed++
		free = append(free, buf)
	}
	cl.finished, cl.err = true, err
	s.mu.Unlock()
	for _, b := range free {
		b.free()
	}
	close(cl.done)
}

// callLoad runs the loader detached from the caller's cancellation (other
// callers may be waiting for the same block) but cancelled by Close, and
// turns a panic in the loader into an error so waiters are never stranded.
// The buffer the loader allocated is left in *buf, also on failure.
func (c *Cache) callLoad(ctx context.Context, key cacheKey, buf *blockBuf) (data []byte, err error) {
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	defer func() {
		if r := recover(); r != nil {
			data, err = nil, fmt.Errorf("block cache: load %v panicked: %v", key, r)
		}
	}()
	allocated := false
	alloc := func(n int) ([]byte, error) {
		if allocated {
			return nil, fmt.Errorf("block cache: load %v: second buffer requested", key)
		}
		if n < 0 {
			return nil, fmt.Errorf("block cache: load %v: negative size %d", key, n)
		}
		allocated = true
		*buf = c.reserve(n)
		return buf.b, nil
	}
	if key.piece == wholeBlock {
		data, err = c.load(lctx, key.block, alloc)
	} else if c.loadPiece == nil {
		err = fmt.Errorf("block cache: load %v: the cache has no piece loader", key)
	} else {
		data, err = c.loadPiece(lctx, key.block, key.piece, alloc)
	}
	if err != nil {
		return nil, err
	}
	if len(data) > 0 && (len(data) > len(buf.b) || unsafe.SliceData(data) != unsafe.SliceData(buf.b)) {
		return nil, fmt.Errorf("block cache: load %v: result is not in the buffer the cache provided", key)
	}
	return data, nil
}

// reserve makes room for a load of n bytes, evicting unpinned blocks (of
// any cache sharing the budget), counts it as loading and returns its
// buffer. That is the mapping of an evicted block of the same size where
// there is one: a block streamed through a full cache then reuses memory
// whose pages are already there, instead of the system zeroing a fresh
// mapping page by page (a good part of the cost of decoding a large
// block).
func (c *Cache) reserve(n int) blockBuf {
	s := c.s
	s.mu.Lock()
	free := s.makeRoomLocked(int64(n))
	if s.usedLocked()+int64(n) > s.capacity && int64(n) <= s.capacity {
		c.stats.Overcommits++
	}
	c.addLoadingLocked(int64(n))
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
	s.mu.Unlock()
	for _, b := range free {
		b.free()
	}
	if buf.b == nil {
		buf = newBlockBuf(n, s.mapMin)
	}
	return buf
}

// usedLocked is the memory the caches account for together; s.mu must
// be held.
func (s *SharedCache) usedLocked() int64 {
	return s.current + s.loading + s.pinned
}

// notePeakLocked records the peaks of c and of the shared budget.
func (c *Cache) notePeakLocked() {
	c.stats.PeakBytes = max(c.stats.PeakBytes, c.stats.CurrentBytes+c.stats.LoadingBytes+c.stats.PinnedBytes)
	c.s.peak = max(c.s.peak, c.s.usedLocked())
}

// makeRoomLocked evicts unpinned blocks until n more bytes fit (evicting
// a pinned block would free nothing yet) and returns the buffers to free;
// s.mu must be held. Spent blocks go first, the latest spent first, then
// the least recently used, whichever cache they belong to.
func (s *SharedCache) makeRoomLocked(n int64) []blockBuf {
	var free []blockBuf
	evict := func(el *list.Element, next func(*list.Element) *list.Element) {
		for el != nil && s.usedLocked()+n > s.capacity {
			after := next(el)
			if e := el.Value.(*cacheEntry); e.refs == 0 {
				free = append(free, e.c.removeLocked(el))
				e.c.stats.Evictions++
			}
			el = after
		}
	}
	evict(s.spent.Front(), (*list.Element).Next)
	evict(s.lru.Back(), (*list.Element).Prev)
	return free
}

// insertLocked adds a loaded block (whose buffer was counted as loading
// until now) and returns the buffers to free; s.mu must be held.
func (c *Cache) insertLocked(e *cacheEntry) []blockBuf {
	s := c.s
	var free []blockBuf
	if el, ok := c.entries[e.key]; ok {
		free = append(free, c.removeLocked(el))
	}
	oversized := e.size() > s.capacity
	if !c.closed && !oversized {
		// Room was made when the load started; a load that found
		// everything pinned then may find some of it released now.
		free = append(free, s.makeRoomLocked(e.size())...)
	}
	if c.closed || oversized || s.usedLocked()+e.size() > s.capacity {
		// Not kept: handed to the waiting Gets, freed with their Pins,
		// so memory beyond the capacity lasts only while it is read.
		if oversized && !c.closed {
			c.stats.Oversized++
		}
		if e.refs == 0 {
			return append(free, e.buf)
		}
		c.addPinnedLocked(e.size())
		return free
	}
	e.cached = true
	c.entries[e.key] = s.lru.PushFront(e)
	c.addCurrentLocked(e.size())
	c.notePeakLocked()
	return free
}

// removeLocked takes el, one of c's entries, out of the cache and returns
// its buffer if no Pin holds it (for the caller to free after unlocking);
// s.mu must be held.
func (c *Cache) removeLocked(el *list.Element) blockBuf {
	e := el.Value.(*cacheEntry)
	if e.spent {
		c.s.spent.Remove(el)
	} else {
		c.s.lru.Remove(el)
	}
	delete(c.entries, e.key)
	e.cached, e.spent = false, false
	c.addCurrentLocked(-e.size())
	if e.refs > 0 {
		c.addPinnedLocked(e.size())
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
func (c *Cache) Spent(block int) { c.spend(cacheKey{block, wholeBlock}) }

// SpentPiece is Spent for one piece of a block.
func (c *Cache) SpentPiece(block, piece int) {
	if piece >= 0 {
		c.spend(cacheKey{block, piece})
	}
}

func (c *Cache) spend(key cacheKey) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return
	}
	e := el.Value.(*cacheEntry)
	if e.spent {
		s.spent.MoveToFront(el)
		return
	}
	s.lru.Remove(el)
	e.spent = true
	c.entries[key] = s.spent.PushFront(e)
	c.stats.Spent++
}

// Contains reports whether block is currently cached (for tests and stats).
func (c *Cache) Contains(block int) bool { return c.contains(cacheKey{block, wholeBlock}) }

// ContainsPiece reports whether a piece of block is currently cached.
func (c *Cache) ContainsPiece(block, piece int) bool { return c.contains(cacheKey{block, piece}) }

func (c *Cache) contains(key cacheKey) bool {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	_, ok := c.entries[key]
	return ok
}

// Workers is the size of the decode pool.
func (c *Cache) Workers() int { return cap(c.s.sem) }

// Shared returns the budget and pool c shares with other caches (its own
// for a cache made by NewCache).
func (c *Cache) Shared() *SharedCache { return c.s }

// Stats returns a snapshot of the counters: this cache's events and
// bytes, and the capacity it shares; PeakBytes is this cache's own peak.
func (c *Cache) Stats() CacheStats {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return c.stats
}

// Tidy drops entries that have not been used for longer than maxAge.
func (c *Cache) Tidy(maxAge time.Duration) { c.s.tidy(c, maxAge) }

// tidy drops the entries of only (of every cache if nil) not used for
// longer than maxAge.
func (s *SharedCache) tidy(only *Cache, maxAge time.Duration) {
	var free []blockBuf
	s.mu.Lock()
	now := s.now()
	// The LRU is ordered by last use, so its idle entries are at the back.
	for el := s.lru.Back(); el != nil; {
		e := el.Value.(*cacheEntry)
		if now.Sub(e.lastUsed) <= maxAge {
			break
		}
		prev := el.Prev()
		if only == nil || e.c == only {
			free = append(free, e.c.removeLocked(el))
			e.c.stats.Expired++
		}
		el = prev
	}
	for el := s.spent.Front(); el != nil; {
		next := el.Next()
		if e := el.Value.(*cacheEntry); (only == nil || e.c == only) && now.Sub(e.lastUsed) > maxAge {
			free = append(free, e.c.removeLocked(el))
			e.c.stats.Expired++
		}
		el = next
	}
	s.mu.Unlock()
	for _, b := range free {
		b.free()
	}
}

// Close drops all entries, cancels running loads and waits for them. Later
// Gets fail with ErrClosed. Pins taken before stay valid until released.
// The other caches of a SharedCache are not affected.
func (c *Cache) Close() {
	var free []blockBuf
	s := c.s
	s.mu.Lock()
	if c.closed {
		s.mu.Unlock()
		return
	}
	c.closed = true
	for _, el := range c.entries {
		free = append(free, c.removeLocked(el))
	}
	s.mu.Unlock()
	for _, b := range free {
		b.free()
	}
	c.cancel()
	c.wg.Wait()
	s.mu.Lock()
	// Loads that ended after the cancel found c closed and kept nothing;
	// Pins still held count on as pinned until released.
	delete(s.caches, c)
	addCounters(&s.retired, &c.stats)
	s.mu.Unlock()
}

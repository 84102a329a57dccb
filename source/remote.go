package source

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/lru"
)

// maxSplit is the smallest part a large range is split into so that its
// parts are fetched in parallel.
const maxSplit = 4 << 20

// headerWorkers bounds the concurrent requests for section headers at
// open. An image of small blocks has thousands of headers, each its own
// tiny request, so the open is bound by round trips, not bandwidth: more
// of them in flight than Workers data transfers shortens it many times.
const headerWorkers = HeaderRequests

// window is the unit small reads inside large section payloads (stored,
// uncompressed blocks) are widened to.
const window = 4 << 20

type span struct{ start, end int64 } // a section payload, file offsets

type counters struct {
	requests, retries, bytes, memHits, diskHits, diskMisses, diskCorrupt, diskBytes, errors atomic.Int64
}

// remote is a Source over a Fetcher.
type remote struct {
	f    Fetcher
	o    Options
	info Version
	id   string
	sem  chan struct{} // bounds data requests (Workers)
	hsem chan struct{} // bounds header requests at open (headerWorkers)
	c    counters
	disk *diskCache // nil without a disk cache

	// Filled at open, read-only afterwards.
	tail    []byte
	tailOff int64
	hdrs    map[int64][]byte // section headers by file offset
	spans   []span           // sorted section payloads
	// prefix is the image offset the section index implies.
	prefix    int64
	hasPrefix bool

	mem *lru.LRU[[2]int64, []byte]

	mu       sync.Mutex
	inflight map[[2]int64]*call

	changed atomic.Bool
}

type call struct {
	done chan struct{}
	data []byte
	err  error
}

func openRemote(ctx context.Context, f Fetcher, opts Options) (Source, error) {
	o := opts.withDefaults()
	r := &remote{f: f, o: o, sem: make(chan struct{}, o.Workers), hsem: make(chan struct{}, max(o.Workers, headerWorkers)), inflight: map[[2]int64]*call{}, hdrs: map[int64][]byte{}}
	if o.MemCache > 0 {
		r.mem = lru.New[[2]int64, []byte](o.MemCache)
	}
	_, err := r.retry(ctx, 0, 0, func(ctx context.Context) error {
		var err error
		r.info, err = f.Stat(ctx)
		return err
	})
	if err != nil {
		f.Close()
		return nil, err
	}
	r.id = f.Key() + "\x00" + r.info.ETag + "\x00" + r.info.LastModified + "\x00" + fmt.Sprint(r.info.Size)
	if o.DiskCache != "" {
		if r.info.ETag == "" && r.info.LastModified == "" {
			o.Logf("%s: server sends neither ETag nor Last-Modified; disk cache not used", f.Name())
		} else if r.disk, err = openDiskCache(o.DiskCache, o.DiskCacheSize, r.id); err != nil {
			f.Close()
			return nil, err
		}
	}
	if err := r.prefetchIndex(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// prefetchIndex fetches the object's tail, which holds the section index
// and usually the metadata, and then all section headers the index names,
// so that opening the image needs no further requests.
func (r *remote) prefetchIndex(ctx context.Context) error {
	size := r.info.Size
	if size < 8 {
		return nil // too small to end with an index entry
	}
	n := min(size, max(r.o.TailSize, 8))
	tail, err := r.getRange(ctx, size-n, n)
	if err != nil {
		return err
	}
	r.tail, r.tailOff = tail, size-n
	// The last 8 bytes are the index's own entry.
	typ, rel := block.IndexEntry(binary.LittleEndian.Uint64(tail[len(tail)-8:]))
	if typ != block.SectionIndex {
		return nil // no index: the reader scans headers one by one
	}
	hdrPos, err := r.findIndex(ctx, rel)
	if err != nil || hdrPos < 0 {
		return err
	}
	if hdrPos < r.tailOff {
		// A large index: fetch all of it (and the metadata before it is
		// already covered when it fits in the tail).
		b, err := r.getRange(ctx, hdrPos, size-hdrPos)
		if err != nil {
			return err
		}
		r.tail, r.tailOff = b, hdrPos
	}
	prefix := hdrPos - rel
	r.prefix, r.hasPrefix = prefix, true
	ents := r.tail[hdrPos-r.tailOff+block.HeaderSize:]
	nEnt := int64(len(ents) / 8)
	heads := make([]int64, 0, nEnt)
	var want []int64 // the headers to fetch now
	for i := int64(0); i < nEnt-1; i++ {
		typ, off := block.IndexEntry(binary.LittleEndian.Uint64(ents[i*8:]))
		heads = append(heads, prefix+off)
		// The first header holds the format version every reader reads.
		if typ != block.SectionBlock || !r.o.LazyBlockHeaders || i == 0 {
			want = append(want, heads[i])
		}
	}
	heads = append(heads, hdrPos)
	for i := 0; i+1 < len(heads); i++ {
		if heads[i+1] < heads[i]+block.HeaderSize {
			r.spans = nil
			return nil // not sorted: leave it to the image reader to complain
		}
		r.spans = append(r.spans, span{heads[i] + block.HeaderSize, heads[i+1]})
	}
	return r.fetchHeaders(ctx, want)
}

// findIndex returns the file offset of the section index header whose
// image-relative offset is rel, or -1. The header is recognised by its
// magic, its type and a length that reaches the end of the object; it is
// looked for in the tail first (which also finds it behind a prefix), and
// otherwise, for an index larger than the tail, at rel.
func (r *remote) findIndex(ctx context.Context, rel int64) (int64, error) {
	const headerSize = block.HeaderSize
	size := r.info.Size
	isIndex := func(h []byte, pos int64) bool {
		s, err := block.ParseHeader(h, pos)
		return err == nil && s.Type == block.SectionIndex && s.Length == size-pos-headerSize
	}
	for pos := size - headerSize - 8*3; pos >= r.tailOff && pos >= rel; pos -= 8 {
		if isIndex(r.tail[pos-r.tailOff:], pos) {
			return pos, nil
		}
	}
	if rel >= r.tailOff || rel > size-headerSize-8*3 {
		return -1, nil
	}
	h, err := r.getRange(ctx, rel, headerSize)
	if err != nil {
		return -1, err
	}
	if isIndex(h, rel) {
		return rel, nil
	}
	return -1, nil
}

// fetchHeaders fetches the 64-byte section headers at offs in parallel,
// one request for headers that lie close together.
func (r *remote) fetchHeaders(ctx context.Context, offs []int64) error {
	const headerSize, gap = block.HeaderSize, 16 << 10
	type group struct{ start, end int64 }
	var groups []group
	for _, off := range offs {
		if off >= r.tailOff {
			r.hdrs[off] = r.tail[off-r.tailOff : off-r.tailOff+headerSize]
			continue
		}
		if len(groups) > 0 && off-groups[len(groups)-1].end <= gap {
			groups[len(groups)-1].end = off + headerSize
			continue
		}
		groups = append(groups, group{off, off + headerSize})
	}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cap(r.hsem))
	for _, gr := range groups {
		g.Go(func() error {
			b, err := r.getRangeSem(gctx, gr.start, gr.end-gr.start, r.hsem)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			for _, off := range offs {
				if off >= gr.start && off+headerSize <= gr.end {
					r.hdrs[off] = b[off-gr.start : off-gr.start+headerSize]
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// ReadAt implements io.ReaderAt.
func (r *remote) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s: negative offset %d", r.f.Name(), off)
	}
	if off >= r.info.Size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := int64(len(p))
	var eof error
	if n > r.info.Size-off {
		n, eof = r.info.Size-off, io.EOF
	}
	if err := r.read(context.Background(), p[:n], off); err != nil {
		return 0, err
	}
	return int(n), eof
}

func (r *remote) read(ctx context.Context, p []byte, off int64) error {
	n := int64(len(p))
	if r.tail != nil && off >= r.tailOff {
		r.c.memHits.Add(1)
		copy(p, r.tail[off-r.tailOff:])
		return nil
	}
	if h, ok := r.hdrs[off]; ok && n <= int64(len(h)) {
		r.c.memHits.Add(1)
		copy(p, h)
		return nil
	}
	// Widen a read inside one section payload to the whole payload (or,
	// in a large stored block, to the aligned window around it), so that
	// the next reads of the same block are served locally and the caches
	// hold blocks, not fragments.
	start, length := off, n
	if i := sort.Search(len(r.spans), func(i int) bool { return r.spans[i].end > off }); i < len(r.spans) {
		s := r.spans[i]
		if s.start <= off && off+n <= s.end {
			if s.end-s.start <= 2*window {
				start, length = s.start, s.end-s.start
			} else if ws := s.start + (off-s.start)/window*window; off+n <= min(ws+window, s.end) {
				start, length = ws, min(ws+window, s.end)-ws
			}
		}
	}
	// The tail fetched at open often ends the last block: fetch only the
	// part before it, or a full read transfers the tail twice.
	if r.tail != nil && start < r.tailOff && start+length > r.tailOff {
		length = r.tailOff - start
	}
	b, err := r.getRange(ctx, start, length)
	if err != nil {
		return err
	}
	if c := copy(p, b[off-start:]); int64(c) < n {
		copy(p[c:], r.tail)
	}
	return nil
}

// getRange returns bytes [off, off+n) from memory, the disk cache or the
// server, in that order. Concurrent calls for the same range share one
// fetch.
func (r *remote) getRange(ctx context.Context, off, n int64) ([]byte, error) {
	return r.getRangeSem(ctx, off, n, r.sem)
}

// getRangeSem is getRange with the semaphore that bounds its requests.
func (r *remote) getRangeSem(ctx context.Context, off, n int64, sem chan struct{}) ([]byte, error) {
	k := [2]int64{off, n}
	if r.mem != nil {
		if b, ok := r.mem.Get(k); ok {
			r.c.memHits.Add(1)
			return b, nil
		}
	}
	r.mu.Lock()
	if c, ok := r.inflight[k]; ok {
		r.mu.Unlock()
		select {
		case <-c.done:
			return c.data, c.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	c := &call{done: make(chan struct{})}
	r.inflight[k] = c
	r.mu.Unlock()

	c.data, c.err = r.load(ctx, off, n, sem)
	// One huge range would flush everything else.
	if c.err == nil && r.mem != nil && int64(len(c.data)) <= r.o.MemCache/4 {
		r.mem.Add(k, c.data, int64(len(c.data)))
	}
	r.mu.Lock()
	delete(r.inflight, k)
	r.mu.Unlock()
	close(c.done)
	return c.data, c.err
}

func (r *remote) load(ctx context.Context, off, n int64, sem chan struct{}) ([]byte, error) {
	if r.disk != nil {
		b, err := r.disk.get(off, n)
		switch {
		case err == nil:
			r.c.diskHits.Add(1)
			r.c.diskBytes.Add(n)
			return b, nil
		case errors.Is(err, errCorruptEntry):
			r.c.diskCorrupt.Add(1)
			r.o.Logf("%s: disk cache entry for bytes %d-%d is damaged (%v); fetching it again", r.f.Name(), off, off+n-1, err)
		default:
			r.c.diskMisses.Add(1)
		}
	}
	b := make([]byte, n)
	if err := r.fetch(ctx, b, off, sem); err != nil {
		return nil, err
	}
	if r.disk != nil {
		if err := r.disk.put(off, b); err != nil {
			r.o.Logf("%s: disk cache: %v", r.f.Name(), err)
		}
	}
	return b, nil
}

// fetch reads p at off from the server, splitting large ranges into
// parts fetched in parallel.
func (r *remote) fetch(ctx context.Context, p []byte, off int64, sem chan struct{}) error {
	n := int64(len(p))
	parts := min(int64(r.o.Workers), n/maxSplit)
	if parts <= 1 {
		return r.fetchOne(ctx, p, off, sem)
	}
	g, gctx := errgroup.WithContext(ctx)
	step := (n + parts - 1) / parts
	for s := int64(0); s < n; s += step {
		e := min(s+step, n)
		g.Go(func() error { return r.fetchOne(gctx, p[s:e], off+s, sem) })
	}
	return g.Wait()
}

func (r *remote) fetchOne(ctx context.Context, p []byte, off int64, sem chan struct{}) error {
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-sem }()
	_, err := r.retry(ctx, off, int64(len(p)), func(ctx context.Context) error {
		return r.f.Get(ctx, p, off, r.info, &r.c.bytes)
	})
	return err
}

// retry runs op until it succeeds, fails for good, runs out of attempts
// or the read's time budget is spent. n == 0 means the request is not a
// range read (the initial stat).
func (r *remote) retry(ctx context.Context, off, n int64, op func(context.Context) error) (int, error) {
	if r.changed.Load() && n > 0 {
		return 0, r.rangeErr(off, n, ErrChanged)
	}
	attempt, err := retryLoop(ctx, r.o, func(ctx context.Context, attempt int) error {
		r.c.requests.Add(1)
		if attempt > 1 {
			r.c.retries.Add(1)
		}
		return op(ctx)
	})
	if err == nil {
		return attempt, nil
	}
	r.c.errors.Add(1)
	if errors.Is(err, ErrChanged) && !r.changed.Swap(true) {
		r.o.Logf("%s: %v; all further reads fail", r.f.Name(), err)
	}
	return attempt, r.rangeErr(off, n, err)
}

// Retry runs op with the rules every remote read follows: an error
// marked Retryable is tried again after a backoff (o.RetryWait, doubling,
// full jitter, at least a server's Retry-After) while o.Attempts and
// o.Timeout, which bounds all attempts and waits, last; any other error,
// and ErrChanged, ends it at once. Backends use it for requests that are
// not range reads of an image (listings, uploads).
func Retry(ctx context.Context, o Options, op func(context.Context) error) error {
	_, err := retryLoop(ctx, o.withDefaults(), func(ctx context.Context, _ int) error { return op(ctx) })
	return err
}

// retryLoop is Retry for options with their defaults; it returns the
// number of attempts made. The error says why it gave up.
func retryLoop(ctx context.Context, o Options, op func(ctx context.Context, attempt int) error) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	wait := o.RetryWait
	for attempt := 1; ; attempt++ {
		err := op(ctx, attempt)
		if err == nil {
			return attempt, nil
		}
		if errors.Is(err, ErrChanged) {
			return attempt, err
		}
		var rt *retryable
		if !errors.As(err, &rt) || attempt >= o.Attempts || ctx.Err() != nil {
			if ctx.Err() != nil && !errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("%w (gave up after %v)", err, o.Timeout)
			}
			return attempt, fmt.Errorf("%w (attempt %d of %d)", err, attempt, o.Attempts)
		}
		// Full jitter: sleep a random time up to the backoff, but at
		// least what the server asked for.
		d := time.Duration(rand.Int64N(int64(wait) + 1))
		if rt.after > d {
			d = rt.after
		}
		wait = min(wait*2, 5*time.Second)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return attempt, fmt.Errorf("%w (gave up after %v)", err, o.Timeout)
		}
	}
}

// rangeErr names the object and range. The cause is kept as text, not
// wrapped: callers that map errors to an errno must see a failed read,
// not the transport's ECONNREFUSED or ETIMEDOUT. Only ErrChanged and
// ErrFetch can be tested with errors.Is.
func (r *remote) rangeErr(off, n int64, err error) error {
	kind := ErrFetch
	if errors.Is(err, ErrChanged) {
		kind = ErrChanged
	}
	msg := strings.TrimPrefix(err.Error(), kind.Error())
	msg = strings.TrimLeft(msg, ": ")
	if n == 0 {
		return fmt.Errorf("%s: %w: %s", r.f.Name(), kind, msg)
	}
	return fmt.Errorf("%s: bytes %d-%d: %w: %s", r.f.Name(), off, off+n-1, kind, msg)
}

func (r *remote) imageOffset() (int64, bool) { return r.prefix, r.hasPrefix }

func (r *remote) Size() int64      { return r.info.Size }
func (r *remote) Identity() string { return r.id }
func (r *remote) Name() string     { return r.f.Name() }

func (r *remote) Stats() Stats {
	return Stats{
		Requests: r.c.requests.Load(), Retries: r.c.retries.Load(), BytesFetched: r.c.bytes.Load(),
		MemHits: r.c.memHits.Load(), DiskHits: r.c.diskHits.Load(), DiskMisses: r.c.diskMisses.Load(),
		DiskCorrupt: r.c.diskCorrupt.Load(), DiskBytes: r.c.diskBytes.Load(), Errors: r.c.errors.Load(),
	}
}

func (r *remote) Close() error {
	r.f.Close()
	if r.disk != nil {
		return r.disk.close()
	}
	return nil
}

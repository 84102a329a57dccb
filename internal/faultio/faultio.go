// Package faultio wraps an io.ReaderAt with injectable storage faults: byte
// ranges whose reads fail (a bad sector), a size the storage shrinks to (a
// truncated image) and a delay per read (slow storage). Faults can be set
// and cleared while readers are active.
package faultio

import (
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ReaderAt is an io.ReaderAt with faults. The zero value is not usable;
// use New.
type ReaderAt struct {
	r io.ReaderAt

	mu     sync.Mutex
	bad    []span // reads overlapping these fail
	size   int64  // reads at or past size see EOF; -1: no truncation
	delay  time.Duration
	reads  atomic.Int64
	failed atomic.Int64
}

type span struct {
	off, end int64
	err      error
}

// New wraps r without faults.
func New(r io.ReaderAt) *ReaderAt { return &ReaderAt{r: r, size: -1} }

// Fail makes every read overlapping [off, off+n) fail with err (EIO if
// nil), returning the bytes before the bad range, as a disk does.
func (f *ReaderAt) Fail(off, n int64, err error) {
	if err == nil {
		err = syscall.EIO
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bad = append(f.bad, span{off, off + n, err})
}

// Truncate makes the storage end at size: reads past it come back short
// with io.EOF. A negative size undoes it.
func (f *ReaderAt) Truncate(size int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.size = size
}

// SetDelay delays every read by d.
func (f *ReaderAt) SetDelay(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delay = d
}

// Clear removes all faults: the storage is healthy again.
func (f *ReaderAt) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bad, f.size, f.delay = nil, -1, 0
}

// Reads is the number of ReadAt calls so far; Failed how many of them
// returned an injected fault.
func (f *ReaderAt) Reads() int64  { return f.reads.Load() }
func (f *ReaderAt) Failed() int64 { return f.failed.Load() }

// ReadAt reads from the wrapped reader unless a fault applies.
func (f *ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	f.reads.Add(1)
	f.mu.Lock()
	delay, size := f.delay, f.size
	end := off + int64(len(p))
	// The first bad byte the read reaches decides how far it gets.
	var hit *span
	for i := range f.bad {
		b := &f.bad[i]
		if b.off < end && off < b.end && (hit == nil || b.off < hit.off) {
			hit = b
		}
	}
	var herr error
	hoff := end
	if hit != nil {
		herr, hoff = hit.err, max(hit.off, off)
	}
	f.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	limit, lerr := end, error(nil)
	if hoff < limit {
		limit, lerr = hoff, herr
	}
	if size >= 0 && size < limit {
		limit, lerr = max(size, off), io.EOF
	}
	n, err := f.r.ReadAt(p[:limit-off], off)
	if err != nil {
		return n, err
	}
	if lerr != nil {
		if lerr != io.EOF {
			f.failed.Add(1)
		}
		return n, lerr
	}
	return n, nil
}

package writer

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/block/encode"
)

// pipeline compresses blocks on a pool of workers and writes them in
// submission order, so that the image does not depend on the number of
// workers. A semaphore bounds the bytes of the blocks submitted but not yet
// written.
//
// The workers share as many threads as there are workers: each block is
// encoded on one, and on more of those left idle when its encoder can
// split it (e.g. the last blocks, which would otherwise leave all but one
// core idle at the end). An encoder never runs on more threads than
// there are workers, so memory stays bounded by that many encoders' state.
type pipeline struct {
	bw      *block.Writer
	g       *errgroup.Group
	ctx     context.Context // ends with the first failure or Wait
	parent  context.Context // the caller's
	jobs    chan *job
	order   chan *job
	sem     *semaphore.Weighted
	threads *semaphore.Weighted
	limit   int64
	closed  bool

	// For the build's timeline: when the first block began (UnixNano),
	// when the last was written, how many were, and the encoders' CPU.
	firstStart, lastWritten atomic.Int64
	written                 atomic.Int64
	encoderCPU              atomic.Int64
	encoderCPUKnown         atomic.Bool
}

// idleFree is how long a worker keeps its encoder's memory while it waits
// for a block: long enough for a producer between two blocks, short next
// to compressing one at the levels where that memory is large.
const idleFree = time.Second

// Threads is how an encode function learns how many threads it may use:
// it passes how many it could keep busy and gets at least 1 and at most
// that many, taking idle ones without waiting for them. Later calls can
// only add threads; all are returned when encode returns.
type Threads func(want int) int

// encoderFor returns comp set up to compress an n-byte input on the
// worker that was given threads and ws: on as many of the worker's threads
// as comp can use for it, keeping its state in the worker's workspace.
func encoderFor(comp encode.Compressor, n int, threads Threads, ws *encode.Workspace) encode.Compressor {
	return encode.WithWorkspace(encode.WithThreads(comp, threads(encode.MaxThreads(comp, n))), ws)
}

type job struct {
	encode  func(Threads, *encode.Workspace) (block.Compression, []byte, error)
	written func(block.Compression, []byte)
	weight  int64
	done    chan struct{}
	ct      block.Compression
	out     []byte
	err     error
}

// newPipeline starts workers (at least one) that write BLOCK sections to
// bw; limit bounds the weight in flight (<= 0: no bound). With niceness
// above 0 each worker runs on a thread of its own whose nice value is
// raised by that much, so that compression yields to the producer.
func newPipeline(ctx context.Context, bw *block.Writer, workers int, limit int64, niceness int) *pipeline {
	workers = max(workers, 1)
	if limit <= 0 {
		limit = 1 << 62
	}
	g, gctx := errgroup.WithContext(ctx)
	p := &pipeline{bw: bw, g: g, ctx: gctx, parent: ctx, limit: limit,
		jobs: make(chan *job), order: make(chan *job, 4*workers+16)}
	p.sem = semaphore.NewWeighted(limit)
	p.threads = semaphore.NewWeighted(int64(workers))
	for range workers {
		g.Go(func() error {
			if niceness > 0 {
				// Never unlocked: the thread ends with the goroutine,
				// so its lower priority does not reach other work.
				runtime.LockOSThread()
				// Best effort, as in the reference: a thread that
				// cannot be niced still compresses.
				_ = niceThread(niceness)
			}
			// The encoder's state stays from block to block, and is
			// given back when the worker has waited idleFree for a
			// block (a slow producer) or there are no more.
			ws := encode.NewWorkspace()
			defer ws.Close()
			idle := time.NewTimer(idleFree)
			defer idle.Stop()
			for {
				var j *job
				idle.Reset(idleFree)
				select {
				case j = <-p.jobs:
				case <-idle.C:
					ws.Close()
					j = <-p.jobs
				}
				if j == nil { // closed: no more blocks
					break
				}
				if err := p.threads.Acquire(gctx, 1); err != nil {
					return err
				}
				held := 1
				p.firstStart.CompareAndSwap(0, time.Now().UnixNano())
				// The thread is held for the encode so that its CPU
				// time is the encoder's alone.
				runtime.LockOSThread()
				cpu0, ok0 := threadCPU()
				j.ct, j.out, j.err = j.encode(func(want int) int {
					for held < want && p.threads.TryAcquire(1) {
						held++
					}
					return held
				}, ws)
				if cpu1, ok1 := threadCPU(); ok0 && ok1 {
					p.encoderCPU.Add(int64(cpu1 - cpu0))
					p.encoderCPUKnown.Store(true)
				}
				runtime.UnlockOSThread()
				p.threads.Release(int64(held))
				close(j.done)
			}
			return nil
		})
	}
	g.Go(func() error {
		for j := range p.order {
			select {
			case <-j.done:
			case <-gctx.Done():
				return gctx.Err()
			}
			if j.err != nil {
				return j.err
			}
			if err := p.bw.WriteSection(block.SectionBlock, j.ct, j.out); err != nil {
				return err
			}
			p.lastWritten.Store(time.Now().UnixNano())
			p.written.Add(1)
			if j.written != nil {
				j.written(j.ct, j.out)
			}
			p.sem.Release(j.weight)
		}
		return nil
	})
	return p
}

// Submit queues one block of the given weight (its size, or a bound of
// it). encode runs on a worker, given the worker's threads and encoder
// workspace (see encoderFor), and returns the section's compression and
// payload; written, if not nil, runs once the section is written, in
// submission order (to recycle buffers or report progress).
func (p *pipeline) Submit(weight int64, encode func(Threads, *encode.Workspace) (block.Compression, []byte, error), written func(block.Compression, []byte)) error {
	j := &job{encode: encode, written: written, weight: min(weight, p.limit), done: make(chan struct{})}
	if err := p.sem.Acquire(p.ctx, j.weight); err != nil {
		return p.failure(err)
	}
	select {
	case p.order <- j:
	case <-p.ctx.Done():
		return p.failure(p.ctx.Err())
	}
	select {
	case p.jobs <- j:
	case <-p.ctx.Done():
		return p.failure(p.ctx.Err())
	}
	return nil
}

// RunIdle runs f on a thread that no worker is using, waiting for one
// to be left idle, so that work beside the encoders neither slows them
// nor adds an encoder's memory to theirs while they all run.
// It may be called while or after Wait runs: only the caller's context
// ends the wait.
func (p *pipeline) RunIdle(f func()) error {
	if err := p.threads.Acquire(p.parent, 1); err != nil {
		return err
	}
	defer p.threads.Release(1)
	f()
	return nil
}

// Done is closed when the pipeline fails (or its context ends), for a
// producer that waits on something other than Submit; Stop then returns
// the reason.
func (p *pipeline) Done() <-chan struct{} { return p.ctx.Done() }

// Stop ends the pipeline early and returns its error, or the context's.
func (p *pipeline) Stop() error { return p.failure(p.ctx.Err()) }

// failure prefers the pipeline's own error over the bare cancellation.
func (p *pipeline) failure(err error) error {
	p.close()
	if werr := p.g.Wait(); werr != nil {
		return werr
	}
	return err
}

func (p *pipeline) close() {
	if !p.closed {
		p.closed = true
		close(p.jobs)
		close(p.order)
	}
}

// Wait writes all submitted blocks and returns the first error.
func (p *pipeline) Wait() error {
	p.close()
	return p.g.Wait()
}

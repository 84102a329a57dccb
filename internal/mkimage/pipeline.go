package mkimage

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/godwarfs/godwarfs/block"
)

// pipeline compresses blocks on a worker pool and writes them in submission
// order, so the image does not depend on the number of workers. The
// semaphore bounds the bytes of blocks submitted but not yet written.
type pipeline struct {
	comp   block.Compressor
	bw     *block.Writer
	g      *errgroup.Group
	ctx    context.Context
	jobs   chan *job
	order  chan *job
	sem    *semaphore.Weighted
	limit  int64
	closed bool
}

type job struct {
	data   []byte
	weight int64
	done   chan struct{}
	ct     block.Compression
	out    []byte
	err    error
}

func newPipeline(ctx context.Context, comp block.Compressor, bw *block.Writer, workers int, limit int64) *pipeline {
	workers = max(workers, 1)
	if limit <= 0 {
		limit = 1 << 62 // refined on first submit from the block size
	}
	g, gctx := errgroup.WithContext(ctx)
	p := &pipeline{comp: comp, bw: bw, g: g, ctx: gctx, limit: limit,
		jobs: make(chan *job), order: make(chan *job, 4*workers+16)}
	p.sem = semaphore.NewWeighted(limit)
	for range workers {
		g.Go(func() error {
			for j := range p.jobs {
				j.ct, j.out, j.err = block.CompressSection(p.comp, j.data)
				close(j.done)
			}
			return nil
		})
	}
	g.Go(func() error {
		n := 0
		for j := range p.order {
			select {
			case <-j.done:
			case <-gctx.Done():
				return gctx.Err()
			}
			if j.err != nil {
				return fmt.Errorf("block %d: %w", n, j.err)
			}
			if err := p.bw.WriteSection(block.SectionBlock, j.ct, j.out); err != nil {
				return fmt.Errorf("writing image: %w", err)
			}
			p.sem.Release(j.weight)
			n++
		}
		return nil
	})
	return p
}

// submit is the dedup.BlockSink.
func (p *pipeline) submit(ctx context.Context, data []byte) error {
	j := &job{data: data, weight: min(int64(len(data)), p.limit), done: make(chan struct{})}
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

// wait flushes all blocks and returns the first error.
func (p *pipeline) wait() error {
	p.close()
	return p.g.Wait()
}

package writer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/block/encode"
)

// pipelineImage runs blocks through a pipeline and returns the written
// bytes and the largest weight that was being encoded or waiting to be
// written at one time (a block weighs its size, at most the limit).
func pipelineImage(t *testing.T, workers int, limit int64, blocks [][]byte) ([]byte, int64) {
	t.Helper()
	comp, err := encode.NewCompressor("zstd:level=3")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	bw := block.NewWriter(&buf, block.WriterOptions{})
	p := newPipeline(context.Background(), bw, workers, limit, 0)
	var inFlight, peak atomic.Int64
	for _, data := range blocks {
		w := int64(len(data))
		if limit > 0 {
			w = min(w, limit) // a block larger than the bound goes alone
		}
		err := p.Submit(w, func(Threads, *encode.Workspace) (block.Compression, []byte, error) {
			if n := inFlight.Add(w); n > peak.Load() {
				peak.Store(n) // racy max is fine: only ever too low by a step
			}
			return encode.CompressSection(comp, data)
		}, func(block.Compression, []byte) { inFlight.Add(-w) })
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), peak.Load()
}

func TestPipelineOrderAndBound(t *testing.T) {
	var blocks [][]byte
	for i := range 40 {
		// Blocks of different sizes take different times to encode, so
		// workers finish out of order.
		blocks = append(blocks, bytes.Repeat([]byte(fmt.Sprintf("block %d ", i)), 100+(i%7)*3000))
	}
	want, _ := pipelineImage(t, 1, 0, blocks)
	for _, tc := range []struct {
		workers int
		limit   int64
	}{{2, 0}, {4, 64 << 10}, {8, 1}} {
		got, peak := pipelineImage(t, tc.workers, tc.limit, blocks)
		if !bytes.Equal(got, want) {
			t.Errorf("%d workers: image differs from the one-worker image", tc.workers)
		}
		if tc.limit > 0 && peak > tc.limit {
			t.Errorf("%d workers, limit %d: %d bytes in flight", tc.workers, tc.limit, peak)
		}
	}
}

func TestPipelineError(t *testing.T) {
	bw := block.NewWriter(&bytes.Buffer{}, block.WriterOptions{})
	p := newPipeline(context.Background(), bw, 2, 0, 0)
	bad := errors.New("bad block")
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		err = p.Submit(1, func(Threads, *encode.Workspace) (block.Compression, []byte, error) {
			if i == 3 {
				return 0, nil, bad
			}
			return block.CompNone, []byte{1}, nil
		}, nil)
	}
	if werr := p.Wait(); !errors.Is(werr, bad) || (err != nil && !errors.Is(err, bad)) {
		t.Fatalf("submit %v, wait %v; want %v", err, werr, bad)
	}
}

// TestPipelineThreads: an encoder that can use several threads gets the
// idle ones, but the pipeline never hands out more threads at once than
// it has workers (each thread may hold an encoder's state), and one that
// asks for one thread gets one.
func TestPipelineThreads(t *testing.T) {
	for _, workers := range []int{1, 2, 3} {
		bw := block.NewWriter(&bytes.Buffer{}, block.WriterOptions{})
		p := newPipeline(context.Background(), bw, workers, 0, 0)
		var held, peak atomic.Int64
		alone := make(chan int)
		// First a job alone in the pipeline: it gets every thread.
		err := p.Submit(1, func(threads Threads, _ *encode.Workspace) (block.Compression, []byte, error) {
			n := threads(8)
			if again := threads(1); again != n {
				return 0, nil, fmt.Errorf("a second call gave %d threads after %d", again, n)
			}
			alone <- n
			return block.CompNone, []byte{1}, nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := <-alone; n != workers {
			t.Errorf("%d workers: a job alone got %d threads, want %d", workers, n, workers)
		}
		for i := range 30 {
			err := p.Submit(1, func(threads Threads, _ *encode.Workspace) (block.Compression, []byte, error) {
				want := 1 + i%4
				n := threads(want)
				if n < 1 || n > want {
					return 0, nil, fmt.Errorf("asked for %d threads, got %d", want, n)
				}
				if h := held.Add(int64(n)); h > peak.Load() {
					peak.Store(h) // racy max: at worst too low by a step
				}
				time.Sleep(time.Millisecond)
				held.Add(-int64(n))
				return block.CompNone, []byte{byte(i)}, nil
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if peak.Load() > int64(workers) {
			t.Errorf("%d workers: %d threads handed out at once", workers, peak.Load())
		}
	}
}

// TestPipelineRunIdle: work given to RunIdle waits until a worker's
// thread is free, and then runs while the pipeline goes on, or after it.
func TestPipelineRunIdle(t *testing.T) {
	var buf bytes.Buffer
	bw := block.NewWriter(&buf, block.WriterOptions{})
	p := newPipeline(context.Background(), bw, 1, 0, 0)
	started, release := make(chan struct{}), make(chan struct{})
	var encoded atomic.Bool
	err := p.Submit(1, func(Threads, *encode.Workspace) (block.Compression, []byte, error) {
		close(started)
		<-release
		encoded.Store(true)
		return block.CompNone, []byte("x"), nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	ran := make(chan bool, 1)
	go func() {
		if err := p.RunIdle(func() { ran <- encoded.Load() }); err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-ran:
		t.Fatal("RunIdle ran while the only worker was encoding")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if !<-ran {
		t.Fatal("RunIdle ran before the worker's block was encoded")
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	// After Wait (a build that ends before its metadata got a thread).
	after := false
	if err := p.RunIdle(func() { after = true }); err != nil || !after {
		t.Fatalf("RunIdle after Wait: ran %v, err %v", after, err)
	}
}

// Command libwalk measures the reader library on one image: the time and
// peak heap of godwarfs.Open followed by fs.WalkDir with an Lstat of every
// entry, the figures the read-path memory target is stated in. The peak
// heap is sampled from runtime.MemStats (HeapAlloc) every millisecond and
// after each phase.
//
// Usage: libwalk [-memprofile FILE] [-cpuprofile FILE] IMAGE
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godwarfs/godwarfs"
)

func main() {
	memprof := flag.String("memprofile", "", "write a heap profile taken after the walk to this file")
	cpuprof := flag.String("cpuprofile", "", "write a CPU profile of open and walk to this file")
	flag.Parse()
	if *cpuprof != "" {
		f, err := os.Create(*cpuprof)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "libwalk:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: libwalk [-memprofile FILE] [-cpuprofile FILE] IMAGE")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *memprof); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "libwalk:", err)
		os.Exit(1)
	}
}

// peak samples HeapAlloc until stopped.
type peak struct {
	max  atomic.Uint64
	stop chan struct{}
	wg   sync.WaitGroup
}

func (p *peak) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	for {
		cur := p.max.Load()
		if ms.HeapAlloc <= cur || p.max.CompareAndSwap(cur, ms.HeapAlloc) {
			return
		}
	}
}

func startPeak() *peak {
	p := &peak{stop: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.sample()
			}
		}
	}()
	return p
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func run(path, memprof string) error {
	p := startPeak()
	t0 := time.Now()
	im, err := godwarfs.Open(path, nil)
	if err != nil {
		return err
	}
	defer im.Close()
	tOpen := time.Since(t0)
	p.sample()
	openPeak := p.max.Load()
	n := 0
	err = fs.WalkDir(im, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if _, err := im.Lstat(name); err != nil {
			return err
		}
		n++
		return nil
	})
	if err != nil {
		return err
	}
	tWalk := time.Since(t0) - tOpen
	p.sample()
	close(p.stop)
	p.wg.Wait()
	if memprof != "" {
		f, err := os.Create(memprof)
		if err != nil {
			return err
		}
		if err := pprof.WriteHeapProfile(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("entries %d\nopen %.3f s, peak heap after open %s\nwalk+lstat %.3f s, peak heap %s\nheap sys %s\n",
		n, tOpen.Seconds(), mib(openPeak), tWalk.Seconds(), mib(p.max.Load()), mib(ms.HeapSys))
	return nil
}

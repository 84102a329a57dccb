// Command statall lstat's every path of a file list with N goroutines and
// prints the elapsed wall time. It is a helper of bench/read.sh.
//
//	statall -list FILE [-prefix DIR] [-threads N]
//
// FILE holds one path per line; each is joined to DIR before the lstat.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	list := flag.String("list", "", "file with one path per line (- for stdin)")
	prefix := flag.String("prefix", "", "directory prepended to every path")
	threads := flag.Int("threads", 1, "number of goroutines issuing lstat")
	flag.Parse()
	if *list == "" || *threads < 1 {
		flag.Usage()
		os.Exit(2)
	}

	in := os.Stdin
	if *list != "-" {
		f, err := os.Open(*list)
		if err != nil {
			fmt.Fprintln(os.Stderr, "statall:", err)
			os.Exit(1)
		}
		defer f.Close()
		in = f
	}
	var paths []string
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if p := sc.Text(); p != "" {
			paths = append(paths, filepath.Join(*prefix, p))
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "statall:", err)
		os.Exit(1)
	}

	var next, errs atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < *threads; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := int(next.Add(1)) - 1
				if n >= len(paths) {
					return
				}
				if _, err := os.Lstat(paths[n]); err != nil {
					if errs.Add(1) == 1 {
						fmt.Fprintln(os.Stderr, "statall:", err)
					}
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	fmt.Printf("files=%d errors=%d threads=%d elapsed=%.4f\n", len(paths), errs.Load(), *threads, elapsed.Seconds())
	if errs.Load() > 0 {
		os.Exit(1)
	}
}

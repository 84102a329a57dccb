package imagetest

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// FileWant is a file to read (through a mount) and the bytes it must hold.
type FileWant struct {
	Path string
	Want []byte
}

// TreeFiles lists the regular files of tree as they appear under dir,
// with their contents.
func TreeFiles(tb testing.TB, tree, dir string) []FileWant {
	tb.Helper()
	var out []FileWant
	err := filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(tree, p)
		if err != nil {
			return err
		}
		out = append(out, FileWant{filepath.Join(dir, rel), b})
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	if len(out) == 0 {
		tb.Fatalf("%s: no files", tree)
	}
	return out
}

// StartReaders starts n goroutines that read files round robin (reader
// g from file g on) and compare each with its Want until stop is
// called. stop waits for them and returns how many files they read
// and the first error or mismatch; a reader stops at its first.
func StartReaders(files []FileWant, n int) (stop func() (reads int64, err error)) {
	quit := make(chan struct{})
	var count atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for g := range n {
		wg.Go(func() {
			for i := g; ; i++ {
				select {
				case <-quit:
					return
				default:
				}
				f := files[i%len(files)]
				b, err := os.ReadFile(f.Path)
				if err == nil && !bytes.Equal(b, f.Want) {
					err = fmt.Errorf("read %d bytes that differ from the %d expected", len(b), len(f.Want))
				}
				if err != nil {
					once.Do(func() { first = fmt.Errorf("reader %d: %s: %w", g, f.Path, err) })
					return
				}
				count.Add(1)
			}
		})
	}
	return func() (int64, error) {
		close(quit)
		wg.Wait()
		return count.Load(), first
	}
}

// Command gentree writes a deterministic tree of many small files, the
// "files1m" corpus of bench/corpus.sh: a source-tree-like layout of
// projects, packages and files with names built from a small vocabulary,
// sizes from a long-tailed distribution (most files under 4 KiB), and
// contents that are partly shared between files so deduplication and
// compression have realistic work to do.
//
// Usage: gentree [-files N] [-seed S] DIR
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
)

var (
	words = []string{"alpha", "buffer", "cache", "client", "codec", "config", "core", "data",
		"debug", "decode", "device", "driver", "encode", "event", "file", "format", "handler",
		"hash", "index", "init", "input", "io", "kernel", "list", "loader", "log", "main",
		"map", "memory", "meta", "net", "node", "output", "parse", "path", "pool", "proto",
		"queue", "reader", "render", "route", "scan", "server", "shard", "socket", "store",
		"stream", "sync", "table", "task", "test", "thread", "time", "tree", "types", "util",
		"value", "view", "worker", "writer"}
	exts = []string{".c", ".h", ".go", ".py", ".js", ".json", ".txt", ".md", ".rs", ".cc",
		".hpp", ".yaml", ".html", ".css", ".sh", ".xml"}
)

func main() {
	nfiles := flag.Int("files", 1000000, "number of regular files")
	seed := flag.Uint64("seed", 1, "random seed (same seed, same tree)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: gentree [-files N] [-seed S] DIR")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *nfiles, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "gentree:", err)
		os.Exit(1)
	}
}

// name returns a word-based file or directory name, unique within its
// directory by the trailing counter.
func name(r *rand.Rand, i int, ext string) string {
	a := words[r.IntN(len(words))]
	b := words[r.IntN(len(words))]
	switch r.IntN(3) {
	case 0:
		return fmt.Sprintf("%s_%s_%d%s", a, b, i, ext)
	case 1:
		return fmt.Sprintf("%s%d%s", a, i, ext)
	default:
		return fmt.Sprintf("%s-%s-%03d%s", a, b, i, ext)
	}
}

// size draws from a log-normal distribution with a median near 700 bytes,
// capped at 256 KiB; one file in 50 is empty.
func size(r *rand.Rand) int {
	if r.IntN(50) == 0 {
		return 0
	}
	s := math.Exp(r.NormFloat64()*1.2 + math.Log(700))
	return int(math.Min(s, 256<<10))
}

func run(root string, nfiles int, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	// A pool of text that file contents are cut from: shared pieces make
	// some files identical and many similar.
	pool := make([]byte, 4<<20)
	for i := 0; i < len(pool); {
		w := words[r.IntN(len(words))]
		i += copy(pool[i:], w)
		if i < len(pool) {
			pool[i] = " \n(){};,"[r.IntN(8)]
			i++
		}
	}
	// Layout: projects with 5-40 packages of 20-400 files each, some
	// packages with a nested sub-package.
	written := 0
	buf := make([]byte, 0, 256<<10)
	for p := 0; written < nfiles; p++ {
		proj := filepath.Join(root, name(r, p, ""))
		npkg := 5 + r.IntN(36)
		for k := 0; k < npkg && written < nfiles; k++ {
			dir := filepath.Join(proj, name(r, k, ""))
			if r.IntN(4) == 0 {
				dir = filepath.Join(dir, words[r.IntN(len(words))])
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			nf := 20 + r.IntN(381)
			for j := 0; j < nf && written < nfiles; j++ {
				n := size(r)
				buf = buf[:0]
				if n > 0 {
					off := r.IntN(len(pool) - n)
					if r.IntN(8) == 0 {
						off &^= 4095 // aligned: more exact duplicates
					}
					buf = append(buf, pool[off:off+n]...)
					if r.IntN(3) > 0 {
						buf = fmt.Appendf(buf[:max(0, n-24)], "\n// file %d of %d\n", j, written)
					}
				}
				if err := writeFile(filepath.Join(dir, name(r, j, exts[r.IntN(len(exts))])), buf); err != nil {
					return err
				}
				written++
			}
		}
	}
	return nil
}

func writeFile(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, len(data)+1)
	_, err = w.Write(data)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

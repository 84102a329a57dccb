// Command gentree writes a deterministic tree of many small files, the
// "files1m" corpus of bench/corpus.sh: a source-tree-like layout of
// projects, packages and files with names built from a small vocabulary,
// sizes from a long-tailed distribution (most files under 4 KiB), and
// contents that are partly shared between files so deduplication and
// compression have realistic work to do.
//
// With -shape smalltext it writes the shape of a mail or log archive
// instead: small text files of 5-120 words, 30% of them tiny
// near-duplicates of a few templates, spread evenly over -dirs
// directories. With -tar it writes the tree as a tar stream to standard
// output instead of to DIR; -shape empty makes every file empty or a few
// bytes long, for streams of many millions of entries.
//
// Usage: gentree [-files N] [-seed S] [-shape source|smalltext|empty] [-dirs N] [-tar] [DIR]
package main

import (
	"archive/tar"
	"bufio"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
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
	shape := flag.String("shape", "source", "tree shape: source, smalltext or empty")
	ndirs := flag.Int("dirs", 0, "directories for -shape smalltext and empty (default: one per 100 files)")
	toTar := flag.Bool("tar", false, "write a tar stream to standard output instead of a tree to DIR")
	flag.Parse()
	if flag.NArg() != 1 && !(*toTar && flag.NArg() == 0) {
		fmt.Fprintln(os.Stderr, "usage: gentree [-files N] [-seed S] [-shape source|smalltext|empty] [-dirs N] [-tar] [DIR]")
		os.Exit(2)
	}
	if *ndirs <= 0 {
		*ndirs = max(1, *nfiles/100)
	}
	var err error
	switch {
	case *shape == "source" && !*toTar:
		err = run(flag.Arg(0), *nfiles, *seed)
	case *shape == "smalltext" || *shape == "empty":
		var out sink
		if *toTar {
			out = newTarSink(os.Stdout)
		} else {
			out = dirSink{flag.Arg(0)}
		}
		err = runFlat(out, *shape, *nfiles, *ndirs, *seed)
		if cerr := out.close(); err == nil {
			err = cerr
		}
	default:
		err = fmt.Errorf("shape %q: want source, smalltext or empty (-tar needs smalltext or empty)", *shape)
	}
	if err != nil {
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

// A sink receives the directories and files of a generated tree.
type sink interface {
	dir(name string) error
	file(name string, data []byte) error
	close() error
}

type dirSink struct{ root string }

func (d dirSink) dir(name string) error { return os.MkdirAll(filepath.Join(d.root, name), 0o755) }
func (d dirSink) file(name string, data []byte) error {
	return writeFile(filepath.Join(d.root, name), data)
}
func (dirSink) close() error { return nil }

// tarSink writes a tar stream with fixed owners and times, so the same
// seed gives the same bytes.
type tarSink struct {
	bw *bufio.Writer
	tw *tar.Writer
}

var tarTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func newTarSink(w *os.File) *tarSink {
	bw := bufio.NewWriterSize(w, 1<<20)
	return &tarSink{bw: bw, tw: tar.NewWriter(bw)}
}

func (t *tarSink) dir(name string) error {
	return t.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755, ModTime: tarTime, Format: tar.FormatUSTAR})
}

func (t *tarSink) file(name string, data []byte) error {
	if err := t.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: tarTime, Format: tar.FormatUSTAR}); err != nil {
		return err
	}
	_, err := t.tw.Write(data)
	return err
}

func (t *tarSink) close() error {
	if err := t.tw.Close(); err != nil {
		return err
	}
	return t.bw.Flush()
}

// templates are the tiny files' common forms: status files, counters and
// one-line logs that differ from each other in a number or a word.
var templates = []string{
	"status: %s\nid: %d\n",
	"%d\n",
	"ok %s %d\n",
	"[%s] job %d finished\n",
	"version=1.%d.%s\n",
	"lock held by pid %d (%s)\n",
}

// runFlat writes nfiles files evenly over ndirs directories laid out two
// levels deep (about the square root of ndirs in each level), so a
// directory has about nfiles/ndirs entries.
func runFlat(out sink, shape string, nfiles, ndirs int, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	// A larger vocabulary than the source shape's, drawn with a skew so a
	// few words are common, as in prose.
	vocab := make([]string, 0, 4096)
	for _, a := range words {
		for _, b := range words {
			vocab = append(vocab, a+b[:min(len(b), 3)])
		}
	}
	vocab = append(vocab, words...)
	r.Shuffle(len(vocab), func(i, j int) { vocab[i], vocab[j] = vocab[j], vocab[i] })
	top := int(math.Ceil(math.Sqrt(float64(ndirs))))
	var buf []byte
	var sb strings.Builder
	written := 0
	for d := 0; d < ndirs; d++ {
		parent := fmt.Sprintf("%03d", d/top)
		if d%top == 0 {
			if err := out.dir(parent); err != nil {
				return err
			}
		}
		dir := fmt.Sprintf("%s/%s-%05d", parent, words[d%len(words)], d)
		if err := out.dir(dir); err != nil {
			return err
		}
		// This directory's share of the files, spread so the total is exact.
		n := (nfiles*(d+1))/ndirs - (nfiles*d)/ndirs
		for j := 0; j < n; j++ {
			buf = buf[:0]
			switch {
			case shape == "empty":
				if r.IntN(4) == 0 {
					buf = fmt.Appendf(buf, "%d\n", r.IntN(1000))
				}
			case r.IntN(10) < 3:
				t := templates[r.IntN(len(templates))]
				w := words[r.IntN(8)]
				if t == "%d\n" {
					buf = fmt.Appendf(buf, t, r.IntN(100))
				} else if t[0] == '%' || t[0] == 'l' {
					buf = fmt.Appendf(buf, t, r.IntN(100), w)
				} else {
					buf = fmt.Appendf(buf, t, w, r.IntN(100))
				}
			default:
				nw := 5 + r.IntN(116)
				for k := 0; k < nw; k++ {
					// Skewed: squaring a uniform draw favours the start of vocab.
					f := r.Float64()
					buf = append(buf, vocab[int(f*f*float64(len(vocab)))]...)
					if k%12 == 11 {
						buf = append(buf, '\n')
					} else {
						buf = append(buf, ' ')
					}
				}
				buf = append(buf, '\n')
			}
			sb.Reset()
			fmt.Fprintf(&sb, "%s/%s-%d.txt", dir, words[r.IntN(len(words))], written)
			if err := out.file(sb.String(), buf); err != nil {
				return err
			}
			written++
		}
	}
	return nil
}

// Package codectest holds the test inputs that the tests of block's
// decoders and of the encoders in block/encode share: real executable
// bytes and random data for the BCJ filters, and the FLAC test streams of
// package block/flac.
package codectest

import (
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/godwarfs/godwarfs/block/flac"
)

// Streams returns the libFLAC-written test streams of package flac by
// file name.
func Streams(t testing.TB) map[string][]byte {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(self), "..", "..", "flac", "testdata")
	paths, _ := filepath.Glob(filepath.Join(dir, "*.flac"))
	if len(paths) == 0 {
		t.Fatalf("no streams in %s", dir)
	}
	m := make(map[string][]byte)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		m[filepath.Base(p)] = data
	}
	return m
}

// Samples decodes a stream into interleaved samples.
func Samples(t testing.TB, stream []byte) (flac.StreamInfo, []int64) {
	t.Helper()
	d, err := flac.NewDecoder(stream)
	if err != nil {
		t.Fatal(err)
	}
	var all []int64
	for {
		f, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < f.BlockSize; i++ {
			for _, ch := range f.Samples {
				all = append(all, ch[i])
			}
		}
	}
	return d.Info(), all
}

// ExecutableBytes is up to n bytes of a real executable of this machine's
// architecture: the test binary itself.
func ExecutableBytes(t testing.TB, n int) []byte {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("skipped: no path to the test binary: %v", err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Skipf("skipped: cannot read the test binary: %v", err)
	}
	return b[:min(n, len(b))]
}

// RandomBytes has plenty of accidental instruction patterns for every BCJ
// filter (an E8 every 128 bytes, a BL every 256 words, ...).
func RandomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

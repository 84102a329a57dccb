package fusefs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/godwarfs/godwarfs/internal/imagetest"
)

// Chunk counts compared by the many-chunk test and benchmark.
const (
	fewChunks  = 1_000
	manyChunks = 100_000
	readSize   = 128 << 10
)

// mountChunked mounts an image with a 1,000-chunk file "few" and a
// 100,000-chunk file "many", with direct I/O so that every read reaches
// the driver instead of the page cache.
func mountChunked(tb testing.TB) (*imagetest.Chunked, string) {
	tb.Helper()
	c := &imagetest.Chunked{Files: []imagetest.File{{Name: "few", Chunks: fewChunks}, {Name: "many", Chunks: manyChunks}}}
	p := filepath.Join(tb.TempDir(), "chunked.dwarfs")
	if err := c.Write(p); err != nil {
		tb.Fatal(err)
	}
	srv, _ := mountImage(tb, p, "no_cache_files")
	return c, srv.Dir()
}

func randomOffsets(n int, size int64) []int64 {
	rng := rand.New(rand.NewPCG(3, 4))
	offs := make([]int64, n)
	for i := range offs {
		offs[i] = rng.Int64N(size - readSize)
	}
	return offs
}

func TestManyChunksMounted(t *testing.T) {
	c, dir := mountChunked(t)
	for _, tc := range []struct {
		name   string
		chunks int
	}{{"few", fewChunks}, {"many", manyChunks}} {
		f, err := os.Open(filepath.Join(dir, tc.name))
		if err != nil {
			t.Fatal(err)
		}
		size := c.Size(tc.chunks)
		got, want := make([]byte, readSize), make([]byte, readSize)
		for _, off := range append(randomOffsets(30, size), 0, size-readSize, size-100) {
			n, err := f.ReadAt(got, off)
			wn := c.Want(want, off, tc.chunks)
			if n != wn || (err != nil && !errors.Is(err, io.EOF)) || !bytes.Equal(got[:n], want[:n]) {
				t.Fatalf("%s: pread at %d = %d, %v; want %d matching bytes", tc.name, off, n, err, wn)
			}
		}
		f.Close()
	}
}

// BenchmarkMountedReadRandom is BenchmarkReadAtRandom of the root package
// through a FUSE mount: pread(2) of 128 KiB at random offsets.
func BenchmarkMountedReadRandom(b *testing.B) {
	c, dir := mountChunked(b)
	for _, tc := range []struct {
		name   string
		chunks int
	}{{"few", fewChunks}, {"many", manyChunks}} {
		b.Run(fmt.Sprintf("chunks=%d", tc.chunks), func(b *testing.B) {
			f, err := os.Open(filepath.Join(dir, tc.name))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			buf := make([]byte, readSize)
			offs := randomOffsets(1024, c.Size(tc.chunks))
			f.ReadAt(buf, 0)
			b.SetBytes(readSize)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := f.ReadAt(buf, offs[i%len(offs)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

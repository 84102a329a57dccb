//go:build linux && !386 && !arm

package fusefs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/godwarfs/godwarfs/internal/imagetest"
)

const readSize = 128 << 10

// mountChunked mounts the imagetest.NewManyChunks image with direct I/O,
// so that every read reaches the driver instead of the page cache.
func mountChunked(tb testing.TB) (*imagetest.Chunked, string) {
	tb.Helper()
	c := imagetest.NewManyChunks()
	srv, _ := mountImage(tb, c.WriteTemp(tb), "no_cache_files")
	return c, srv.Dir()
}

func TestManyChunksMounted(t *testing.T) {
	c, dir := mountChunked(t)
	for _, file := range c.Files {
		f, err := os.Open(filepath.Join(dir, file.Name))
		if err != nil {
			t.Fatal(err)
		}
		size := c.Size(file.Chunks)
		got, want := make([]byte, readSize), make([]byte, readSize)
		for _, off := range append(imagetest.RandomOffsets(30, size, readSize), 0, size-readSize, size-100) {
			n, err := f.ReadAt(got, off)
			wn := c.Want(want, off, file.Chunks)
			if n != wn || (err != nil && !errors.Is(err, io.EOF)) || !bytes.Equal(got[:n], want[:n]) {
				t.Fatalf("%s: pread at %d = %d, %v; want %d matching bytes", file.Name, off, n, err, wn)
			}
		}
		f.Close()
	}
}

// BenchmarkMountedReadRandom is BenchmarkReadAtRandom of the root package
// through a FUSE mount: pread(2) of 128 KiB at random offsets of a file
// with 1,000 chunks and of one with 100,000.
func BenchmarkMountedReadRandom(b *testing.B) {
	c, dir := mountChunked(b)
	for _, file := range c.Files {
		b.Run(fmt.Sprintf("chunks=%d", file.Chunks), func(b *testing.B) {
			f, err := os.Open(filepath.Join(dir, file.Name))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			buf := make([]byte, readSize)
			offs := imagetest.RandomOffsets(1024, c.Size(file.Chunks), readSize)
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

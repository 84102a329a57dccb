package godwarfs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/imagetest"
)

const readSize = 128 << 10

// chunkedImage writes the imagetest.NewManyChunks image.
func chunkedImage(tb testing.TB) (*imagetest.Chunked, string) {
	tb.Helper()
	c := imagetest.NewManyChunks()
	return c, c.WriteTemp(tb)
}

func TestManyChunksReadAt(t *testing.T) {
	c, p := chunkedImage(t)
	im := open(t, p)
	for _, tc := range c.Files {
		f, err := im.Open(tc.Name)
		if err != nil {
			t.Fatal(err)
		}
		h := f.(*godwarfs.File)
		if h.Size() != c.Size(tc.Chunks) {
			t.Fatalf("%s: size %d, want %d", tc.Name, h.Size(), c.Size(tc.Chunks))
		}
		got, want := make([]byte, readSize), make([]byte, readSize)
		offs := append(imagetest.RandomOffsets(50, h.Size(), readSize), 0, 1, h.Size()-readSize, h.Size()-100)
		for _, off := range offs {
			n, err := h.ReadAt(got, off)
			wn := c.Want(want, off, tc.Chunks)
			if n != wn || (n < readSize) != errors.Is(err, io.EOF) || (err != nil && !errors.Is(err, io.EOF)) {
				t.Fatalf("%s: ReadAt(%d) = %d, %v; want %d bytes", tc.Name, off, n, err, wn)
			}
			if !bytes.Equal(got[:n], want[:n]) {
				t.Fatalf("%s: ReadAt(%d): content differs", tc.Name, off)
			}
		}
		f.Close()
	}
}

// TestManyChunksReadAllocs checks that a read allocates nothing, so no
// per-read work grows with the number of chunks in the file.
func TestManyChunksReadAllocs(t *testing.T) {
	_, p := chunkedImage(t)
	im := open(t, p)
	allocs := map[string]float64{}
	for _, name := range []string{"few", "many"} {
		f, err := im.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		h := f.(*godwarfs.File)
		buf := make([]byte, readSize)
		offs := imagetest.RandomOffsets(64, h.Size(), readSize)
		h.ReadAt(buf, 0) // load the block into the cache
		i := 0
		allocs[name] = testing.AllocsPerRun(100, func() {
			if _, err := h.ReadAt(buf, offs[i%len(offs)]); err != nil {
				t.Fatal(err)
			}
			i++
		})
	}
	if allocs["few"] != 0 || allocs["many"] != 0 {
		t.Errorf("allocations per 128 KiB read: %v, want none", allocs)
	}
}

// TestReadAtContextCancelled checks that the caller's context reaches the
// block cache: a read waiting for a block gives up when ctx ends.
func TestReadAtContextCancelled(t *testing.T) {
	_, p := chunkedImage(t)
	im := open(t, p)
	f, err := im.Open("few")
	if err != nil {
		t.Fatal(err)
	}
	h := f.(*godwarfs.File)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// The block is not cached yet, so the read must wait for it; with ctx
	// already ended it returns at once. (The load itself goes on.)
	n, err := h.ReadAtContext(ctx, make([]byte, 100), 0)
	if !errors.Is(err, context.Canceled) || n != 0 {
		t.Fatalf("ReadAtContext with ended context = %d, %v; want context.Canceled", n, err)
	}
	if _, err := h.ReadAt(make([]byte, 100), 0); err != nil {
		t.Fatalf("ReadAt after cancelled read: %v", err)
	}
}

// BenchmarkReadAtRandom reads 128 KiB at random offsets of a file with
// 1,000 chunks and of one with 100,000 chunks; the time per read should
// not depend on the chunk count.
func BenchmarkReadAtRandom(b *testing.B) {
	c, p := chunkedImage(b)
	im, err := godwarfs.Open(p, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer im.Close()
	for _, file := range c.Files {
		b.Run(fmt.Sprintf("chunks=%d", file.Chunks), func(b *testing.B) {
			f, err := im.Open(file.Name)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			h := f.(*godwarfs.File)
			buf := make([]byte, readSize)
			offs := imagetest.RandomOffsets(1024, h.Size(), readSize)
			h.ReadAt(buf, 0)
			b.SetBytes(readSize)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := h.ReadAt(buf, offs[i%len(offs)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// TestZeroOptionsFindImage checks that the zero Options search for an
// image behind a header, as the tools do, and ExactOffset does not.
func TestZeroOptionsFindImage(t *testing.T) {
	_, p := chunkedImage(t)
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	header := []byte("#!/bin/sh\nexit 0\n")
	withHeader := append(append([]byte(nil), header...), raw...)
	r := bytes.NewReader(withHeader)
	for _, tc := range []struct {
		name string
		opts *godwarfs.Options
		ok   bool
	}{
		{"nil", nil, true},
		{"zero", &godwarfs.Options{}, true},
		{"exact", &godwarfs.Options{ImageOffset: int64(len(header))}, true},
		{"exact-zero", &godwarfs.Options{ExactOffset: true}, false},
		{"wrong", &godwarfs.Options{ImageOffset: 3}, false},
	} {
		im, err := godwarfs.OpenReaderAt(r, r.Size(), "with-header", tc.opts)
		if (err == nil) != tc.ok {
			t.Errorf("%s: OpenReaderAt error %v, want success %v", tc.name, err, tc.ok)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "with-header: ") {
				t.Errorf("%s: error %q does not name the image", tc.name, err)
			}
			continue
		}
		if fi, err := im.Stat("many"); err != nil || fi.Size() != imagetest.ManyChunks<<10 {
			t.Errorf("%s: stat many = %v, %v", tc.name, fi, err)
		}
		im.Close()
	}
}

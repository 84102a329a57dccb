package source

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"

	"github.com/godwarfs/godwarfs/block"
)

// memFetcher serves an object from memory, counting range requests.
type memFetcher struct {
	data []byte
	gets atomic.Int64
}

func (m *memFetcher) Name() string { return "mem" }
func (m *memFetcher) Key() string  { return "mem" }
func (m *memFetcher) Stat(context.Context) (Version, error) {
	return Version{Size: int64(len(m.data)), ETag: `"1"`}, nil
}
func (m *memFetcher) Get(_ context.Context, p []byte, off int64, _ Version, got *atomic.Int64) error {
	m.gets.Add(1)
	if off < 0 || off > int64(len(m.data)) || int64(len(p)) > int64(len(m.data))-off {
		return fmt.Errorf("range %d+%d outside the %d-byte object", off, len(p), len(m.data))
	}
	got.Add(int64(copy(p, m.data[off:])))
	return nil
}
func (m *memFetcher) Close() {}

// fuzzImage is a v2.5 image of n small blocks with a section index,
// behind a prefix.
func fuzzImage(n int, prefix string) []byte {
	var b bytes.Buffer
	w := block.NewWriter(&b, block.WriterOptions{Header: []byte(prefix)})
	for i := range n {
		w.WriteSection(block.SectionBlock, block.CompNone, bytes.Repeat([]byte{byte('a' + i)}, 100+i*50))
	}
	w.WriteSection(block.SectionMetadataSchema, block.CompNone, []byte("schema"))
	w.WriteSection(block.SectionMetadata, block.CompNone, []byte("metadata"))
	w.Close()
	return b.Bytes()
}

// FuzzRemoteIndex opens arbitrary bytes as a remote object, with a tail
// of arbitrary size: whatever the section index at its end claims (it
// steers the header prefetch and how reads are widened), every read
// must return exactly the object's bytes, and no request may fall
// outside the object.
func FuzzRemoteIndex(f *testing.F) {
	for _, prefix := range []string{"", "#!/bin/sh\nexit 0\n"} {
		for _, n := range []int{0, 3} {
			img := fuzzImage(n, prefix)
			f.Add(img, uint16(len(img)))
			f.Add(img, uint16(200))
			f.Add(img, uint16(64))
		}
	}
	// Index entries out of order, and pointing past the object.
	img := fuzzImage(3, "")
	last := binary.LittleEndian.Uint64(img[len(img)-8:])
	idx := int(last & (1<<48 - 1))
	bad := bytes.Clone(img)
	binary.LittleEndian.PutUint64(bad[idx+64+8:], 1<<47)
	f.Add(bad, uint16(100))
	f.Fuzz(func(t *testing.T, data []byte, tail uint16) {
		if len(data) > 8<<10 {
			return // larger objects add reads, not new paths
		}
		m := &memFetcher{data: data}
		src, err := openRemote(context.Background(), m, Options{TailSize: int64(tail), Attempts: 1, MemCache: 1 << 20})
		if err != nil {
			if !errors.Is(err, ErrFetch) {
				t.Fatalf("open failed with %v", err)
			}
			t.Fatalf("a request outside the object: %v", err)
		}
		defer src.Close()
		// Whole, then in pieces of a header's size and of an odd size.
		for _, step := range []int{len(data), 64, 37} {
			if step == 0 {
				continue
			}
			for off := 0; off < len(data); off += step {
				p := make([]byte, step)
				n, err := src.ReadAt(p, int64(off))
				want := min(step, len(data)-off)
				if n != want || (err != nil && !(err == io.EOF && off+step > len(data))) {
					t.Fatalf("ReadAt(%d bytes at %d) = %d, %v; want %d", step, off, n, err, want)
				}
				if !bytes.Equal(p[:n], data[off:off+want]) {
					t.Fatalf("ReadAt(%d bytes at %d) returned other bytes than the object's", step, off)
				}
			}
		}
		if n, err := src.ReadAt(make([]byte, 1), int64(len(data))); n != 0 || err != io.EOF {
			t.Fatalf("read at the end: %d, %v", n, err)
		}
	})
}

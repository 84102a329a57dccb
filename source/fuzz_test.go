package source

import (
	"encoding/binary"
	"testing"

	"github.com/zeebo/xxh3"
)

// FuzzDiskCacheEntry feeds arbitrary bytes to the disk cache entry check:
// only an entry with the right header and checksum may pass.
func FuzzDiskCacheEntry(f *testing.F) {
	d := &diskCache{}
	copy(d.idHash[:], "0123456789abcdef0123456789abcdef")
	good := func(off int64, data []byte) []byte {
		h := make([]byte, cacheHdrSize)
		copy(h, cacheMagic)
		copy(h[8:], d.idHash[:])
		binary.LittleEndian.PutUint64(h[40:], uint64(off))
		binary.LittleEndian.PutUint64(h[48:], uint64(len(data)))
		binary.LittleEndian.PutUint64(h[56:], xxh3.Hash(data))
		return append(h, data...)
	}
	f.Add(good(7, []byte("hello")), int64(7), int64(5))
	f.Add(good(0, nil), int64(0), int64(0))
	f.Add([]byte("GDWCACH1"), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, b []byte, off, n int64) {
		if err := d.check(b, off, n); err != nil {
			return
		}
		data := b[cacheHdrSize:]
		if int64(len(data)) != n || xxh3.Hash(data) != binary.LittleEndian.Uint64(b[56:]) || string(b[:8]) != cacheMagic {
			t.Fatalf("accepted a bad entry for %d+%d", off, n)
		}
	})
}

package source

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/zeebo/xxh3"
)

func FuzzParseContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-0/1", "bytes 5-9/10", "bytes 0-99/*", "bytes */10", "bytes 9-5/10", "bytes -1-2/3", "bits 0-1/2", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		s, e, total, err := parseContentRange(v)
		if err != nil {
			return
		}
		if s < 0 || e < s || (total != -1 && total <= e) {
			t.Fatalf("%q parsed to %d-%d/%d", v, s, e, total)
		}
		// What parses must print back to an equivalent header.
		want := fmt.Sprintf("bytes %d-%d/%d", s, e, total)
		if total == -1 {
			want = fmt.Sprintf("bytes %d-%d/*", s, e)
		}
		s2, e2, t2, err := parseContentRange(want)
		if err != nil || s2 != s || e2 != e || t2 != total {
			t.Fatalf("%q -> %q does not round-trip", v, want)
		}
	})
}

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

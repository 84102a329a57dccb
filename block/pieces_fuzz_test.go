package block

import (
	"bytes"
	"errors"
	"testing"

	"github.com/godwarfs/godwarfs/block/internal/xzfmt"
)

// FuzzXZPieces feeds payloads to the xz index reader and the piece
// decoder: they must not panic, a layout they accept must lie within the
// payload and the limit, and the pieces of an intact stream must decode to
// what the whole-payload decoder makes of it.
func FuzzXZPieces(f *testing.F) {
	src := bytes.Repeat([]byte("godwarfs pieces 0123456789 "), 700)
	for _, chunk := range []int{4096, 8192, 0} {
		s, err := xzfmt.WriteBlocks(src, chunk, 1<<16, nil, nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(s)
	}
	s, err := xzfmt.WriteBlocks(src[:9000], 4096, 1<<16, nil, xzfmt.ByName("x86"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(s)
	const limit = 1 << 20
	f.Fuzz(func(t *testing.T, payload []byte) {
		read := func(b []byte, off int64) error {
			if off < 0 || off+int64(len(b)) > int64(len(payload)) {
				t.Fatalf("read of %d bytes at %d outside the payload of %d", len(b), off, len(payload))
			}
			copy(b, payload[off:])
			return nil
		}
		p, err := piecesOf(int64(len(payload)), read, limit)
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("error %v is not one of the package's kinds", err)
		}
		if err != nil || p == nil {
			return
		}
		if p.Size() > limit {
			t.Fatalf("pieces of %d bytes beyond the limit", p.Size())
		}
		var joined []byte
		ok := true
		for i := range p.Len() {
			start, end := p.Range(i)
			if start > end || p.Find(start) != i && start != end {
				t.Fatalf("piece %d: range [%d, %d), found as piece %d", i, start, end, p.Find(start))
			}
			b := p.blocks[i]
			if b.offset < 0 || int64(b.offset)+p.Stored(i) > int64(len(payload)) {
				t.Fatalf("piece %d at %d+%d outside the payload of %d", i, b.offset, p.Stored(i), len(payload))
			}
			raw := payload[b.offset : int64(b.offset)+p.Stored(i)]
			data, err := p.decode(raw, i, func(n int) ([]byte, error) { return make([]byte, n), nil })
			if err != nil {
				ok = false
				continue
			}
			if int64(len(data)) != end-start {
				t.Fatalf("piece %d decoded to %d bytes, index says %d", i, len(data), end-start)
			}
			joined = append(joined, data...)
		}
		if whole, err := Decompress(CompLZMA, payload, limit); ok && err == nil && !bytes.Equal(whole, joined) {
			t.Fatal("pieces differ from the whole payload decoded")
		}
	})
}

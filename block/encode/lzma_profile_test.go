package encode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"github.com/godwarfs/godwarfs/block/internal/codectest"
	"math"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/block"
)

func TestWordStructured(t *testing.T) {
	table := make([]byte, 0, 256<<10)
	for i := range uint32(64 << 10) {
		table = binary.LittleEndian.AppendUint32(table, i*2654435761>>12)
	}
	pcm := make([]byte, 0, 256<<10)
	for i := range 128 << 10 {
		pcm = binary.LittleEndian.AppendUint16(pcm, uint16(int16(9000*math.Sin(float64(i)/37))))
	}
	for _, tc := range []struct {
		name string
		src  []byte
		want bool
	}{
		{"Go source", goSource(t), false},
		{"random bytes", codectest.RandomBytes(1<<20, 3), false},
		{"executable", codectest.ExecutableBytes(t, 1<<20), true},
		{"uint32 table", table, true},
		{"16-bit PCM", pcm, true},
		{"under 64 KiB", goSource(t)[:60<<10], true},
		{"empty", nil, true},
	} {
		if got := wordStructured(tc.src); got != tc.want {
			t.Errorf("%s (%d bytes): wordStructured %v, want %v", tc.name, len(tc.src), got, tc.want)
		}
	}
}

func TestLZMAProfile(t *testing.T) {
	text, exe := goSource(t), codectest.ExecutableBytes(t, 1<<20)
	for _, tc := range []struct {
		name                  string
		src                   []byte
		pb, level, nice       int
		wantPB, wantNiceLeast int
	}{
		{"text, level 9", text, lzmaAutoPB, 9, 0, 0, lzmaTextNice},
		{"text, level 6", text, lzmaAutoPB, 6, 0, 0, lzmaTextNice},
		{"text, level 5", text, lzmaAutoPB, 5, 0, 0, 0},
		{"text, nice set", text, lzmaAutoPB, 9, 32, 0, 0},
		{"text, pb set", text, 2, 9, 0, 2, 0},
		{"executable", exe, lzmaAutoPB, 9, 0, 2, 0},
		{"executable, pb set", exe, 0, 9, 0, 0, 0},
	} {
		pb, nice := lzmaProfile(tc.src, tc.pb, tc.level, tc.nice)
		if pb != tc.wantPB || nice != tc.wantNiceLeast {
			t.Errorf("%s: pb %d, least nice %d; want %d, %d", tc.name, pb, nice, tc.wantPB, tc.wantNiceLeast)
		}
	}
}

// TestLZMAPBStreams: both encoders write the profile's pb into the stream
// (the first LZMA2 chunk's properties byte), and what they write reads back.
func TestLZMAPBStreams(t *testing.T) {
	text, exe := goSource(t), codectest.ExecutableBytes(t, 1<<20)
	ctors := []struct {
		name string
		new  func(string) (Compressor, error)
	}{{"build", NewCompressor}, {"purego", NewPureGoCompressor}}
	for _, ctor := range ctors {
		for _, tc := range []struct {
			spec string
			src  []byte
			pb   int
		}{
			{"lzma:level=6", text, 0}, {"lzma:level=6:pb=2", text, 2}, {"lzma:level=6:pb=auto", text, 0},
			{"lzma:level=6", exe, 2}, {"lzma:level=6:pb=4", exe, 4}, {"lzma:level=6:binary=x86", exe, 2},
		} {
			c, err := ctor.new(tc.spec)
			if err != nil {
				t.Fatalf("%s %s: %v", ctor.name, tc.spec, err)
			}
			out, err := c.Compress(tc.src)
			if err != nil {
				t.Fatalf("%s %s: %v", ctor.name, tc.spec, err)
			}
			if pb, err := firstLZMA2PB(out); err != nil || pb != tc.pb {
				t.Errorf("%s %s: pb %d (%v), want %d", ctor.name, tc.spec, pb, err, tc.pb)
			}
			back, err := block.Decompress(block.CompLZMA, out, int64(len(tc.src)))
			if err != nil || !bytes.Equal(back, tc.src) {
				t.Errorf("%s %s: read back: %v", ctor.name, tc.spec, err)
			}
		}
	}
}

func TestLZMAPBOption(t *testing.T) {
	for _, spec := range []string{"lzma:pb=5", "lzma:pb=-1", "lzma:pb=two"} {
		for _, ctor := range []func(string) (Compressor, error){NewCompressor, NewPureGoCompressor} {
			if _, err := ctor(spec); err == nil || !strings.Contains(err.Error(), "pb") {
				t.Errorf("%s: %v, want an error naming pb", spec, err)
			}
		}
	}
}

// firstLZMA2PB reads pb from the properties byte of the first LZMA2 chunk
// of a one-block .xz stream: after the 12-byte stream header and the block
// header come the chunk's control byte, two sizes of two bytes each, and
// the properties byte (pb*5 + lp)*9 + lc.
func firstLZMA2PB(xzStream []byte) (int, error) {
	if len(xzStream) < 13 {
		return 0, errors.New("truncated stream")
	}
	at := 12 + (int(xzStream[12])+1)*4
	if len(xzStream) < at+6 || xzStream[at] < 0xE0 {
		return 0, errors.New("no LZMA2 chunk with properties where the block starts")
	}
	return int(xzStream[at+5]) / 45, nil
}

package lz4hc_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pierrec/lz4/v4"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/block/internal/codectest"
	"github.com/godwarfs/godwarfs/block/internal/lz4hc"
)

type input struct {
	name string
	data []byte
}

// inputs are the round-trip cases; several are built so that the
// encoder meets a boundary of the format.
func inputs(t testing.TB) []input {
	var in []input
	add := func(name string, b []byte) { in = append(in, input{name, b}) }
	add("empty", []byte{})
	for n := 1; n <= 20; n++ {
		add(fmt.Sprintf("random-%d", n), codectest.RandomBytes(n, uint64(n)))
		add(fmt.Sprintf("zeros-%d", n), make([]byte, n))
		add(fmt.Sprintf("abc-%d", n), []byte(strings.Repeat("abc", 7)[:n]))
	}
	add("zeros-1M", make([]byte, 1<<20))
	add("random-1M", codectest.RandomBytes(1<<20, 1))
	add("text-repeat", []byte(strings.Repeat("the quick brown fox jumps over the lazy dog; ", 5000)))
	run := append(bytes.Repeat([]byte{'x'}, 200_000), "and then text after the run of x"...)
	add("run-200k", append(run, run...))
	add("runs-mixed", mixedRuns())
	add("offset-65535", atDistance(65535))
	add("offset-65536", atDistance(65536))
	add("text-2M", mixedText(t, 2<<20))
	return in
}

// atDistance is random data in which a 1000-byte piece recurs d bytes
// after its first copy, and nowhere else.
func atDistance(d int) []byte {
	b := codectest.RandomBytes(d+2000, 7)
	copy(b[d:], b[:1000])
	return b
}

// mixedRuns has runs of one byte value, of many lengths, between text,
// for the encoder's shortcut through runs.
func mixedRuns() []byte {
	var b []byte
	for i := range 300 {
		b = append(b, bytes.Repeat([]byte{byte(i % 3)}, (i*37)%700+1)...)
		b = append(b, fmt.Sprintf("record %d ends here;", i%17)...)
	}
	return b
}

// encode compresses with a bound-sized buffer and checks the block.
func encode(t testing.TB, e *lz4hc.Encoder, src []byte) ([]byte, blockStats) {
	t.Helper()
	dst := make([]byte, lz4hc.CompressBound(len(src)))
	n, err := e.CompressBlock(src, dst)
	if err != nil {
		t.Fatalf("CompressBlock(%d bytes): %v", len(src), err)
	}
	out, st, err := checkBlock(dst[:n], len(src))
	if err != nil {
		t.Fatalf("invalid block for %d bytes: %v", len(src), err)
	}
	if !bytes.Equal(out, src) {
		t.Fatalf("block of %d bytes decodes to other bytes", len(src))
	}
	return dst[:n], st
}

// decodeBoth decodes a block with pierrec's decoder and through the block
// package as a size-prefixed LZ4 section payload.
func decodeBoth(t testing.TB, b []byte, src []byte) {
	t.Helper()
	if len(src) > 0 {
		out := make([]byte, len(src))
		k, err := lz4.UncompressBlock(b, out)
		if err != nil || !bytes.Equal(out[:k], src) {
			t.Fatalf("lz4.UncompressBlock: %d bytes, %v; want the %d input bytes", k, err, len(src))
		}
	}
	payload := binary.LittleEndian.AppendUint32(nil, uint32(len(src)))
	payload = append(payload, b...)
	out, err := block.Decompress(block.CompLZ4, payload, int64(len(src)))
	if err != nil || !bytes.Equal(out, src) {
		t.Fatalf("block.Decompress: %d bytes, %v; want the %d input bytes", len(out), err, len(src))
	}
}

func TestRoundTrip(t *testing.T) {
	e := lz4hc.NewEncoder(9)
	for _, in := range inputs(t) {
		t.Run(in.name, func(t *testing.T) {
			b, _ := encode(t, e, in.data)
			decodeBoth(t, b, in.data)
		})
	}
}

func TestLevels(t *testing.T) {
	src := mixedText(t, 256<<10)
	prev := 0
	for _, level := range []int{-1, 0, 1, 2, 3, 5, 8, 9, 10, 12} {
		b, _ := encode(t, lz4hc.NewEncoder(level), src)
		decodeBoth(t, b, src)
		if level >= 3 && level <= 9 && prev > 0 && len(b) > prev*1005/1000 {
			t.Errorf("level %d: %d bytes, more than the previous level's %d", level, len(b), prev)
		}
		if level >= 3 {
			prev = len(b)
		}
	}
}

// TestBoundaries checks what the boundary inputs must compress to.
func TestBoundaries(t *testing.T) {
	e := lz4hc.NewEncoder(9)
	_, st := encode(t, e, atDistance(65535))
	if st.maxOffset != 65535 {
		t.Errorf("offset-65535: longest offset %d, want the repeat at 65535", st.maxOffset)
	}
	_, st = encode(t, e, atDistance(65536))
	if st.maxOffset > 65535 || st.sequences > 3 {
		t.Errorf("offset-65536: %d sequences, longest offset %d; want no match to the repeat", st.sequences, st.maxOffset)
	}
	b, _ := encode(t, e, make([]byte, 1<<20))
	if len(b) > (1<<20)/255+32 {
		t.Errorf("1 MiB of zeros: %d bytes", len(b))
	}
	for n := 0; n < 13; n++ {
		if _, st := encode(t, e, make([]byte, n)); st.sequences != 0 {
			t.Errorf("%d bytes: %d sequences, want literals only", n, st.sequences)
		}
	}
}

// TestReuse checks that an encoder's output does not depend on what it
// encoded before.
func TestReuse(t *testing.T) {
	in := inputs(t)
	fresh := make([][]byte, len(in))
	for i, x := range in {
		fresh[i], _ = encode(t, lz4hc.NewEncoder(9), x.data)
	}
	e := lz4hc.NewEncoder(9)
	for k := range 2 {
		for i := range in {
			j := i
			if k == 1 {
				j = len(in) - 1 - i
			}
			if b, _ := encode(t, e, in[j].data); !bytes.Equal(b, fresh[j]) {
				t.Errorf("%s: reused encoder wrote another block", in[j].name)
			}
		}
	}
}

// TestShortBuffer checks that a dst too small for the block is reported,
// and that nothing past it is written.
func TestShortBuffer(t *testing.T) {
	e := lz4hc.NewEncoder(9)
	for _, in := range inputs(t) {
		want, _ := encode(t, e, in.data)
		sizes := []int{0, 1, len(want) / 2, len(want) - 1, len(want)}
		for k := 1; k < len(want) && k < 64; k++ {
			sizes = append(sizes, k)
		}
		for _, k := range sizes {
			if k < 0 {
				continue
			}
			buf := bytes.Repeat([]byte{0xA5}, k+64)
			n, err := e.CompressBlock(in.data, buf[:k])
			switch {
			case k < len(want) && !errors.Is(err, lz4hc.ErrShortBuffer):
				t.Fatalf("%s: %d of %d bytes: n=%d, err=%v; want ErrShortBuffer", in.name, k, len(want), n, err)
			case k == len(want) && (err != nil || !bytes.Equal(buf[:n], want)):
				t.Fatalf("%s: exact room: n=%d, err=%v", in.name, n, err)
			}
			for _, c := range buf[k:] {
				if c != 0xA5 {
					t.Fatalf("%s: dst of %d bytes: wrote past its end", in.name, k)
				}
			}
		}
	}
}

// TestSmallerThanPierrec checks that the encoder is no worse than the
// pure-Go LZ4HC it replaces, on text at the level the mkdwarfs presets
// use.
func TestSmallerThanPierrec(t *testing.T) {
	src := mixedText(t, 2<<20)
	ours, _ := encode(t, lz4hc.NewEncoder(9), src)
	dst := make([]byte, lz4.CompressBlockBound(len(src)))
	c := lz4.CompressorHC{Level: lz4.Level9}
	n, err := c.CompressBlock(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes: ours %d, pierrec %d (%.4f)", len(src), len(ours), n, float64(len(ours))/float64(n))
	if len(ours) > n {
		t.Errorf("ours %d bytes, pierrec's HC %d", len(ours), n)
	}
}

func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("hello hello hello hello hello"), uint16(10))
	f.Add(make([]byte, 300), uint16(5))
	f.Add(mixedRuns()[:2000], uint16(100))
	f.Add([]byte{}, uint16(0))
	e := lz4hc.NewEncoder(9)
	f.Fuzz(func(t *testing.T, src []byte, short uint16) {
		want, _ := encode(t, e, src)
		decodeBoth(t, want, src)
		k := min(int(short), len(want))
		buf := bytes.Repeat([]byte{0x5A}, k+16)
		n, err := e.CompressBlock(src, buf[:k])
		if k < len(want) && !errors.Is(err, lz4hc.ErrShortBuffer) {
			t.Fatalf("%d of %d bytes: n=%d, err=%v; want ErrShortBuffer", k, len(want), n, err)
		}
		if k == len(want) && (err != nil || !bytes.Equal(buf[:n], want)) {
			t.Fatalf("exact room: n=%d, err=%v", n, err)
		}
		if !bytes.Equal(buf[k:], bytes.Repeat([]byte{0x5A}, 16)) {
			t.Fatalf("dst of %d bytes: wrote past its end", k)
		}
	})
}

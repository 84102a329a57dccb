package lzma2

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/block/internal/codectest"
	"github.com/ulikunitz/xz/lzma"
)

// inputs are the data the tests compress: empty, tiny, text, long runs,
// incompressible bytes and machine code.
func inputs(t testing.TB) map[string][]byte {
	var text strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&text, "line %d of a file that repeats itself with small changes %d\n", i, i%97)
	}
	return map[string][]byte{
		"empty":  {},
		"one":    {'x'},
		"text":   []byte(text.String()),
		"zeros":  make([]byte, 300000),
		"random": codectest.RandomBytes(200000, 1),
		"exe":    codectest.ExecutableBytes(t, 256<<10),
	}
}

// encodeGo compresses data as LZMA2 with ulikunitz/xz.
func encodeGo(t testing.TB, data []byte, props lzma.Properties, dict int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := lzma.Writer2Config{Properties: &props, DictCap: dict}.NewWriter2(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecodeGoEncoder(t *testing.T) {
	for name, data := range inputs(t) {
		for _, props := range []lzma.Properties{{LC: 3, LP: 0, PB: 2}, {LC: 0, LP: 2, PB: 0}, {LC: 4, LP: 0, PB: 4}, {LC: 1, LP: 3, PB: 1}} {
			for _, dict := range []int{1 << 16, 1 << 20} {
				t.Run(fmt.Sprintf("%s/lc%d-lp%d-pb%d/dict%d", name, props.LC, props.LP, props.PB, dict), func(t *testing.T) {
					enc := encodeGo(t, data, props, dict)
					trail := append(append([]byte{}, enc...), "after"...)
					got, n, err := Decode(nil, trail, dict, len(data))
					if err != nil {
						t.Fatal(err)
					}
					if n != len(enc) {
						t.Errorf("took %d bytes of the stream's %d", n, len(enc))
					}
					if !bytes.Equal(got, data) {
						t.Fatal("decoded data differs")
					}
				})
			}
		}
	}
}

// TestDecodeLiblzma decodes raw LZMA2 streams of the xz command (liblzma),
// whose encoder also writes uncompressed chunks and resets state between
// chunks, at a fast and a slow preset.
func TestDecodeLiblzma(t *testing.T) {
	xz, err := exec.LookPath("xz")
	if err != nil {
		t.Skip("no xz command to encode with liblzma")
	}
	for name, data := range inputs(t) {
		for _, preset := range []string{"0", "9e"} {
			t.Run(name+"/"+preset, func(t *testing.T) {
				cmd := exec.Command(xz, "--format=raw", "--lzma2=preset="+preset+",dict=1MiB", "-c")
				cmd.Stdin = bytes.NewReader(data)
				enc, err := cmd.Output()
				if err != nil {
					t.Fatal(err)
				}
				got, n, err := Decode(make([]byte, 10), enc, 1<<20, len(data))
				if err != nil {
					t.Fatal(err)
				}
				if n != len(enc) || !bytes.Equal(got, data) {
					t.Fatalf("took %d of %d bytes; data equal: %v", n, len(enc), bytes.Equal(got, data))
				}
			})
		}
	}
}

// TestDecodeCorrupt: damaged streams are refused with ErrCorrupt, never
// decoded into wrong data without an error, and never panic.
func TestDecodeCorrupt(t *testing.T) {
	data := inputs(t)["text"]
	enc := encodeGo(t, data, lzma.Properties{LC: 3, LP: 0, PB: 2}, 1<<20)
	cases := map[string][]byte{
		"empty":          {},
		"no end marker":  enc[:len(enc)-1],
		"truncated":      enc[:len(enc)/2],
		"bad control":    append([]byte{0x03}, enc[1:]...),
		"no dict reset":  append([]byte{0x80}, enc[1:]...),
		"no properties":  {0x01, 0x00, 0x00, 'x', 0xA0, 0x00, 0x00, 0x00, 0x05, 0, 0, 0, 0, 0, 0x00},
		"big properties": append(append([]byte{}, enc[:5]...), append([]byte{225}, enc[6:]...)...),
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			if _, _, err := Decode(nil, src, 1<<20, len(data)); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v, want ErrCorrupt", err)
			}
		})
	}
	t.Run("size", func(t *testing.T) {
		for _, size := range []int{len(data) - 1, len(data) + 1} {
			if _, _, err := Decode(nil, enc, 1<<20, size); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("size %d: error %v, want ErrCorrupt", size, err)
			}
		}
	})
	t.Run("dictionary", func(t *testing.T) {
		// Matches reach further back than a 4 KiB dictionary allows.
		if _, _, err := Decode(nil, enc, 1<<12, len(data)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "dictionary") {
			t.Fatalf("error %v, want a distance beyond the dictionary", err)
		}
	})
	t.Run("flipped bits", func(t *testing.T) {
		for i := 6; i < len(enc)-1; i += 7 {
			bad := append([]byte{}, enc...)
			bad[i] ^= 0x10
			got, _, err := Decode(nil, bad, 1<<20, len(data))
			if err == nil && !bytes.Equal(got, data) {
				t.Fatalf("byte %d flipped: wrong data without an error", i)
			}
		}
	})
}

// FuzzDecode compares the decoder with ulikunitz/xz's on arbitrary
// streams: both accept the stream with the same data, or this one refuses
// it with ErrCorrupt.
func FuzzDecode(f *testing.F) {
	for _, data := range inputs(f) {
		if len(data) <= 1<<16 {
			f.Add(encodeGo(f, data, lzma.Properties{LC: 3, LP: 0, PB: 2}, 1<<16), len(data))
		}
	}
	f.Add(encodeGo(f, []byte("abcabcabcabcabd"), lzma.Properties{LC: 0, LP: 1, PB: 1}, 1<<12), 15)
	f.Fuzz(func(t *testing.T, src []byte, size int) {
		if size < 0 || size > 1<<20 {
			return
		}
		got, n, err := Decode(nil, src, 1<<16, size)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error without ErrCorrupt: %v", err)
			}
			return
		}
		r, err := lzma.Reader2Config{DictCap: 1 << 16}.NewReader2(bytes.NewReader(src[:n]))
		if err != nil {
			t.Fatalf("accepted what ulikunitz/xz refuses: %v", err)
		}
		want, err := io.ReadAll(r)
		if err != nil {
			// ulikunitz/xz is stricter on some streams liblzma accepts;
			// the data it produced must still agree.
			if !bytes.HasPrefix(got, want) {
				t.Fatalf("data differs from ulikunitz/xz's before its error %v", err)
			}
			return
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("decoded %d bytes, ulikunitz/xz %d; equal: %v", len(got), len(want), bytes.Equal(got, want))
		}
	})
}

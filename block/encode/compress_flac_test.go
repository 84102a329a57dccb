package encode

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/block"
)

// pcmData makes n sample frames of a tone plus noise in layout l.
func pcmData(l block.PCMLayout, n int, rng *rand.Rand) []byte {
	var samples []int64
	amp := math.Ldexp(1, l.BitsPerSample-1) - 1
	for i := 0; i < n; i++ {
		for c := 0; c < l.Channels; c++ {
			v := 0.6*math.Sin(float64(i)*0.03*float64(c+1)) + 0.002*rng.NormFloat64()
			samples = append(samples, int64(math.Round(max(-1, min(1, v))*amp)))
		}
	}
	return packReference(samples, l)
}

func flacCompressors(t *testing.T, spec string) map[string]PCMCompressor {
	t.Helper()
	m := map[string]PCMCompressor{}
	for name, ctor := range map[string]func(string) (Compressor, error){"build": NewCompressor, "purego": NewPureGoCompressor} {
		c, err := ctor(spec)
		if err != nil {
			t.Fatal(err)
		}
		pc, ok := c.(PCMCompressor)
		if !ok || c.Compression() != block.CompFLAC {
			t.Fatalf("%s: %T is no FLAC PCMCompressor", spec, c)
		}
		m[name] = pc
	}
	return m
}

// TestFLACCompressRoundTrip encodes PCM of many layouts with the build's
// encoder (libFLAC in cgo builds) and the pure-Go one and decodes it back.
func TestFLACCompressRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	layouts := []block.PCMLayout{
		{Channels: 2, BitsPerSample: 16, BytesPerSample: 2, Signed: true},
		{Channels: 1, BitsPerSample: 8, BytesPerSample: 1},
		{Channels: 6, BitsPerSample: 24, BytesPerSample: 3, Signed: true, BigEndian: true},
		{Channels: 2, BitsPerSample: 24, BytesPerSample: 4, Signed: true, LSBPadding: true},
		{Channels: 2, BitsPerSample: 20, BytesPerSample: 3, Signed: true},
		{Channels: 2, BitsPerSample: 32, BytesPerSample: 4, Signed: true},
		{Channels: 3, BitsPerSample: 32, BytesPerSample: 4, BigEndian: true},
		{Channels: 8, BitsPerSample: 12, BytesPerSample: 2, LSBPadding: true, BigEndian: true},
		// the decoder's own loops: 16-bit stereo little endian, and
		// the same unsigned or padded, and mono
		{Channels: 2, BitsPerSample: 16, BytesPerSample: 2},
		{Channels: 2, BitsPerSample: 12, BytesPerSample: 2, Signed: true, LSBPadding: true},
		{Channels: 2, BitsPerSample: 12, BytesPerSample: 2},
		{Channels: 1, BitsPerSample: 16, BytesPerSample: 2, Signed: true},
		{Channels: 1, BitsPerSample: 24, BytesPerSample: 3, Signed: true},
		{Channels: 2, BitsPerSample: 16, BytesPerSample: 2, Signed: true, BigEndian: true},
	}
	for _, spec := range []string{"flac", "flac:level=0", "flac:level=8:exhaustive"} {
		for name, c := range flacCompressors(t, spec) {
			for _, l := range layouts {
				src := pcmData(l, 5000+rng.IntN(300), rng)
				out, err := c.CompressPCM(src, l)
				if err != nil {
					t.Fatalf("%s %s %+v: %v", spec, name, l, err)
				}
				got, err := block.Decompress(block.CompFLAC, out, int64(len(src)))
				if err != nil || !bytes.Equal(got, src) {
					t.Fatalf("%s %s %+v: round trip failed: %v", spec, name, l, err)
				}
				if gl, err := block.FLACLayout(out); err != nil || gl != l {
					t.Errorf("%s %s: layout %+v %v, want %+v", spec, name, gl, err, l)
				}
				if l.BitsPerSample == 16 && len(out) > len(src)*3/4 {
					t.Errorf("%s %s: %d bytes of 16-bit tone compress only to %d", spec, name, len(src), len(out))
				}
			}
		}
	}
}

// TestUnpackPCMFullWidth checks the loops for signed samples that fill
// their bytes against the sign extension spelled out, on random bytes (all
// of which are valid samples), reusing one buffer as the compressor does.
func TestUnpackPCMFullWidth(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var buf []int32
	for _, l := range []block.PCMLayout{
		{Channels: 2, BitsPerSample: 16, BytesPerSample: 2, Signed: true},
		{Channels: 1, BitsPerSample: 16, BytesPerSample: 2, Signed: true, BigEndian: true},
		{Channels: 6, BitsPerSample: 24, BytesPerSample: 3, Signed: true},
		{Channels: 2, BitsPerSample: 24, BytesPerSample: 3, Signed: true, BigEndian: true},
	} {
		nb := l.BytesPerSample
		src := make([]byte, nb*l.Channels*(100+rng.IntN(50)))
		for i := range src {
			src[i] = byte(rng.Uint32())
		}
		got, err := unpackPCM(buf, src, l)
		if err != nil {
			t.Fatalf("%+v: %v", l, err)
		}
		if len(got) != len(src)/nb {
			t.Fatalf("%+v: %d samples, want %d", l, len(got), len(src)/nb)
		}
		for i, v := range got {
			var u uint32
			for k := range nb {
				b := src[i*nb+k]
				if l.BigEndian {
					u = u<<8 | uint32(b)
				} else {
					u |= uint32(b) << (8 * k)
				}
			}
			want := int32(u<<(32-8*nb)) >> (32 - 8*nb)
			if v != want {
				t.Fatalf("%+v: sample %d is %d, want %d", l, i, v, want)
			}
		}
		buf = got
	}
}

func TestFLACCompressErrors(t *testing.T) {
	l16 := block.PCMLayout{Channels: 2, BitsPerSample: 16, BytesPerSample: 2, Signed: true}
	for name, c := range flacCompressors(t, "flac:level=3") {
		if _, err := c.Compress([]byte{1, 2, 3, 4}); !errors.Is(err, block.ErrUnsupported) || !strings.Contains(err.Error(), "PCM") {
			t.Errorf("%s: plain Compress: %v", name, err)
		}
		for _, tc := range []struct {
			name string
			src  []byte
			l    block.PCMLayout
			want string
		}{
			{"partial frame", []byte{1, 2, 3}, l16, "whole 4-byte sample frames"},
			{"nine channels", make([]byte, 18), block.PCMLayout{Channels: 9, BitsPerSample: 16, BytesPerSample: 2}, "9 channels"},
			{"4 bits", make([]byte, 2), block.PCMLayout{Channels: 1, BitsPerSample: 4, BytesPerSample: 1}, "4 bits per sample"},
			{"low pad bits set", []byte{0x01, 0x10}, block.PCMLayout{Channels: 1, BitsPerSample: 12, BytesPerSample: 2, Signed: true, LSBPadding: true}, "not a 12-bit sample"},
			{"high pad bits set", []byte{0x00, 0x20}, block.PCMLayout{Channels: 1, BitsPerSample: 12, BytesPerSample: 2, Signed: true}, "not a 12-bit sample"},
			{"unsigned high bits", []byte{0x00, 0x10}, block.PCMLayout{Channels: 1, BitsPerSample: 12, BytesPerSample: 2}, "not a 12-bit sample"},
		} {
			if _, err := c.CompressPCM(tc.src, tc.l); !errors.Is(err, block.ErrUnsupported) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s %s: got %v, want %q", name, tc.name, err, tc.want)
			}
		}
		// Sign-extended high pad bits are a valid 12-bit sample.
		if _, err := c.CompressPCM([]byte{0x00, 0xf8}, block.PCMLayout{Channels: 1, BitsPerSample: 12, BytesPerSample: 2, Signed: true}); err != nil {
			t.Errorf("%s: sign-extended sample refused: %v", name, err)
		}
	}
	for _, spec := range []string{"flac:level=9", "flac:foo"} {
		if _, err := NewCompressor(spec); !errors.Is(err, block.ErrUnsupported) {
			t.Errorf("%s: %v", spec, err)
		}
	}
}

func TestForPCM(t *testing.T) {
	l := block.PCMLayout{Channels: 2, BitsPerSample: 16, BytesPerSample: 2, Signed: true}
	src := pcmData(l, 3000, rand.New(rand.NewPCG(7, 8)))
	fc, _ := NewCompressor("flac:level=5")
	c := ForPCM(fc, l)
	comp, out, err := CompressSection(c, src)
	if err != nil || comp != block.CompFLAC {
		t.Fatalf("CompressSection: %v %v", comp, err)
	}
	if back, err := block.Decompress(comp, out, int64(len(src))); err != nil || !bytes.Equal(back, src) {
		t.Errorf("round trip: %v", err)
	}
	zc, _ := NewCompressor("zstd:level=1")
	if ForPCM(zc, l) != zc {
		t.Errorf("ForPCM changed a zstd compressor")
	}
}

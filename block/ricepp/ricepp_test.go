package ricepp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func params(bs, nc, u int, big bool) Params {
	return Params{BlockSize: bs, Components: nc, BytesPerSample: 2, UnusedLSBs: u, BigEndian: big}
}

// samples stores values (already shifted up by the unused bits) in the
// byte order of p.
func samples(p Params, vals ...uint16) []byte {
	out := make([]byte, 2*len(vals))
	for i, v := range vals {
		if p.BigEndian {
			binary.BigEndian.PutUint16(out[2*i:], v)
		} else {
			binary.LittleEndian.PutUint16(out[2*i:], v)
		}
	}
	return out
}

// TestKnownStreams checks streams worked out by hand from the format
// description in the package comment.
func TestKnownStreams(t *testing.T) {
	for _, tc := range []struct {
		name   string
		p      Params
		vals   []uint16
		stream []byte
	}{
		// 16-bit initial value 5, then selector 0 (all equal).
		{"constant", params(4, 1, 0, false), []uint16{5, 5, 5, 5}, []byte{0x05, 0x00, 0x00}},
		// Initial 0; mapped differences 0,2,4; k=1 (costs of k=0 and k=1
		// tie at 9 bits, so k0+1 wins): selector 2 = 0100, then 1 0, 01 0,
		// 001 0.
		{"rice", params(8, 1, 0, false), []uint16{0, 1, 3}, []byte{0x00, 0x00, 0x92, 0x08}},
		// The same in big endian with 2 unused bits: the coded values are
		// the same, only the sample bytes differ.
		{"rice-big-lsb", params(8, 1, 2, true), []uint16{0, 4, 12}, []byte{0x00, 0x00, 0x92, 0x08}},
		// Differences too large to Rice code: selector 15 and the samples
		// as stored (little-endian 16-bit fields of the memory bytes).
		// 0x8000 maps to d = 0xffff, which only k = 14 codes cheaply.
		{"verbatim", params(2, 1, 0, true), []uint16{0x0000, 0x8000}, []byte{0x00, 0x00, 0x0f, 0x00, 0x00, 0x08, 0x00}},
		// Two components: initial values 1 and 2, each block constant.
		{"two-components", params(4, 2, 0, false), []uint16{1, 2, 1, 2}, []byte{0x01, 0x00, 0x02, 0x00, 0x00}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := samples(tc.p, tc.vals...)
			got, err := Encode(nil, raw, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.stream) {
				t.Errorf("Encode = % x, want % x", got, tc.stream)
			}
			dec, err := Decode(make([]byte, len(raw)), tc.stream, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(dec, raw) {
				t.Errorf("Decode = % x, want % x", dec, raw)
			}
		})
	}
}

// image returns n samples of a FITS-like picture: a smooth background,
// a few bright spots and Gaussian noise of the given sigma, stored in the
// byte order of p with p.UnusedLSBs zero bits.
func image(r *rand.Rand, n int, p Params, sigma float64) []byte {
	vals := make([]uint16, n)
	bits := 16 - p.UnusedLSBs
	top := float64(uint32(1)<<bits - 1)
	width := 1024
	for i := range vals {
		x, y := float64(i%width), float64(i/width)
		v := 1000 + 300*math.Sin(x/90)*math.Cos(y/70) + r.NormFloat64()*sigma
		if i%9973 < 4 {
			v += 20000
		}
		v = max(0, min(v, top))
		vals[i] = uint16(v) << p.UnusedLSBs
	}
	return samples(p, vals...)
}

func roundTrip(t testing.TB, raw []byte, p Params) []byte {
	enc, err := Encode(nil, raw, p)
	if err != nil {
		t.Fatalf("encode %+v: %v", p, err)
	}
	if len(enc) > MaxEncodedLen(len(raw), p) {
		t.Fatalf("encoded %d bytes, bound %d", len(enc), MaxEncodedLen(len(raw), p))
	}
	dec, err := Decode(make([]byte, len(raw)), enc, p)
	if err != nil {
		t.Fatalf("decode %+v: %v", p, err)
	}
	if !bytes.Equal(dec, raw) {
		t.Fatalf("round trip %+v differs", p)
	}
	return enc
}

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	noise := make([]byte, 20000)
	for i := range noise {
		noise[i] = byte(r.Uint32())
	}
	for _, bs := range []int{1, 7, 16, 128, 512} {
		for _, nc := range []int{1, 2} {
			for _, u := range []int{0, 3, 8, 15} {
				for _, big := range []bool{false, true} {
					p := params(bs, nc, u, big)
					for _, sigma := range []float64{0, 2, 40, 5000} {
						roundTrip(t, image(r, 10000, p, sigma), p)
					}
					if u == 0 {
						roundTrip(t, noise, p)
					}
					roundTrip(t, samples(p, 0, 0xffff<<u, 0, 0xffff<<u), p)
					for n := 1; n < 6; n++ {
						roundTrip(t, image(r, n*nc, p, 10), p)
					}
				}
			}
		}
	}
}

// TestLongUnary covers unary runs longer than the reader's 64-bit window.
func TestLongUnary(t *testing.T) {
	p := params(16, 1, 0, false)
	vals := make([]uint16, 64)
	for i := range vals {
		vals[i] = 0
		if i == 40 {
			vals[i] = 900 // a long run among tiny differences
		}
	}
	raw := samples(p, vals...)
	enc := roundTrip(t, raw, p)
	if enc[2]&0x0f == selRaw {
		t.Fatalf("block went verbatim; the test needs a Rice-coded block")
	}
}

func TestDecodeErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	p := params(32, 1, 0, true)
	raw := image(r, 3000, p, 30)
	enc := roundTrip(t, raw, p)
	for cut := range len(enc) {
		if _, err := Decode(make([]byte, len(raw)), enc[:cut], p); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d of %d: err %v", cut, len(enc), err)
		}
	}
	if _, err := Decode(make([]byte, len(raw)), append(enc[:len(enc):len(enc)], 0), p); !errors.Is(err, ErrCorrupt) {
		t.Errorf("trailing byte: err %v", err)
	}
	if _, err := Decode(make([]byte, len(raw)+2), enc, p); !errors.Is(err, ErrCorrupt) {
		t.Errorf("output larger than the stream: err %v", err)
	}
	if _, err := Decode(make([]byte, 3), enc, p); !errors.Is(err, ErrCorrupt) {
		t.Errorf("odd output size: err %v", err)
	}
	if _, err := Decode(nil, []byte{1}, p); !errors.Is(err, ErrCorrupt) {
		t.Errorf("stream for no samples: err %v", err)
	}
	// A stream of zero bits is one endless unary run.
	zeros := make([]byte, 100)
	zeros[2] = 1 // selector 1: Rice with k=0
	if _, err := Decode(make([]byte, 64), zeros, params(32, 1, 0, false)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("endless unary run: err %v", err)
	}
	for _, bad := range []Params{
		params(0, 1, 0, false), params(513, 1, 0, false), params(16, 0, 0, false),
		params(16, 3, 0, false), params(16, 1, 16, false), params(16, 1, -1, false),
		{BlockSize: 16, Components: 1, BytesPerSample: 1},
	} {
		if _, err := Decode(make([]byte, 4), enc, bad); !errors.Is(err, ErrParams) {
			t.Errorf("Decode %+v: err %v", bad, err)
		}
		if _, err := Encode(nil, raw, bad); !errors.Is(err, ErrParams) {
			t.Errorf("Encode %+v: err %v", bad, err)
		}
	}
	if _, err := Encode(nil, raw[:5], p); !errors.Is(err, ErrParams) {
		t.Errorf("odd input: err %v", err)
	}
}

func TestEncodeAppends(t *testing.T) {
	p := params(16, 1, 0, false)
	raw := samples(p, 1, 2, 3, 4)
	want, _ := Encode(nil, raw, p)
	got, err := Encode([]byte("prefix"), raw, p)
	if err != nil || string(got[:6]) != "prefix" || !bytes.Equal(got[6:], want) {
		t.Errorf("Encode with prefix = %q, %v", got, err)
	}
}

// paramsFrom derives valid-ish Params from fuzzer bytes; invalid ones are
// fine too (they must give an error).
func paramsFrom(b0, b1 byte) Params {
	return Params{
		BlockSize:      int(b0)*2 + 1,
		Components:     int(b1&1) + 1,
		BytesPerSample: 2,
		UnusedLSBs:     int(b1>>1) & 15,
		BigEndian:      b1&0x80 != 0,
	}
}

func FuzzDecode(f *testing.F) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, p := range []Params{params(16, 1, 0, true), params(128, 2, 4, false), params(3, 1, 2, true)} {
		raw := image(r, 100, p, 20)
		enc, _ := Encode(nil, raw, p)
		f.Add(enc, uint16(len(raw)), byte(p.BlockSize/2), byte(p.Components-1)|byte(p.UnusedLSBs<<1))
	}
	f.Fuzz(func(t *testing.T, src []byte, size uint16, b0, b1 byte) {
		p := paramsFrom(b0, b1)
		dst := make([]byte, size)
		out, err := Decode(dst, src, p)
		if err == nil && len(out) != int(size) {
			t.Fatalf("decoded %d bytes, want %d", len(out), size)
		}
		if err == nil {
			// What decodes must re-encode to a stream that decodes to the
			// same samples (the stream itself may differ: verbatim blocks
			// keep unused bits, non-zero padding is ignored).
			enc, err := Encode(nil, out, p)
			if err != nil {
				t.Fatal(err)
			}
			if p.UnusedLSBs == 0 {
				again, err := Decode(make([]byte, len(out)), enc, p)
				if err != nil || !bytes.Equal(again, out) {
					t.Fatalf("re-encoded stream decodes differently: %v", err)
				}
			}
		}
	})
}

func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 0, 3, 0, 4}, byte(8), byte(0))
	f.Add(bytes.Repeat([]byte{0x12, 0x34, 0x56, 0x78}, 100), byte(60), byte(0x81))
	f.Fuzz(func(t *testing.T, raw []byte, b0, b1 byte) {
		p := paramsFrom(b0, b1)
		raw = raw[:len(raw)/p.frameSize()*p.frameSize()]
		// Clear the unused bits: the codec drops them by design.
		for i := 0; i < len(raw); i += 2 {
			hi, lo := i, i+1
			if !p.BigEndian {
				hi, lo = i+1, i
			}
			v := (uint16(raw[hi])<<8 | uint16(raw[lo])) >> p.UnusedLSBs << p.UnusedLSBs
			raw[hi], raw[lo] = byte(v>>8), byte(v)
		}
		if p.Validate() != nil {
			return
		}
		roundTrip(t, raw, p)
	})
}

func benchImage(p Params) []byte {
	return image(rand.New(rand.NewPCG(9, 10)), 2<<20, p, 12)
}

func BenchmarkDecode(b *testing.B) {
	for _, tc := range []struct {
		name string
		p    Params
	}{
		{"fits16-bs128", params(128, 1, 0, true)},
		{"fits16-lsb4", params(128, 1, 4, true)},
		{"2comp-le", params(128, 2, 0, false)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			raw := benchImage(tc.p)
			enc, err := Encode(nil, raw, tc.p)
			if err != nil {
				b.Fatal(err)
			}
			dst := make([]byte, len(raw))
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, err := Decode(dst, enc, tc.p); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(enc))/float64(len(raw)), "ratio")
		})
	}
}

func BenchmarkEncode(b *testing.B) {
	p := params(128, 1, 0, true)
	raw := benchImage(p)
	dst := make([]byte, 0, MaxEncodedLen(len(raw), p))
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := Encode(dst, raw, p); err != nil {
			b.Fatal(err)
		}
	}
}

package block

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/block/ricepp"
)

var fitsParams = ricepp.Params{BlockSize: 128, Components: 1, BytesPerSample: 2, BigEndian: true}

// ramp returns n big-endian 16-bit samples of a gentle slope.
func ramp(n int, shift int) []byte {
	out := make([]byte, 2*n)
	for i := range n {
		binary.BigEndian.PutUint16(out[2*i:], uint16(1000+i/3+i%5)<<shift)
	}
	return out
}

func TestRiceppHeader(t *testing.T) {
	// The header as the reference writes it for block_size=128, one
	// component, 2 bytes per sample, no unused bits, big endian, version 1.
	ref := []byte{0x15, 0x80, 0x02, 0x14, 0x02, 0x13, 0x02, 0x13, 0x00, 0x11, 0x14, 0x02, 0x00}
	if got := appendRiceppHeader(nil, fitsParams); !bytes.Equal(got, ref) {
		t.Errorf("appendRiceppHeader = % x, want % x", got, ref)
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want riceppHeader
		n    int
		err  string
	}{
		{"reference", ref, riceppHeader{fitsParams, 1}, len(ref), ""},
		// Long-form field ids, an unknown i64 (id 9) and binary (id 10),
		// then field 2 after them.
		{"long-form", []byte{0x05, 0x02, 0x40, 0x86, 0x08, 0x18, 0x02, 'a', 'b', 0x04, 0x04, 0x04, 0x00},
			riceppHeader{ricepp.Params{BlockSize: 32, Components: 2}, 0}, 13, ""},
		{"newer version", []byte{0x64, 0x04, 0x00}, riceppHeader{}, 0, "ricepp version 2"},
		{"no stop", []byte{0x15, 0x80, 0x02}, riceppHeader{}, 0, "no stop field"},
		{"truncated varint", []byte{0x15, 0x80}, riceppHeader{}, 0, "truncated varint"},
		{"truncated byte", []byte{0x13}, riceppHeader{}, 0, "truncated field 1"},
		{"list", []byte{0x19, 0x00}, riceppHeader{}, 0, "unexpected type 9"},
		{"long binary", []byte{0x18, 0x10, 0x00}, riceppHeader{}, 0, "runs past"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, n, err := parseRiceppHeader(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || h != tc.want || n != tc.n {
				t.Errorf("got %+v %d %v, want %+v %d", h, n, err, tc.want, tc.n)
			}
		})
	}
}

func TestRiceppDecompress(t *testing.T) {
	for _, p := range []ricepp.Params{
		fitsParams,
		{BlockSize: 16, Components: 2, BytesPerSample: 2, UnusedLSBs: 3, BigEndian: false},
		{BlockSize: 512, Components: 1, BytesPerSample: 2, UnusedLSBs: 8, BigEndian: true},
	} {
		data := ramp(5000, p.UnusedLSBs)
		if !p.BigEndian {
			for i := 0; i < len(data); i += 2 {
				data[i], data[i+1] = data[i+1], data[i]
			}
		}
		payload, err := testRicepp(data, p)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := UncompressedSize(CompRICEPP, payload); err != nil || n != int64(len(data)) {
			t.Errorf("%+v: UncompressedSize = %d, %v", p, n, err)
		}
		out, err := Decompress(CompRICEPP, payload, 1<<20)
		if err != nil || !bytes.Equal(out, data) {
			t.Fatalf("%+v: Decompress: %v", p, err)
		}
		buf := make([]byte, 0, len(data))
		out, err = DecompressInto(CompRICEPP, payload, buf, 1<<20)
		if err != nil || !bytes.Equal(out, data) || &out[0] != &buf[:1][0] {
			t.Fatalf("%+v: DecompressInto did not decode into dst: %v", p, err)
		}
		if _, err := Decompress(CompRICEPP, payload, int64(len(data)-1)); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%+v: over limit: %v", p, err)
		}
	}
}

func TestRiceppCorrupt(t *testing.T) {
	data := ramp(1000, 0)
	payload, _ := testRicepp(data, fitsParams)
	hdr := len(payload) - len(must(ricepp.Encode(nil, data, fitsParams)))
	for _, tc := range []struct {
		name string
		edit func([]byte) []byte
		want string
	}{
		{"truncated stream", func(b []byte) []byte { return b[:len(b)-3] }, "stream ends early"},
		{"trailing bytes", func(b []byte) []byte { return append(b, 0, 0) }, "2 trailing bytes"},
		{"huge size", func(b []byte) []byte {
			return append(appendUvarint(nil, 1<<40), b[2:]...)
		}, "impossible"},
		{"odd size", func(b []byte) []byte {
			return append(appendUvarint(nil, 1999), b[2:]...)
		}, "not a multiple"},
		{"block size 0", func(b []byte) []byte {
			b[hdr-13+2] = 0 // varint 0x80 0x02 becomes 0x80 0x00: 0
			return b
		}, "block size 0"},
		{"3 bytes per sample", func(b []byte) []byte {
			b[hdr-13+6] = 3
			return b
		}, "3 bytes per sample"},
		{"no size", func([]byte) []byte { return []byte{0x80} }, "varint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.edit(bytes.Clone(payload))
			_, err := Decompress(CompRICEPP, b, 1<<50)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want ErrCorrupt naming %q", err, tc.want)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func FuzzRiceppPayload(f *testing.F) {
	f.Add(must(testRicepp(ramp(300, 0), fitsParams)))
	f.Add(must(testRicepp(ramp(77*2, 2), ricepp.Params{BlockSize: 16, Components: 2, BytesPerSample: 2, UnusedLSBs: 2})))
	if seed := referenceRiceppSeed(); seed != nil {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		n, _ := UncompressedSize(CompRICEPP, payload)
		out, err := Decompress(CompRICEPP, payload, 1<<20)
		if err == nil && int64(len(out)) != n {
			t.Fatalf("decoded %d bytes, declared %d", len(out), n)
		}
	})
}

func TestRiceppSizeFromHeader(t *testing.T) {
	data := ramp(20000, 0)
	payload := must(testRicepp(data, fitsParams))
	n, ok, err := SizeFromHeader(CompRICEPP, payload[:64])
	if err != nil || !ok || n != int64(len(data)) {
		t.Errorf("SizeFromHeader = %d, %v, %v", n, ok, err)
	}
	if _, err := UncompressedSize(CompRICEPP, []byte{0x10, 0x15}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("truncated header: %v", err)
	}
}

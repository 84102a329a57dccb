package xzfmt

import (
	"bytes"
	"github.com/godwarfs/godwarfs/block/internal/codectest"
	"testing"
)

// TestBCJRoundTrip: decoding undoes encoding for every filter, start
// offset and length, and encoding does change the data.
func TestBCJRoundTrip(t *testing.T) {
	exe := codectest.ExecutableBytes(t, 1<<20)
	for _, f := range Filters {
		for _, in := range []struct {
			name string
			data []byte
		}{{"random", codectest.RandomBytes(1<<18, 1)}, {"executable", exe}, {"short", []byte{0xE8, 1, 2, 3, 0, 0xEB}}} {
			for _, start := range []uint32{0, 16, 0xFFFFFFF0, 0x1235} {
				start &^= f.Align - 1
				for _, cut := range []int{0, 1, 3} {
					src := in.data[:max(len(in.data)-cut, 0)]
					buf := bytes.Clone(src)
					f.Encode(buf, start)
					changed := !bytes.Equal(buf, src)
					f.Decode(buf, start)
					if !bytes.Equal(buf, src) {
						t.Fatalf("%s %s start %#x cut %d: decode(encode(x)) != x", f.Name, in.name, start, cut)
					}
					if in.name == "random" && !changed {
						t.Errorf("%s: encoding 256 KiB of random bytes changed nothing", f.Name)
					}
				}
			}
		}
	}
}

func TestBCJNames(t *testing.T) {
	for _, name := range Writable {
		if f := ByName(name); f == nil || ByID(f.ID) != f {
			t.Errorf("binary=%s has no filter", name)
		}
	}
	if ByName("arm64") != nil || ByName("riscv") != nil {
		t.Error("binary= accepts a filter the reference does not write")
	}
}

// FuzzBCJ: for any data and aligned start offset, every filter's decoder
// undoes its encoder.
func FuzzBCJ(f *testing.F) {
	f.Add([]byte{0xE8, 0, 0, 0, 0, 0xE8, 0xFF, 0xFF, 0xFF, 0xFF}, uint32(0))
	f.Add(codectest.RandomBytes(256, 9), uint32(12))
	f.Fuzz(func(t *testing.T, data []byte, start uint32) {
		for _, flt := range Filters {
			start := start &^ (flt.Align - 1)
			buf := bytes.Clone(data)
			flt.Encode(buf, start)
			flt.Decode(buf, start)
			if !bytes.Equal(buf, data) {
				t.Fatalf("%s start %#x: round trip differs", flt.Name, start)
			}
		}
	})
}

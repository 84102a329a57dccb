package flac

import (
	"errors"
	"io"
	"os"
	"testing"
)

func FuzzDecoder(f *testing.F) {
	for _, name := range []string{"testdata/tiny16.flac", "testdata/s12-mono.flac"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := NewDecoder(data)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error without ErrFormat: %v", err)
			}
			return
		}
		for frames := 0; ; frames++ {
			start := d.Offset()
			fr, err := d.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				if !errors.Is(err, ErrFormat) {
					t.Fatalf("error without ErrFormat: %v", err)
				}
				return
			}
			if d.Offset() <= start {
				t.Fatalf("frame at %d made no progress", start)
			}
			if fr.BlockSize < 1 || fr.BlockSize > MaxBlockSize || len(fr.Samples) < 1 || len(fr.Samples) > MaxChannels {
				t.Fatalf("frame of %d samples x %d channels", fr.BlockSize, len(fr.Samples))
			}
		}
	})
}

// FuzzEncodeRoundTrip encodes arbitrary samples and checks that they
// decode back unchanged.
func FuzzEncodeRoundTrip(f *testing.F) {
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09"), uint8(2), uint8(16), uint8(5))
	f.Add([]byte("\xff\xff\xff\x7f\x00\x00\x00\x80"), uint8(1), uint8(32), uint8(8))
	f.Fuzz(func(t *testing.T, data []byte, ch, bps, level uint8) {
		channels := int(ch%MaxChannels) + 1
		b := int(bps%29) + 4
		nb := (b + 7) / 8
		n := len(data) / nb / channels * channels
		if n == 0 {
			return
		}
		samples := make([]int32, n)
		for i := range samples {
			var u uint32
			for k := 0; k < nb; k++ {
				u |= uint32(data[i*nb+k]) << (8 * k)
			}
			sh := 32 - uint(b)
			samples[i] = int32(u<<sh) >> sh // sign-extend the low b bits
		}
		o := LevelOptions(int(level % 9))
		o.BlockSize = max(16, (int(level)*37)%300)
		o.Exhaustive = level&0x80 != 0
		stream, err := Encode(samples, channels, b, o)
		if err != nil {
			t.Fatal(err)
		}
		d, err := NewDecoder(stream)
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		for {
			fr, err := d.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for s := 0; s < fr.BlockSize; s++ {
				for c := range fr.Samples {
					if fr.Samples[c][s] != int64(samples[i]) {
						t.Fatalf("sample %d: %d, want %d", i, fr.Samples[c][s], samples[i])
					}
					i++
				}
			}
		}
		if i != n {
			t.Fatalf("%d samples back, want %d", i, n)
		}
	})
}

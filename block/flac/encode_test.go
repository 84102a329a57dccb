package flac

import (
	"io"
	"math"
	"math/rand/v2"
	"testing"
)

// testSignal makes n interleaved frames of a signal kind that steers the
// encoder into one of its codings.
func testSignal(kind string, n, channels, bps int, rng *rand.Rand) []int32 {
	out := make([]int32, n*channels)
	amp := math.Ldexp(1, bps-1) - 1
	for i := 0; i < n; i++ {
		for c := 0; c < channels; c++ {
			var v float64
			switch kind {
			case "sine":
				v = 0.7*math.Sin(float64(i)*(0.01+0.003*float64(c))) + 0.01*rng.NormFloat64()
			case "noise":
				v = rng.Float64()*2 - 1
			case "silence":
				v = 0
			case "square": // full scale, alternating: verbatim or escaped partitions
				v = 1
				if (i/3)%2 == 0 {
					v = -1
				}
			case "spikes": // mostly quiet with rare full-scale samples
				v = 0.001 * rng.NormFloat64()
				if i%97 == 5 {
					v = 1
				}
			case "correlated": // right = left plus a little: side channels pay
				v = 0.8*math.Sin(float64(i)*0.02) + 0.001*float64(c)*rng.NormFloat64()
			case "wasted": // low 3 bits always zero
				v = 0.5 * math.Sin(float64(i)*0.05)
			}
			s := int64(math.Round(max(-1, min(1, v)) * amp))
			if kind == "square" && v < 0 {
				s = -1 << (bps - 1)
			}
			if kind == "wasted" {
				s &^= 7
			}
			out[i*channels+c] = int32(s)
		}
	}
	return out
}

func TestEncodeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, kind := range []string{"sine", "noise", "silence", "square", "spikes", "correlated", "wasted"} {
		for _, bps := range []int{8, 12, 16, 20, 24, 32, 10} {
			for _, ch := range []int{1, 2, 6} {
				for _, level := range []int{0, 5, 8} {
					n := 3000 + rng.IntN(3000)
					samples := testSignal(kind, n, ch, bps, rng)
					o := LevelOptions(level)
					switch level {
					case 5:
						o.BlockSize = 192 + rng.IntN(2) // odd block sizes too
					case 0:
						o.BlockSize = 16 // over 128 frames: multi-byte frame numbers
					case 8:
						o.Exhaustive = kind == "sine" || kind == "correlated"
					}
					stream, err := Encode(samples, ch, bps, o)
					if err != nil {
						t.Fatalf("%s %d bits %d ch level %d: %v", kind, bps, ch, level, err)
					}
					got, info := decodeInterleaved(t, stream)
					if len(got) != len(samples) {
						t.Fatalf("%s %d bits %d ch: %d samples back, want %d", kind, bps, ch, len(got), len(samples))
					}
					for i := range got {
						if got[i] != int64(samples[i]) {
							t.Fatalf("%s %d bits %d ch level %d: sample %d is %d, want %d", kind, bps, ch, level, i, got[i], samples[i])
						}
					}
					if _, sum, _, _ := decodeAll(stream); sum != info.MD5 {
						t.Errorf("%s %d bits %d ch: STREAMINFO MD5 is wrong", kind, bps, ch)
					}
				}
			}
		}
	}
}

func decodeInterleaved(t *testing.T, stream []byte) ([]int64, StreamInfo) {
	t.Helper()
	d, err := NewDecoder(stream)
	if err != nil {
		t.Fatal(err)
	}
	var all []int64
	for {
		f, err := d.Next()
		if err == io.EOF {
			return all, d.Info()
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < f.BlockSize; i++ {
			for _, ch := range f.Samples {
				all = append(all, ch[i])
			}
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []int32
		ch, bps int
		o       EncoderOptions
	}{
		{"nine channels", make([]int32, 9), 9, 16, EncoderOptions{}},
		{"three bits", make([]int32, 2), 1, 3, EncoderOptions{}},
		{"partial frame", make([]int32, 3), 2, 16, EncoderOptions{}},
		{"out of range", []int32{128}, 1, 8, EncoderOptions{}},
		{"tiny blocks", make([]int32, 2), 1, 8, EncoderOptions{BlockSize: 8}},
	} {
		if _, err := Encode(tc.samples, tc.ch, tc.bps, tc.o); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

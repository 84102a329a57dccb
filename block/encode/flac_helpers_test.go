package encode

import (
	"fmt"
	"os"
	"testing"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/block/internal/codectest"
)

// The helpers of package block's FLAC tests that need block's types.

// packReference lays samples out as the reference's PCM transformer does,
// with plain integer arithmetic (independent of pcmPacker).
func packReference(samples []int64, l block.PCMLayout) []byte {
	var out []byte
	for _, v := range samples {
		if !l.Signed {
			v += 1 << (l.BitsPerSample - 1)
		}
		if l.LSBPadding {
			v *= 1 << (8*l.BytesPerSample - l.BitsPerSample)
		}
		u := uint64(v) & (1<<(8*l.BytesPerSample) - 1)
		b := make([]byte, l.BytesPerSample)
		for i := range b {
			sh := 8 * i
			if l.BigEndian {
				sh = 8 * (l.BytesPerSample - 1 - i)
			}
			b[i] = byte(u >> sh)
		}
		out = append(out, b...)
	}
	return out
}

// BenchmarkFLACEncode encodes the samples of $GODWARFS_FLAC_BENCH (a
// 16-bit stereo libFLAC stream) with the build's and the pure-Go encoder;
// speeds are PCM bytes.
func BenchmarkFLACEncode(b *testing.B) {
	path := os.Getenv("GODWARFS_FLAC_BENCH")
	if path == "" {
		b.Skip("GODWARFS_FLAC_BENCH not set (a 16-bit stereo .flac file)")
	}
	stream, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	info, samples := codectest.Samples(b, stream)
	l := block.PCMLayout{Channels: info.Channels, BitsPerSample: info.BitsPerSample, BytesPerSample: (info.BitsPerSample + 7) / 8, Signed: true}
	pcm := packReference(samples, l)
	for _, level := range []int{0, 5, 8} {
		for name, native := range map[string]bool{"build": true, "purego": false} {
			c := &flacCompressor{level: level, native: native && nativeFLAC}
			b.Run(fmt.Sprintf("encode-%s-level%d", name, level), func(b *testing.B) {
				b.SetBytes(int64(len(pcm)))
				var size int
				for b.Loop() {
					out, err := c.CompressPCM(pcm, l)
					if err != nil {
						b.Fatal(err)
					}
					size = len(out)
				}
				b.ReportMetric(float64(size)/float64(len(pcm))*100, "%size")
			})
		}
	}
}

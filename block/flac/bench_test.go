package flac

import (
	"io"
	"os"
	"testing"
)

// BenchmarkDecode decodes $GODWARFS_FLAC_BENCH (a libFLAC stream); the
// reported speed is PCM bytes out.
func BenchmarkDecode(b *testing.B) {
	path := os.Getenv("GODWARFS_FLAC_BENCH")
	if path == "" {
		b.Skip("GODWARFS_FLAC_BENCH not set")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	d, err := NewDecoder(data)
	if err != nil {
		b.Fatal(err)
	}
	info := d.Info()
	b.SetBytes(int64(info.TotalSamples) * int64(info.Channels) * int64((info.BitsPerSample+7)/8))
	for b.Loop() {
		d, _ := NewDecoder(data)
		for {
			_, err := d.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

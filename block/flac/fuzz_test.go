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

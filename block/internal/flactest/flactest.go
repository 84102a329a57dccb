// Package flactest holds the FLAC test streams of package block/flac and
// the helpers the decoder's and the encoders' tests share.
package flactest

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/godwarfs/godwarfs/block/flac"
)

// Streams returns the libFLAC-written test streams of package flac by
// file name.
func Streams(t testing.TB) map[string][]byte {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(self), "..", "..", "flac", "testdata")
	paths, _ := filepath.Glob(filepath.Join(dir, "*.flac"))
	if len(paths) == 0 {
		t.Fatalf("no streams in %s", dir)
	}
	m := make(map[string][]byte)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		m[filepath.Base(p)] = data
	}
	return m
}

// Samples decodes a stream into interleaved samples.
func Samples(t testing.TB, stream []byte) (flac.StreamInfo, []int64) {
	t.Helper()
	d, err := flac.NewDecoder(stream)
	if err != nil {
		t.Fatal(err)
	}
	var all []int64
	for {
		f, err := d.Next()
		if err == io.EOF {
			break
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
	return d.Info(), all
}

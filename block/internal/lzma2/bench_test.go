package lzma2

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"testing"

	"github.com/ulikunitz/xz/lzma"
)

// benchStream is LZMA2 data of the test binary's first 16 MiB (or of
// LZMA2_BENCH=FILE), encoded by liblzma (the xz command) at preset 9.
func benchStream(b *testing.B) ([]byte, []byte) {
	path := os.Getenv("LZMA2_BENCH")
	if path == "" {
		var err error
		if path, err = os.Executable(); err != nil {
			b.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	data = data[:min(len(data), 16<<20)]
	xz, err := exec.LookPath("xz")
	if err != nil {
		b.Skip("no xz command to encode with liblzma")
	}
	cmd := exec.Command(xz, "--format=raw", "--lzma2=preset=9,dict=64MiB", "-c")
	cmd.Stdin = bytes.NewReader(data)
	enc, err := cmd.Output()
	if err != nil {
		b.Fatal(err)
	}
	return data, enc
}

func BenchmarkDecode(b *testing.B) {
	data, enc := benchStream(b)
	out := make([]byte, len(data))
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		if _, _, err := Decode(out, enc, 64<<20, len(data)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUlikunitz(b *testing.B) {
	data, enc := benchStream(b)
	out := make([]byte, len(data))
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		r, err := lzma.Reader2Config{DictCap: 64 << 20}.NewReader2(bytes.NewReader(enc))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(r, out); err != nil {
			b.Fatal(err)
		}
	}
}

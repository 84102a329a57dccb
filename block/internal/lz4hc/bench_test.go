package lz4hc_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pierrec/lz4/v4"

	"github.com/godwarfs/godwarfs/block/internal/lz4hc"
)

// benchInputs are the files named by LZ4HC_BENCH (separated by the list
// separator), or else 2 MiB of the module's text.
func benchInputs(b *testing.B) map[string][]byte {
	m := map[string][]byte{}
	if v := os.Getenv("LZ4HC_BENCH"); v != "" {
		for _, name := range strings.Split(v, string(os.PathListSeparator)) {
			data, err := os.ReadFile(name)
			if err != nil {
				b.Fatal(err)
			}
			m[filepath.Base(name)] = data
		}
		return m
	}
	m["text"] = mixedText(b, 2<<20)
	return m
}

// BenchmarkEncode compresses each input in 2 MiB chunks, the mkdwarfs
// block size, with this encoder and with pierrec's LZ4HC.
func BenchmarkEncode(b *testing.B) {
	const chunk = 2 << 20
	for name, src := range benchInputs(b) {
		dst := make([]byte, lz4hc.CompressBound(chunk))
		each := func(b *testing.B, f func(c []byte) int) {
			b.SetBytes(int64(len(src)))
			var out int
			for b.Loop() {
				out = 0
				for p := 0; p < len(src); p += chunk {
					out += f(src[p:min(p+chunk, len(src))])
				}
			}
			b.ReportMetric(float64(out)/float64(len(src)), "ratio")
		}
		b.Run(name+"/lz4hc", func(b *testing.B) {
			e := lz4hc.NewEncoder(9)
			each(b, func(c []byte) int {
				n, err := e.CompressBlock(c, dst)
				if err != nil {
					b.Fatal(err)
				}
				return n
			})
		})
		b.Run(name+"/pierrec", func(b *testing.B) {
			e := lz4.CompressorHC{Level: lz4.Level9}
			each(b, func(c []byte) int {
				n, err := e.CompressBlock(c, dst)
				if err != nil {
					b.Fatal(err)
				}
				return n
			})
		})
	}
}

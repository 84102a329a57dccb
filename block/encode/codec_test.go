package encode

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/godwarfs/godwarfs/block"
)

var testSpecs = []string{
	"null", "zstd:level=1", "zstd:level=19", "zstd:level=22:long", "lzma:level=1", "lzma:level=9:extreme",
	"lzma:level=9:dict_size=26", "lz4", "lz4hc:level=12", "lz4hc", "brotli:quality=5", "brotli:quality=11:lgwin=22",
}

func testInputs() map[string][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 1<<20)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	var text bytes.Buffer
	for text.Len() < 1<<20 {
		text.WriteString("the quick brown fox jumps over the lazy dog ")
		text.WriteByte(byte('a' + r.IntN(26)))
	}
	return map[string][]byte{
		"empty":        {},
		"one":          {42},
		"ten":          []byte("0123456789"),
		"random-1MiB":  random,
		"text-1MiB":    text.Bytes()[:1<<20],
		"zeros-100KiB": make([]byte, 100<<10),
	}
}

// slowSpec reports encoders too slow for 1 MiB inputs in a unit test
// (brotli q11 takes seconds); they get a 128 KiB slice instead.
func slowSpec(spec string) bool {
	return strings.HasPrefix(spec, "lzma") || strings.Contains(spec, "quality=11") || strings.Contains(spec, "level=19") || strings.Contains(spec, "level=22")
}

// constructors are the ways to get a compressor: the build's own encoders
// (libzstd and liblzma in cgo builds) and the pure-Go ones.
var constructors = []struct {
	name string
	new  func(string) (Compressor, error)
}{{"build", NewCompressor}, {"purego", NewPureGoCompressor}}

func TestCompressRoundTrip(t *testing.T) {
	inputs := testInputs()
	for _, spec := range testSpecs {
		for _, ctor := range constructors {
			if ctor.name == "purego" && !strings.HasPrefix(spec, "zstd") && !strings.HasPrefix(spec, "lzma") {
				continue // the same encoder in every build
			}
			t.Run(ctor.name+"/"+spec, func(t *testing.T) {
				t.Parallel()
				testRoundTrip(t, ctor.new, spec, inputs)
			})
		}
	}
}

func testRoundTrip(t *testing.T, newc func(string) (Compressor, error), spec string, inputs map[string][]byte) {
	c, err := newc(spec)
	if err != nil {
		t.Fatalf("%s: %v", spec, err)
	}
	for name, in := range inputs {
		if slowSpec(spec) && len(in) > 128<<10 {
			in = in[:128<<10]
		}
		out, err := c.Compress(in)
		if err != nil {
			t.Fatalf("%s/%s: compress: %v", spec, name, err)
		}
		if us, err := block.UncompressedSize(c.Compression(), out); err != nil || us != int64(len(in)) {
			t.Errorf("%s/%s: UncompressedSize = %d, %v", spec, name, us, err)
		}
		got, err := block.Decompress(c.Compression(), out, int64(len(in)))
		if err != nil {
			t.Fatalf("%s/%s: decompress: %v", spec, name, err)
		}
		if !bytes.Equal(got, in) {
			t.Fatalf("%s/%s: round trip mismatch", spec, name)
		}
		if len(in) > 0 && c.Compression() != block.CompNone {
			if _, err := block.Decompress(c.Compression(), out, int64(len(in))-1); !errors.Is(err, block.ErrTooLarge) {
				t.Errorf("%s/%s: limit-1: %v", spec, name, err)
			}
		}
	}
}

func TestCompressConcurrent(t *testing.T) {
	in := testInputs()["text-1MiB"][:200<<10]
	for _, spec := range []string{"zstd:level=3", "lz4", "lz4hc:level=9", "brotli:quality=4", "lzma:level=1"} {
		c, err := NewCompressor(spec)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				out, err := c.Compress(in)
				if err != nil {
					t.Error(err)
					return
				}
				got, err := block.Decompress(c.Compression(), out, int64(len(in)))
				if err != nil || !bytes.Equal(got, in) {
					t.Errorf("%s: concurrent round trip: %v", spec, err)
				}
			})
		}
		wg.Wait()
	}
}

func TestZstdWritesContentSize(t *testing.T) {
	for _, ctor := range constructors {
		for _, spec := range []string{"zstd:level=19", "zstd:level=22:long", "zstd:level=1"} {
			c, err := ctor.new(spec)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{0, 1, 10, 255, 256, 70000, 3 << 20} {
				in := bytes.Repeat([]byte{'x', byte(n)}, n/2)
				in = append(in, make([]byte, n%2)...)
				out, _ := c.Compress(in)
				frames := [][]byte{out}
				if ct, into, _ := CompressSectionInto(c, nil, in); ct == block.CompZSTD {
					frames = append(frames, into)
				}
				for _, frame := range frames {
					size, ok, err := block.SizeFromHeader(block.CompZSTD, frame)
					if err != nil || !ok || size != int64(n) {
						t.Errorf("%s %s n=%d: content size %d (%v), %v (header % x)", ctor.name, spec, n, size, ok, err, frame[:min(len(frame), 8)])
					}
					if n == 10 && frame[4]&0x20 == 0 {
						t.Errorf("%s %s: 10-byte frame not single segment: fhd %#x", ctor.name, spec, frame[4])
					}
					if frame[4]&0x04 != 0 {
						t.Errorf("%s %s n=%d: frame has a checksum", ctor.name, spec, n)
					}
				}
			}
		}
	}
	// A frame without content size (klauspost default for tiny inputs) is rejected.
	noFCS := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58, 0x01, 0x00, 0x00}
	if _, err := block.Decompress(block.CompZSTD, noFCS, 100); !errors.Is(err, block.ErrCorrupt) || !strings.Contains(err.Error(), "content size") {
		t.Errorf("frame without FCS: %v", err)
	}
}

func TestCompressSectionFallback(t *testing.T) {
	in := testInputs()
	for _, spec := range []string{"zstd:level=3", "lzma:level=1", "lz4", "lz4hc", "brotli:quality=5"} {
		c, _ := NewCompressor(spec)
		comp, out, err := CompressSection(c, in["random-1MiB"][:64<<10])
		if err != nil || comp != block.CompNone || len(out) != 64<<10 {
			t.Errorf("%s random: %v %d %v", spec, comp, len(out), err)
		}
		comp, out, err = CompressSection(c, in["text-1MiB"][:64<<10])
		if err != nil || comp != c.Compression() || len(out) >= 64<<10 {
			t.Errorf("%s text: %v %d %v", spec, comp, len(out), err)
		}
		if comp, _, _ := CompressSection(c, nil); comp != block.CompNone {
			t.Errorf("%s empty: %v", spec, comp)
		}
	}
}

// CompressSectionSmallest falls back to NONE as CompressSection does, and
// otherwise keeps a payload that reads back and is no larger than
// CompressSection's: the same one for compressors with nothing else to try.
func TestCompressSectionSmallest(t *testing.T) {
	in := testInputs()
	text := in["text-1MiB"]
	for _, spec := range []string{"zstd:level=3", "zstd:level=19", "lzma:level=1", "lz4", "brotli:quality=5"} {
		c, err := NewCompressor(spec)
		if err != nil {
			t.Fatal(err)
		}
		if comp, out, err := CompressSectionSmallest(c, in["random-1MiB"]); err != nil || comp != block.CompNone || !bytes.Equal(out, in["random-1MiB"]) {
			t.Errorf("%s random: %v %d %v", spec, comp, len(out), err)
		}
		_, own, err := CompressSection(c, text)
		if err != nil {
			t.Fatal(err)
		}
		comp, out, err := CompressSectionSmallest(c, text)
		if err != nil || comp != c.Compression() {
			t.Fatalf("%s text: %v %v", spec, comp, err)
		}
		if back, err := block.Decompress(comp, out, int64(len(text))); err != nil || !bytes.Equal(back, text) {
			t.Errorf("%s: the smallest payload does not read back (%v)", spec, err)
		}
		if _, ok := c.(alternated); !ok && !bytes.Equal(out, own) {
			t.Errorf("%s: nothing else to try, yet a payload other than CompressSection's", spec)
		}
		if len(out) > len(own) {
			t.Errorf("%s: %d bytes, larger than CompressSection's %d", spec, len(out), len(own))
		}
	}
}

func TestNewCompressorErrors(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"gzip", "gzip"},
		{"zstd:level=23", "level"},
		{"zstd:foo=1", "foo"},
		{"lzma:level=x", "level"},
		{"lzma:binary=mips", "binary"},
		{"brotli:lgwin=30", "lgwin"},
		{"lz4:level=3", "level"},
		{"", "empty"},
	} {
		_, err := NewCompressor(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, block.ErrUnsupported) {
			t.Errorf("NewCompressor(%q) = %v, want error naming %q", tc.spec, err, tc.want)
		}
	}
	c, err := NewCompressor("lz4hc:level=12")
	if err != nil || c.Compression() != block.CompLZ4 {
		t.Errorf("lz4hc: %v %v", c, err)
	}
}

// TestBufferReuse checks the caller-buffer variants: the output is the same
// as with fresh buffers, the storage is reused when it is big enough, and a
// buffer that is too small or absent still works.
func TestBufferReuse(t *testing.T) {
	src := bytes.Repeat([]byte("godwarfs buffer reuse "), 5000)
	for _, spec := range []string{"zstd:level=3", "lz4", "lz4hc:level=9", "lzma:level=1", "brotli:quality=1", "null"} {
		t.Run(spec, func(t *testing.T) {
			c, err := NewCompressor(spec)
			if err != nil {
				t.Fatal(err)
			}
			want, err := c.Compress(src)
			if err != nil {
				t.Fatal(err)
			}
			for _, dst := range [][]byte{nil, make([]byte, 3), make([]byte, 0, 1<<20)} {
				ct, got, err := CompressSectionInto(c, dst, src)
				if err != nil {
					t.Fatal(err)
				}
				if ct == block.CompNone {
					if c.Compression() != block.CompNone || !bytes.Equal(got, src) {
						t.Fatalf("fell back to NONE: %v", ct)
					}
					continue
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("dst cap %d: payload differs from Compress", cap(dst))
				}
				if _, ok := c.(AppendCompressor); ok && cap(dst) >= 1<<20 && &got[0] != &dst[:1][0] {
					t.Errorf("dst cap %d: storage not reused", cap(dst))
				}
				for _, out := range [][]byte{nil, make([]byte, 10), make([]byte, 0, 2*len(src))} {
					dec, err := block.DecompressInto(ct, got, out, int64(len(src)))
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(dec, src) {
						t.Fatalf("out cap %d: round trip differs", cap(out))
					}
					if (ct == block.CompZSTD || ct == block.CompLZ4 || ct == block.CompLZ4HC) && cap(out) >= len(src) && &dec[0] != &out[:1][0] {
						t.Errorf("out cap %d: storage not reused", cap(out))
					}
				}
				if _, err := block.DecompressInto(ct, got, make([]byte, 0, 2*len(src)), int64(len(src))-1); !errors.Is(err, block.ErrTooLarge) {
					t.Errorf("limit below size: %v", err)
				}
			}
		})
	}
}

// TestZstdEncodersOnDemand checks that concurrent use gets correct output
// and that a compressor used serially keeps to one encoder.
func TestZstdEncodersOnDemand(t *testing.T) {
	c, err := NewPureGoCompressor("zstd:level=5")
	if err != nil {
		t.Fatal(err)
	}
	z := c.(*zstdCompressor)
	for range 5 {
		if _, err := c.Compress([]byte("serial use")); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(z.pool(z.windowLogFor(10))); n != 1 {
		t.Errorf("serial use left %d idle encoders, want 1", n)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := bytes.Repeat([]byte{byte(i)}, 10000+i)
			out, err := c.Compress(src)
			if err != nil {
				t.Error(err)
				return
			}
			if dec, err := block.Decompress(block.CompZSTD, out, int64(len(src))); err != nil || !bytes.Equal(dec, src) {
				t.Errorf("goroutine %d: round trip failed: %v", i, err)
			}
		}()
	}
	wg.Wait()
	total := 0
	for _, c := range z.idle {
		total += len(c)
	}
	if total < 1 || total > len(z.idle)*runtime.GOMAXPROCS(0) {
		t.Errorf("%d idle encoders after concurrent use", total)
	}
}

// TestCompressSectionIntoIncompressible checks the NONE fallback of the
// buffer variant for every codec, and that lz4 then needs no buffer beyond
// the caller's.
func TestCompressSectionIntoIncompressible(t *testing.T) {
	src := make([]byte, 1<<16)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	for _, spec := range []string{"zstd:level=3", "lz4", "lz4hc:level=9", "lzma:level=1", "brotli:quality=1"} {
		c, err := NewCompressor(spec)
		if err != nil {
			t.Fatal(err)
		}
		ct, p, err := CompressSectionInto(c, make([]byte, 0, len(src)), src)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if ct != block.CompNone || !bytes.Equal(p, src) {
			t.Errorf("%s: random data stored as %v (%d bytes)", spec, ct, len(p))
		}
	}
	lc, _ := NewCompressor("lz4")
	if n := testing.AllocsPerRun(5, func() { CompressSectionInto(lc, make([]byte, 0, len(src)), src) }); n > 2 {
		t.Errorf("lz4 on random data: %.0f allocations per call", n)
	}
}

// TestCompressorSpecMessages: a bad spec names what is wrong and the valid
// range, without a trailing ": unsupported".
func TestCompressorSpecMessages(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"zstd:level=99", "zstd level 99 is out of range (valid: "},
		{"zstd:level=x", "zstd level \"x\" is not a number (valid: "},
		{"lzma:level=12", "lzma level 12 is out of range (valid: 0 to 9)"},
		{"brotli:quality=20", "brotli quality 20 is out of range (valid: 0 to 11)"},
		{"gzip", "unknown compression algorithm \"gzip\" (known: null, zstd, lzma, lz4, lz4hc, brotli, flac, ricepp)"},
		{"zstd:foo=1", "unknown zstd compression option \"foo\""},
		{"zstd:tlen=200000", "zstd tlen 200000 is out of range (valid: 0 to 131072)"},
	} {
		_, err := NewCompressor(tc.spec)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "unsupported") || !errors.Is(err, block.ErrUnsupported) {
			t.Errorf("NewCompressor(%q) = %v, want %q...", tc.spec, err, tc.want)
		}
	}
}

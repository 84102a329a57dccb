package encode

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/block"
)

// goSource is about 512 KiB of real text: the Go sources of net/http.
func goSource(t *testing.T) []byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(runtime.GOROOT(), "src", "net", "http", "*.go"))
	var buf bytes.Buffer
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		if buf.Len() >= 512<<10 {
			break
		}
	}
	if buf.Len() < 256<<10 {
		t.Skipf("skipped: only %d bytes of Go source under GOROOT %s", buf.Len(), runtime.GOROOT())
	}
	return buf.Bytes()
}

func TestAlgorithmsNameTheBuildsEncoders(t *testing.T) {
	enc := map[string]string{}
	for _, a := range Algorithms() {
		enc[a.Name] = a.Encoder
		if _, err := NewCompressor(a.Name); err != nil {
			t.Errorf("%s listed but not accepted: %v", a.Name, err)
		}
	}
	for algo, native := range map[string]bool{"zstd": nativeZstd, "lzma": nativeLZMA} {
		if got := strings.HasSuffix(enc[algo], ", cgo"); got != native {
			t.Errorf("%s encoder %q, want cgo=%v", algo, enc[algo], native)
		}
	}
}

// TestEncodersReadBackIdentically compresses real text with the build's
// encoders and the pure-Go ones; the pure-Go decoders must return the
// input from both. In cgo builds the C encoders must also do better.
func TestEncodersReadBackIdentically(t *testing.T) {
	src := goSource(t)
	for _, spec := range []string{"zstd:level=22", "zstd:level=19", "zstd:level=3", "lzma:level=9", "lzma:level=6:extreme"} {
		t.Run(spec, func(t *testing.T) {
			t.Parallel()
			size := map[string]int{}
			for _, ctor := range constructors {
				c, err := ctor.new(spec)
				if err != nil {
					t.Fatal(err)
				}
				ct, out, err := CompressSectionInto(c, nil, src)
				if err != nil || ct != c.Compression() {
					t.Fatalf("%s: %v, stored as %v", ctor.name, err, ct)
				}
				got, err := block.Decompress(ct, out, int64(len(src)))
				if err != nil || !bytes.Equal(got, src) {
					t.Fatalf("%s: read back differs: %v", ctor.name, err)
				}
				size[ctor.name] = len(out)
			}
			t.Logf("%d bytes: build %d, pure Go %d", len(src), size["build"], size["purego"])
			native := nativeZstd
			if strings.HasPrefix(spec, "lzma") {
				native = nativeLZMA
			}
			if native && size["build"] > size["purego"] {
				t.Errorf("C encoder %d bytes, larger than pure Go's %d", size["build"], size["purego"])
			}
		})
	}
}

func TestEncoderOptions(t *testing.T) {
	for _, tc := range []struct {
		spec   string
		native bool // accepted only with the C encoder
		want   string
	}{
		{"lzma:mode=fast", true, ""},
		{"lzma:mf=bt2:depth=8", true, ""},
		{"lzma:nice=273", true, ""},
		{"lzma:mf=bogus", true, "mf"},
		{"lzma:nice=1", true, "nice"},
		{"lzma:nice=0:depth=4294967295", true, ""},
		{"lzma:depth=4294967296", false, "depth"},
		{"lzma:binary=x86", false, ""},
		{"lzma:level=9:extreme:binary=armthumb", false, ""},
		{"lzma:binary=mips", false, "binary"},
		{"lzma:binary=arm64", false, "binary"},
		{"zstd:level=-5", false, ""},
		{"zstd:level=-131072", false, ""},
		{"zstd:level=0", false, ""},
		{"zstd:level=-200000", false, "level"},
		{"zstd:level=22:long", false, ""},
		{"zstd:level=22:tlen=512", false, ""},
		{"zstd:level=22:tlen=0", false, ""},
		{"zstd:level=22:tlen=131073", false, "tlen"},
		{"zstd:tlen=-1", false, "tlen"},
	} {
		_, err := NewCompressor(tc.spec)
		_, pureErr := NewPureGoCompressor(tc.spec)
		native := nativeZstd
		if strings.HasPrefix(tc.spec, "lzma") {
			native = nativeLZMA
		}
		for _, r := range []struct {
			name   string
			err    error
			native bool
		}{{"build", err, native}, {"purego", pureErr, false}} {
			ok := tc.want == "" && (!tc.native || r.native)
			switch {
			case ok && r.err != nil:
				t.Errorf("%s %q: %v", r.name, tc.spec, r.err)
			case !ok && (r.err == nil || !errors.Is(r.err, block.ErrUnsupported)):
				t.Errorf("%s %q: accepted, want an error", r.name, tc.spec)
			case !ok && tc.want != "" && !strings.Contains(r.err.Error(), tc.want):
				t.Errorf("%s %q: %v, want it to name %q", r.name, tc.spec, r.err, tc.want)
			}
		}
	}
}

// TestZstdNegativeLevels: libzstd's negative levels are faster and weaker
// than level 1; the Go encoder, which has nothing below its level 1,
// writes exactly its level 1 for them.
func TestZstdNegativeLevels(t *testing.T) {
	src := goSource(t)
	size := map[string]map[string]int{}
	var pure1 []byte
	for _, ctor := range constructors {
		size[ctor.name] = map[string]int{}
		for _, lvl := range []string{"1", "-1", "-5", "-131072"} {
			c, err := ctor.new("zstd:level=" + lvl)
			if err != nil {
				t.Fatalf("%s level %s: %v", ctor.name, lvl, err)
			}
			out, err := c.Compress(src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := block.Decompress(block.CompZSTD, out, int64(len(src)))
			if err != nil || !bytes.Equal(got, src) {
				t.Fatalf("%s level %s: read back: %v", ctor.name, lvl, err)
			}
			size[ctor.name][lvl] = len(out)
			if ctor.name == "purego" || !nativeZstd {
				if lvl == "1" {
					pure1 = out
				} else if !bytes.Equal(out, pure1) {
					t.Errorf("%s level %s: not the Go encoder's level 1 output", ctor.name, lvl)
				}
			}
		}
	}
	t.Logf("%d bytes of Go source: %v", len(src), size)
	if b := size["build"]; nativeZstd && !(b["1"] < b["-1"] && b["-1"] < b["-5"] && b["-5"] < b["-131072"]) {
		t.Errorf("libzstd sizes do not grow as the level drops: %v", b)
	}
}

// TestLargeOutputsAppend covers the native encoders' outputs above
// scratchMin-sized inputs, which are written outside the Go heap and
// copied out: the frame must land after what dst held, and an input that
// does not shrink must still be reported as such.
func TestLargeOutputsAppend(t *testing.T) {
	text := bytes.Repeat(goSource(t), 4) // about 2 MiB
	noise := make([]byte, 2<<20)
	x := uint64(1)
	for i := range noise {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		noise[i] = byte(x)
	}
	prefix := []byte("kept")
	for spec, native := range map[string]bool{"zstd:level=19": nativeZstd, "lzma:level=6": nativeLZMA} {
		if !native {
			t.Logf("%s: skipped: this build has no native encoder for it", spec)
			continue
		}
		c, err := NewCompressor(spec)
		if err != nil {
			t.Fatal(err)
		}
		ac := c.(AppendCompressor)
		out, err := ac.CompressAppend(append([]byte(nil), prefix...), text)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if !bytes.HasPrefix(out, prefix) {
			t.Fatalf("%s: dst's bytes were not kept", spec)
		}
		got, err := block.Decompress(c.Compression(), out[len(prefix):], int64(len(text)))
		if err != nil || !bytes.Equal(got, text) {
			t.Fatalf("%s: read back differs: %v", spec, err)
		}
		if _, err := ac.CompressAppend(nil, noise); !errors.Is(err, errNoGain) {
			t.Errorf("%s: random input: %v, want errNoGain", spec, err)
		}
		ct, p, err := CompressSectionInto(c, nil, noise)
		if err != nil || ct != block.CompNone || !bytes.Equal(p, noise) {
			t.Errorf("%s: random input stored as %v (%d bytes), %v", spec, ct, len(p), err)
		}
	}
}

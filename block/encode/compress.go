package encode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/pierrec/lz4/v4"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/block/internal/lz4hc"
	"github.com/godwarfs/godwarfs/block/internal/xzfmt"
)

// Compressor produces framed section payloads (notes §2.1).
type Compressor interface {
	Compression() block.Compression
	// Compress returns the framed payload (e.g. zstd frame with content
	// size, 4-byte size prefix + lz4 block, varint size + brotli, full .xz
	// stream). Must be safe for concurrent use.
	Compress(src []byte) ([]byte, error)
}

// threaded is implemented by compressors that can cut one input into
// jobs for several threads, with output that does not depend on how many.
type threaded interface {
	maxThreads(n int) int
	withThreads(t int) Compressor
	withSplit() Compressor
}

// Split returns c set to cut large inputs into jobs that several threads
// can compress at once (the cgo zstd at levels 20 to 22). Without it every
// input is one job, as the reference encodes it: a cut makes the second
// job reload the first's end as history, which costs CPU and a little
// ratio, so a writer asks for it only where a core would otherwise sit
// idle. The output still depends on the input alone, never
// on the number of threads given by WithThreads. Compressors that never
// cut are returned as they are.
func Split(c Compressor) Compressor {
	if tc, ok := c.(threaded); ok {
		return tc.withSplit()
	}
	return c
}

// MaxThreads returns how many threads c can keep busy compressing n bytes
// at once: 1 for most, more for an encoder set by Split to cut large
// inputs into jobs.
func MaxThreads(c Compressor, n int) int {
	if t, ok := c.(threaded); ok {
		return t.maxThreads(n)
	}
	return 1
}

// WithThreads returns c set to compress each input on up to t threads;
// the output is the same for every t, only the time differs. Compressors
// that cannot use more than one thread are returned as they are.
func WithThreads(c Compressor, t int) Compressor {
	if tc, ok := c.(threaded); ok {
		return tc.withThreads(t)
	}
	return c
}

// CompressSection compresses src and falls back to NONE when the result is
// not smaller than the input (the mkdwarfs rule), returning the compression
// actually used and the payload to store.
func CompressSection(c Compressor, src []byte) (block.Compression, []byte, error) {
	if c == nil || c.Compression() == block.CompNone {
		return block.CompNone, src, nil
	}
	out, err := c.Compress(src)
	if err != nil {
		return 0, nil, fmt.Errorf("compress %s: %w", c.Compression(), err)
	}
	if len(out) >= len(src) {
		return block.CompNone, src, nil
	}
	return c.Compression(), out, nil
}

// alternated is implemented by compressors that have other settings
// worth trying on an input compressed once per image, such as the
// metadata: settings that are sometimes much smaller and sometimes a
// little larger, and cost as much again to try.
type alternated interface {
	// alternatives returns the settings to try on n bytes besides the
	// compressor's own; none where the input is too small to differ.
	alternatives(n int) []Compressor
}

// CompressSectionSmallest is CompressSection with c and the other
// settings of c worth trying on src (libzstd without its block
// pre-splitter, on inputs of more than one zstd block), keeping the
// smallest payload; on a tie, c's own. Every setting writes the same
// format, so this changes only the size and the time: one compression
// for each setting tried.
func CompressSectionSmallest(c Compressor, src []byte) (block.Compression, []byte, error) {
	ct, out, err := CompressSection(c, src)
	if err != nil || ct == block.CompNone {
		return ct, out, err
	}
	a, ok := c.(alternated)
	if !ok {
		return ct, out, nil
	}
	for _, alt := range a.alternatives(len(src)) {
		act, aout, err := CompressSection(alt, src)
		if err != nil {
			return 0, nil, err
		}
		if act != block.CompNone && len(aout) < len(out) {
			ct, out = act, aout
		}
	}
	return ct, out, nil
}

// errNoGain is how a CompressAppend says the payload would not be smaller
// than its input, which CompressSectionInto then stores as NONE.
var errNoGain = errors.New("compressed data not smaller than input")

// AppendCompressor is implemented by compressors that can write into a
// caller's buffer.
type AppendCompressor interface {
	// CompressAppend appends the framed payload of src to dst.
	// It may fail with an error for which CompressSectionInto stores the
	// input uncompressed instead: not smaller than the input.
	CompressAppend(dst, src []byte) ([]byte, error)
}

// CompressSectionInto is CompressSection writing the compressed payload
// into dst's storage where the compressor supports it, so that a pipeline
// can recycle its output buffers. The payload aliases src when the
// fallback to NONE applies.
func CompressSectionInto(c Compressor, dst, src []byte) (block.Compression, []byte, error) {
	ac, ok := c.(AppendCompressor)
	if !ok || c.Compression() == block.CompNone {
		return CompressSection(c, src)
	}
	out, err := ac.CompressAppend(dst[:0], src)
	if errors.Is(err, errNoGain) {
		return block.CompNone, src, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("compress %s: %w", c.Compression(), err)
	}
	if len(out) >= len(src) {
		return block.CompNone, src, nil
	}
	return c.Compression(), out, nil
}

// specError is a bad compression spec. It wraps ErrUnsupported for
// errors.Is, but its text is only the message: it names what is wrong and
// the valid range, which is all a user needs.
type specError struct{ msg string }

func (e *specError) Error() string { return e.msg }
func (e *specError) Unwrap() error { return block.ErrUnsupported }

func specErrorf(format string, args ...any) error {
	return &specError{fmt.Sprintf(format, args...)}
}

// specOptions holds the parsed "name:key=value:flag" options of a spec and
// tracks which ones were consumed so leftovers can be reported.
type specOptions struct {
	algo string
	opts map[string]string
	used map[string]bool
}

func parseSpec(spec string) (*specOptions, error) {
	parts := strings.Split(strings.TrimSpace(spec), ":")
	so := &specOptions{algo: strings.ToLower(parts[0]), opts: map[string]string{}, used: map[string]bool{}}
	if so.algo == "" {
		return nil, specErrorf("empty compression spec")
	}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if k == "" {
			return nil, specErrorf("compression spec %q: empty option", spec)
		}
		if _, dup := so.opts[k]; dup {
			return nil, specErrorf("compression spec %q: option %q given twice", spec, k)
		}
		so.opts[k] = v
	}
	return so, nil
}

func (so *specOptions) int(key string, def, lo, hi int) (int, error) {
	v, ok := so.opts[key]
	so.used[key] = true
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, specErrorf("%s %s %q is not a number (valid: %d to %d)", so.algo, key, v, lo, hi)
	}
	if n < lo || n > hi {
		return 0, specErrorf("%s %s %d is out of range (valid: %d to %d)", so.algo, key, n, lo, hi)
	}
	return n, nil
}

func (so *specOptions) flag(key string) bool {
	_, ok := so.opts[key]
	so.used[key] = true
	return ok
}

func (so *specOptions) leftover() error {
	for k := range so.opts {
		if !so.used[k] {
			return specErrorf("unknown %s compression option %q", so.algo, k)
		}
	}
	return nil
}

// NewCompressor parses a compression spec in mkdwarfs -C syntax, e.g.
// "zstd:level=19", "lzma:level=9:extreme", "lz4hc:level=12",
// "brotli:quality=11:lgwin=22", "null". Compressors are relatively costly
// to create (zstd encoders) and should be reused. zstd and lzma use the C
// libraries where the build has them (see Algorithms).
func NewCompressor(spec string) (Compressor, error) {
	return newCompressor(spec, true)
}

// NewPureGoCompressor is NewCompressor with the pure-Go encoders even where
// the build has the C ones, e.g. to compare the two.
func NewPureGoCompressor(spec string) (Compressor, error) {
	return newCompressor(spec, false)
}

func newCompressor(spec string, native bool) (Compressor, error) {
	so, err := parseSpec(spec)
	if err != nil {
		return nil, err
	}
	var c Compressor
	switch so.algo {
	case "null", "none":
		c = nullCompressor{}
	case "zstd":
		if native && nativeZstd {
			c, err = newNativeZstd(so)
		} else {
			c, err = newZstdCompressor(so)
		}
	case "lzma":
		if native && nativeLZMA {
			c, err = newNativeLZMA(so)
		} else {
			c, err = newLZMACompressor(so)
		}
	case "lz4":
		c = &lz4Compressor{}
	case "lz4hc":
		var lvl int
		if lvl, err = so.int("level", 9, 0, 12); err == nil {
			c = &lz4Compressor{hc: true, level: lvl}
		}
	case "brotli":
		c, err = newBrotliCompressor(so)
	case "flac":
		c, err = newFLACCompressor(so, native)
	case "ricepp":
		c, err = newRiceppCompressor(so)
	default:
		return nil, specErrorf("unknown compression algorithm %q (known: null, zstd, lzma, lz4, lz4hc, brotli, flac, ricepp)", so.algo)
	}
	if err != nil {
		return nil, err
	}
	if err := so.leftover(); err != nil {
		return nil, err
	}
	return c, nil
}

type nullCompressor struct{}

func (nullCompressor) Compression() block.Compression { return block.CompNone }
func (nullCompressor) Compress(src []byte) ([]byte, error) {
	return append([]byte(nil), src...), nil
}

// ---- lz4 / lz4hc ----

type lz4Compressor struct {
	hc    bool
	level int
	pool  sync.Pool // *lz4.Compressor or *lz4hc.Encoder; they are not concurrency-safe
}

// Compression is LZ4 for both: lz4hc output is a plain LZ4 block, and the
// reference tools label it LZ4 too.
func (l *lz4Compressor) Compression() block.Compression { return block.CompLZ4 }

func (l *lz4Compressor) Compress(src []byte) ([]byte, error) {
	return l.compress(nil, src, false)
}

// CompressAppend appends the size-prefixed block to dst, or fails with
// errNoGain when it would not be smaller than src.
func (l *lz4Compressor) CompressAppend(dst, src []byte) ([]byte, error) {
	return l.compress(dst, src, true)
}

// compress appends the size-prefixed block to out. With onlyGain the
// encoder gets room for less than the input, so incompressible data costs
// no bound-sized buffer.
func (l *lz4Compressor) compress(out, src []byte, onlyGain bool) ([]byte, error) {
	if uint64(len(src)) > 1<<32-1 {
		return nil, fmt.Errorf("lz4 input of %d bytes too large: %w", len(src), block.ErrUnsupported)
	}
	room := lz4.CompressBlockBound(len(src))
	if onlyGain {
		if len(src) <= 5 {
			return nil, errNoGain
		}
		room = len(src) - 5
	}
	base := len(out)
	out = slices.Grow(out, 4+room)
	dst := out[base : base+4+room]
	binary.LittleEndian.PutUint32(dst, uint32(len(src)))
	if len(src) == 0 {
		dst[4] = 0 // empty block: one token with no literals
		return out[:base+5], nil
	}
	var n int
	var err error
	if l.hc {
		e, _ := l.pool.Get().(*lz4hc.Encoder)
		if e == nil {
			e = lz4hc.NewEncoder(l.level)
		}
		n, err = e.CompressBlock(src, dst[4:])
		l.pool.Put(e)
	} else {
		c, _ := l.pool.Get().(*lz4.Compressor)
		if c == nil {
			c = &lz4.Compressor{}
		}
		n, err = c.CompressBlock(src, dst[4:])
		l.pool.Put(c)
	}
	if onlyGain && (n == 0 || errors.Is(err, lz4.ErrInvalidSourceShortBuffer) || errors.Is(err, lz4hc.ErrShortBuffer)) {
		return nil, errNoGain
	}
	if err != nil {
		return nil, fmt.Errorf("lz4: %w", err)
	}
	if n == 0 {
		return nil, fmt.Errorf("lz4: block did not fit bound buffer")
	}
	return out[:base+4+n], nil
}

// ---- brotli ----

type brotliCompressor struct {
	quality, lgwin int
	writers        sync.Pool // *brotli.Writer
}

func newBrotliCompressor(so *specOptions) (Compressor, error) {
	q, err := so.int("quality", 11, 0, 11)
	if err != nil {
		return nil, err
	}
	w, err := so.int("lgwin", 22, 10, 24)
	if err != nil {
		return nil, err
	}
	return &brotliCompressor{quality: q, lgwin: w}, nil
}

func (b *brotliCompressor) Compression() block.Compression { return block.CompBrotli }
func (b *brotliCompressor) Compress(src []byte) ([]byte, error) {
	return b.CompressAppend(nil, src)
}

// CompressAppend appends the size-prefixed stream to dst.
func (b *brotliCompressor) CompressAppend(dst, src []byte) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	var pre [binary.MaxVarintLen64]byte
	buf.Write(pre[:binary.PutUvarint(pre[:], uint64(len(src)))])
	// Writers are reused: their state at high quality is many MiB.
	w, _ := b.writers.Get().(*brotli.Writer)
	if w == nil {
		w = brotli.NewWriterOptions(buf, brotli.WriterOptions{Quality: b.quality, LGWin: b.lgwin})
	} else {
		w.Reset(buf)
	}
	defer b.writers.Put(w)
	if _, err := w.Write(src); err != nil {
		return nil, fmt.Errorf("brotli write: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("brotli close: %w", err)
	}
	return buf.Bytes(), nil
}

// lzmaBinary parses lzma:binary=NAME, the BCJ filter the reference
// mkdwarfs puts before LZMA2 for executables; nil when not given.
func lzmaBinary(so *specOptions) (*xzfmt.Filter, error) {
	v, ok := so.opts["binary"]
	so.used["binary"] = true
	if !ok {
		return nil, nil
	}
	f := xzfmt.ByName(strings.ToLower(v))
	if f == nil {
		return nil, specErrorf("unknown lzma binary %q (valid: %s)", v, strings.Join(xzfmt.Writable, ", "))
	}
	return f, nil
}

// lzmaDefaultXZBlockBits is the default of lzma:xz_block_size: one xz
// block per input. Cutting a block into xz blocks lets a scattered read
// decode only the parts it needs, but each xz block starts with an empty
// dictionary, which costs far more size than images may grow by default.
const lzmaDefaultXZBlockBits = 0

// lzmaXZBlock parses lzma:xz_block_size=N, the log2 of the size of the xz
// blocks each input is cut into (0: one xz block), and returns that size
// in bytes (0 for one block).
func lzmaXZBlock(so *specOptions) (int, error) {
	n, err := so.int("xz_block_size", lzmaDefaultXZBlockBits, 0, 30)
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, nil
	}
	if n < 12 {
		return 0, specErrorf("lzma xz_block_size %d is out of range (valid: 0 for one xz block, or 12 to 30)", n)
	}
	return 1 << n, nil
}

// lzmaNice parses lzma:nice=N. As with the reference, 0 keeps the
// preset's value; liblzma needs at least 2.
func lzmaNice(so *specOptions) (int, error) {
	n, err := so.int("nice", 0, 0, 273)
	if err == nil && n == 1 {
		err = specErrorf("lzma nice 1 is out of range (valid: 0 for the preset's, or 2 to 273)")
	}
	return n, err
}

// lzmaDepth parses lzma:depth=N, a uint32 (0: liblzma picks), without
// overflowing int where it has 32 bits.
func lzmaDepth(so *specOptions) (uint32, error) {
	v, ok := so.opts["depth"]
	so.used["depth"] = true
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, specErrorf("lzma depth %q is not a number from 0 to 4294967295", v)
	}
	return uint32(n), nil
}

// Algorithm describes one compression algorithm as this build writes it.
type Algorithm struct {
	Name        string
	Description string
	Encoder     string   // the library that encodes, and whether through cgo
	Options     []string // spec options in mkdwarfs -H form
}

// Algorithms lists what NewCompressor accepts in this build, and which
// encoder each algorithm uses: libzstd in cgo builds; liblzma and libFLAC
// in cgo builds with the tags liblzma and libflac (the Makefile sets them
// where the headers are installed); pure Go otherwise, which for lzma
// gives larger blocks. Decoding is always pure Go.
func Algorithms() []Algorithm {
	zstdEnc, lzmaEnc := "klauspost/compress"+modVersion("github.com/klauspost/compress")+", pure Go; libzstd needs cgo",
		"ulikunitz/xz"+modVersion("github.com/ulikunitz/xz")+", pure Go; "+systemEncoderHint("liblzma", "liblzma")
	zlo, _ := zstdLevelRange()
	zlevel := fmt.Sprintf("level=[%d..22] (below 1: the Go encoder's fastest, level 1; 0: level 3)", zlo)
	zlong := "long (accepted, no effect without libzstd)"
	ztlen := fmt.Sprintf("tlen=[0..%d] (accepted, no effect without libzstd)", zstdMaxTargetLength)
	binary := "binary={" + strings.Join(xzfmt.Writable, ", ") + "} (BCJ filter for executables; kept only where smaller)"
	xzBlockOpt := "xz_block_size=[0,12..30] (write each block as xz blocks of 2^N bytes with an index: a read then decodes only the xz blocks holding its bytes, at a cost in size; the reference reads them; default 0: one xz block)"
	lzmaOpts := []string{"level=[0..9]", "dict_size=[12..30]", "extreme (accepted, no effect without liblzma)", binary,
		"pb=[0..4] or auto (default: 0 for input without 16/32-bit structure, else 2)",
		xzBlockOpt,
		"mode, mf, nice, depth: need liblzma, refused here"}
	if nativeZstd {
		zstdEnc = zstdEncoderName()
		zlevel = fmt.Sprintf("level=[%d..22]", zlo)
		zlong = "long"
		ztlen = fmt.Sprintf("tlen=[0..%d] (libzstd's target length: a match this long ends the search; 0: the level's own)", zstdMaxTargetLength)
	}
	flacEnc, flacOpts := "godwarfs block/flac encoder, pure Go; "+systemEncoderHint("libFLAC", "libflac"), []string{"level=[0..8]", "exhaustive"}
	if nativeFLAC {
		flacEnc, flacOpts = flacEncoderName(), []string{"level=[0..8]", "exhaustive"}
	}
	if nativeLZMA {
		lzmaEnc = lzmaEncoderName()
		lzmaOpts = []string{"level=[0..9]", "dict_size=[12..30]", "extreme", binary,
			"mode={fast, normal}", "mf={bt2, bt3, bt4, hc3, hc4}", "nice=[0..273]", "depth=[0..4294967295]",
			"pb=[0..4] or auto (default: 0 and at levels 6-9 nice 96 for input without 16/32-bit structure, else 2)",
			xzBlockOpt}
	}
	return []Algorithm{
		{"null", "no compression at all", "", nil},
		{"lzma", "LZMA compression", lzmaEnc, lzmaOpts},
		{"zstd", "ZSTD compression", zstdEnc, []string{zlevel, zlong, ztlen}},
		{"lz4", "LZ4 compression", "pierrec/lz4" + modVersion("github.com/pierrec/lz4/v4") + ", pure Go", nil},
		{"lz4hc", "LZ4 HC compression", "godwarfs block/internal/lz4hc encoder, pure Go", []string{"level=[0..12] (10 to 12 as 9)"}},
		{"brotli", "Brotli compressor", "andybalholm/brotli" + modVersion("github.com/andybalholm/brotli") + ", pure Go", []string{"quality=[0..11]", "lgwin=[10..24]"}},
		{"flac", "FLAC compression (PCM audio only)", flacEnc, flacOpts},
		{"ricepp", "RICEPP compression (FITS images only)", "pure Go", []string{"block_size=[16..512]"}},
	}
}

// systemEncoderHint says how to get the encoder of a system library lib
// (liblzma, libFLAC): a cgo build with its tag, which make sets where the
// library's headers are installed.
func systemEncoderHint(lib, tag string) string {
	return "for " + lib + " build with cgo and -tags " + tag + ", as make does where its headers are"
}

// modVersion is " vX.Y.Z" for a module linked into the binary, or "".
func modVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			return " " + d.Version
		}
	}
	return ""
}

// ZstdLevels is the range of zstd levels this build's encoder accepts;
// libzstd (cgo builds) has negative, faster-than-level-1 levels.
func ZstdLevels() (lo, hi int) { return zstdLevelRange() }

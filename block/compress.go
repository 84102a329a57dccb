package block

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/ulikunitz/xz"
)

// Compressor produces framed section payloads (notes §2.1).
type Compressor interface {
	Compression() Compression
	// Compress returns the framed payload (e.g. zstd frame with content
	// size, 4-byte size prefix + lz4 block, varint size + brotli, full .xz
	// stream). Must be safe for concurrent use.
	Compress(src []byte) ([]byte, error)
}

// CompressSection compresses src and falls back to NONE when the result is
// not smaller than the input (the mkdwarfs rule), returning the compression
// actually used and the payload to store.
func CompressSection(c Compressor, src []byte) (Compression, []byte, error) {
	if c == nil || c.Compression() == CompNone {
		return CompNone, src, nil
	}
	out, err := c.Compress(src)
	if err != nil {
		return 0, nil, fmt.Errorf("compress %s: %w", c.Compression(), err)
	}
	if len(out) >= len(src) {
		return CompNone, src, nil
	}
	return c.Compression(), out, nil
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
		return nil, fmt.Errorf("empty compression spec: %w", ErrUnsupported)
	}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if k == "" {
			return nil, fmt.Errorf("compression spec %q: empty option: %w", spec, ErrUnsupported)
		}
		if _, dup := so.opts[k]; dup {
			return nil, fmt.Errorf("compression spec %q: option %q given twice: %w", spec, k, ErrUnsupported)
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
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s option %s=%q: want an integer in [%d,%d]: %w", so.algo, key, v, lo, hi, ErrUnsupported)
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
			return fmt.Errorf("unknown %s compression option %q: %w", so.algo, k, ErrUnsupported)
		}
	}
	return nil
}

// NewCompressor parses a compression spec in mkdwarfs -C syntax, e.g.
// "zstd:level=19", "lzma:level=9:extreme", "lz4hc:level=12",
// "brotli:quality=11:lgwin=22", "null". Compressors are relatively costly
// to create (zstd encoders) and should be reused.
func NewCompressor(spec string) (Compressor, error) {
	so, err := parseSpec(spec)
	if err != nil {
		return nil, err
	}
	var c Compressor
	switch so.algo {
	case "null", "none":
		c = nullCompressor{}
	case "zstd":
		c, err = newZstdCompressor(so)
	case "lzma":
		c, err = newLZMACompressor(so)
	case "lz4":
		c = &lz4Compressor{}
	case "lz4hc":
		var lvl int
		if lvl, err = so.int("level", 9, 0, 12); err == nil {
			c = &lz4Compressor{hc: true, level: lvl}
		}
	case "brotli":
		c, err = newBrotliCompressor(so)
	default:
		return nil, fmt.Errorf("unknown compression algorithm %q in spec %q: %w", so.algo, spec, ErrUnsupported)
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

func (nullCompressor) Compression() Compression { return CompNone }
func (nullCompressor) Compress(src []byte) ([]byte, error) {
	return append([]byte(nil), src...), nil
}

// ---- zstd ----

type zstdCompressor struct {
	level int
	enc   *zstd.Encoder // EncodeAll is safe for concurrent use
}

func newZstdCompressor(so *specOptions) (Compressor, error) {
	lvl, err := so.int("level", 19, 1, 22)
	if err != nil {
		return nil, err
	}
	so.flag("long") // long-distance matching: accepted, not implemented by klauspost
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(lvl)),
		// Single segment makes the encoder write Frame_Content_Size for
		// every input size; upstream rejects frames without it.
		zstd.WithSingleSegment(true),
		zstd.WithZeroFrames(true),
		// The section XXH3 already covers the payload.
		zstd.WithEncoderCRC(false),
	)
	if err != nil {
		return nil, fmt.Errorf("zstd encoder: %w", err)
	}
	return &zstdCompressor{level: lvl, enc: enc}, nil
}

func (z *zstdCompressor) Compression() Compression { return CompZSTD }
func (z *zstdCompressor) Compress(src []byte) ([]byte, error) {
	return z.enc.EncodeAll(src, nil), nil
}

// ---- lzma (xz) ----

// lzmaPresetDict mirrors the liblzma preset dictionary sizes for levels 0..9.
func lzmaPresetDict(level int) int {
	return [10]int{256 << 10, 1 << 20, 2 << 20, 4 << 20, 4 << 20, 8 << 20, 8 << 20, 16 << 20, 32 << 20, 64 << 20}[level]
}

type lzmaCompressor struct {
	dict int
}

func newLZMACompressor(so *specOptions) (Compressor, error) {
	lvl, err := so.int("level", 9, 0, 9)
	if err != nil {
		return nil, err
	}
	so.flag("extreme") // accepted; the Go encoder has no extreme mode
	dict := lzmaPresetDict(lvl)
	if _, ok := so.opts["dict_size"]; ok {
		d, err := so.int("dict_size", 0, 12, 30)
		if err != nil {
			return nil, err
		}
		dict = 1 << d
	}
	if v, ok := so.opts["binary"]; ok {
		return nil, fmt.Errorf("lzma option binary=%s (BCJ filters) not supported: %w", v, ErrUnsupported)
	}
	return &lzmaCompressor{dict: dict}, nil
}

func (l *lzmaCompressor) Compression() Compression { return CompLZMA }
func (l *lzmaCompressor) Compress(src []byte) ([]byte, error) {
	// A dictionary larger than the input only costs memory, for the encoder
	// here and for every decoder later.
	dict := max(min(l.dict, len(src)), 4096)
	var buf bytes.Buffer
	w, err := xz.WriterConfig{DictCap: dict, CheckSum: xz.CRC64}.NewWriter(&buf)
	if err != nil {
		return nil, fmt.Errorf("xz writer: %w", err)
	}
	if _, err := w.Write(src); err != nil {
		return nil, fmt.Errorf("xz write: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("xz close: %w", err)
	}
	return buf.Bytes(), nil
}

// ---- lz4 / lz4hc ----

type lz4Compressor struct {
	hc    bool
	level int
	pool  sync.Pool // *lz4.Compressor or *lz4.CompressorHC; they are not concurrency-safe
}

func (l *lz4Compressor) Compression() Compression {
	if l.hc {
		return CompLZ4HC
	}
	return CompLZ4
}

// lz4hcDepth maps the reference 1..12 levels onto the Go search depths.
func lz4hcDepth(level int) lz4.CompressionLevel {
	if level <= 0 {
		return lz4.Level9
	}
	return lz4.Level1 << (min(level, 9) - 1)
}

func (l *lz4Compressor) Compress(src []byte) ([]byte, error) {
	if uint64(len(src)) > 1<<32-1 {
		return nil, fmt.Errorf("lz4 input of %d bytes too large: %w", len(src), ErrUnsupported)
	}
	dst := make([]byte, 4+lz4.CompressBlockBound(len(src)))
	binary.LittleEndian.PutUint32(dst, uint32(len(src)))
	if len(src) == 0 {
		dst[4] = 0 // empty block: one token with no literals
		return dst[:5], nil
	}
	var n int
	var err error
	if l.hc {
		c, _ := l.pool.Get().(*lz4.CompressorHC)
		if c == nil {
			c = &lz4.CompressorHC{Level: lz4hcDepth(l.level)}
		}
		n, err = c.CompressBlock(src, dst[4:])
		l.pool.Put(c)
	} else {
		c, _ := l.pool.Get().(*lz4.Compressor)
		if c == nil {
			c = &lz4.Compressor{}
		}
		n, err = c.CompressBlock(src, dst[4:])
		l.pool.Put(c)
	}
	if err != nil {
		return nil, fmt.Errorf("lz4: %w", err)
	}
	if n == 0 {
		return nil, fmt.Errorf("lz4: block did not fit bound buffer")
	}
	return dst[:4+n], nil
}

// ---- brotli ----

type brotliCompressor struct {
	quality, lgwin int
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

func (b *brotliCompressor) Compression() Compression { return CompBrotli }
func (b *brotliCompressor) Compress(src []byte) ([]byte, error) {
	var buf bytes.Buffer
	var pre [binary.MaxVarintLen64]byte
	buf.Write(pre[:binary.PutUvarint(pre[:], uint64(len(src)))])
	w := brotli.NewWriterOptions(&buf, brotli.WriterOptions{Quality: b.quality, LGWin: b.lgwin})
	if _, err := w.Write(src); err != nil {
		return nil, fmt.Errorf("brotli write: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("brotli close: %w", err)
	}
	return buf.Bytes(), nil
}

package encode

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
	"github.com/ulikunitz/xz/lzma"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/block/internal/xzfmt"
)

// The pure-Go zstd and lzma encoders: the only ones in a CGO_ENABLED=0
// build, and the fallback for tests that compare encoders.

// ---- zstd ----

// zstdMinLevel is libzstd's lowest (fastest) level, ZSTD_minCLevel().
const zstdMinLevel = -1 << 17

// zstdMaxTargetLength is the largest target length libzstd accepts
// (ZSTD_TARGETLENGTH_MAX, its largest block).
const zstdMaxTargetLength = 128 << 10

type zstdCompressor struct {
	level int
	opts  []zstd.EOption
	mu    sync.Mutex
	// idle holds encoders between calls, by window log. Each encoder is
	// made on first need, so a compressor used by one goroutine (metadata,
	// history) builds one set of match tables, not one per CPU: at level
	// 22 a set is about 50 MiB.
	idle map[int]chan *zstd.Encoder
}

// zstdWindowLog is the window the reference library uses at each level for
// inputs over 256 KiB (its default parameter table).
func zstdWindowLog(level int) int {
	switch {
	case level <= 1:
		return 19
	case level == 2:
		return 20
	case level <= 8:
		return 21
	case level <= 16:
		return 22
	case level <= 19:
		return 23
	case level == 20:
		return 25
	case level == 21:
		return 26
	}
	return 27
}

// windowLogFor is the level's window, shrunk to the input: the encoder
// keeps a history of twice its window, which for a small section would be
// memory spent on nothing.
func (z *zstdCompressor) windowLogFor(n int) int {
	w := zstdWindowLog(z.level)
	for w > 10 && 1<<(w-1) >= n {
		w--
	}
	return w
}

func newZstdCompressor(so *specOptions) (Compressor, error) {
	lvl, err := so.int("level", 19, zstdMinLevel, 22)
	if err != nil {
		return nil, err
	}
	// libzstd's levels below 1 trade ratio for speed in steps the Go
	// encoder does not have: they all get its fastest, level 1. Level 0
	// is libzstd's default, 3.
	switch {
	case lvl < 0:
		lvl = 1
	case lvl == 0:
		lvl = 3
	}
	so.flag("long") // long-distance matching: accepted, not implemented by klauspost
	// The target length tunes libzstd's match search; accepted (and
	// checked) so that a spec means the same in every build.
	if _, err := so.int("tlen", 0, 0, zstdMaxTargetLength); err != nil {
		return nil, err
	}
	z := &zstdCompressor{
		level: lvl,
		opts: []zstd.EOption{
			zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(lvl)),
			zstd.WithEncoderConcurrency(1),
			// Single segment makes the encoder write Frame_Content_Size for
			// every input size; upstream rejects frames without it.
			zstd.WithSingleSegment(true),
			zstd.WithZeroFrames(true),
			// The section XXH3 already covers the payload.
			zstd.WithEncoderCRC(false),
		},
		idle: map[int]chan *zstd.Encoder{},
	}
	// Make one now so that bad options fail here rather than on first use.
	enc, err := z.get(1 << 20)
	if err != nil {
		return nil, err
	}
	z.put(1<<20, enc)
	return z, nil
}

func (z *zstdCompressor) pool(wlog int) chan *zstd.Encoder {
	z.mu.Lock()
	defer z.mu.Unlock()
	c := z.idle[wlog]
	if c == nil {
		c = make(chan *zstd.Encoder, runtime.GOMAXPROCS(0))
		z.idle[wlog] = c
	}
	return c
}

func (z *zstdCompressor) get(n int) (*zstd.Encoder, error) {
	wlog := z.windowLogFor(n)
	select {
	case enc := <-z.pool(wlog):
		return enc, nil
	default:
	}
	opts := append(slices.Clip(z.opts), zstd.WithWindowSize(1<<wlog))
	if z.level >= 10 {
		// The strongest encoder is slow enough that sliding its history
		// down every 128 KiB costs nothing measurable, and the default
		// history of twice the window would cost a window's worth of
		// memory per encoder.
		opts = append(opts, zstd.WithLowerEncoderMem(true))
	}
	enc, err := zstd.NewWriter(nil, opts...)
	if err != nil {
		return nil, fmt.Errorf("zstd encoder: %w", err)
	}
	return enc, nil
}

func (z *zstdCompressor) put(n int, enc *zstd.Encoder) {
	select {
	case z.pool(z.windowLogFor(n)) <- enc:
	default: // more callers than CPUs at once: let this one go
	}
}

func (z *zstdCompressor) Compression() block.Compression { return block.CompZSTD }
func (z *zstdCompressor) Compress(src []byte) ([]byte, error) {
	return z.CompressAppend(nil, src)
}

// CompressAppend appends the frame to dst.
func (z *zstdCompressor) CompressAppend(dst, src []byte) ([]byte, error) {
	enc, err := z.get(len(src))
	if err != nil {
		return nil, err
	}
	defer z.put(len(src), enc)
	return enc.EncodeAll(src, dst), nil
}

// ---- lzma (xz) ----

// lzmaPresetDict mirrors the liblzma preset dictionary sizes for levels 0..9.
func lzmaPresetDict(level int) int {
	return [10]int{256 << 10, 1 << 20, 2 << 20, 4 << 20, 4 << 20, 8 << 20, 8 << 20, 16 << 20, 32 << 20, 64 << 20}[level]
}

type lzmaCompressor struct {
	dict  int
	chunk int           // xz block size, 0: one xz block
	pb    int           // lzmaAutoPB: lzmaProfile's
	bcj   *xzfmt.Filter // nil: LZMA2 only
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
	bcj, err := lzmaBinary(so)
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"mode", "mf", "nice", "depth"} {
		if _, ok := so.opts[k]; ok {
			return nil, specErrorf("lzma option %s needs the liblzma encoder, which this build lacks (a cgo build with -tags liblzma has it)", k)
		}
	}
	pb, err := lzmaPB(so)
	if err != nil {
		return nil, err
	}
	chunk, err := lzmaXZBlock(so)
	if err != nil {
		return nil, err
	}
	return &lzmaCompressor{dict: dict, chunk: chunk, pb: pb, bcj: bcj}, nil
}

func (l *lzmaCompressor) Compression() block.Compression { return block.CompLZMA }
func (l *lzmaCompressor) Compress(src []byte) ([]byte, error) {
	// A dictionary larger than the input (or than one xz block) only
	// costs memory, for the encoder here and for every decoder later.
	dict := max(min(l.dict, len(src)), 4096)
	if l.chunk > 0 {
		dict = max(min(dict, l.chunk), 4096)
	}
	// The Go encoder has no nice length: only the profile's pb applies.
	pb, _ := lzmaProfile(src, l.pb, 0, 0)
	props := &lzma.Properties{LC: 3, LP: 0, PB: pb}
	var out []byte
	if l.chunk > 0 && l.chunk < len(src) {
		var err error
		if out, err = xzfmt.WriteBlocks(src, l.chunk, dict, props, nil); err != nil {
			return nil, err
		}
	} else {
		var buf bytes.Buffer
		w, err := xz.WriterConfig{Properties: props, DictCap: dict, CheckSum: xz.CRC64}.NewWriter(&buf)
		if err != nil {
			return nil, fmt.Errorf("xz writer: %w", err)
		}
		if _, err := w.Write(src); err != nil {
			return nil, fmt.Errorf("xz write: %w", err)
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("xz close: %w", err)
		}
		out = buf.Bytes()
	}
	if l.bcj == nil {
		return out, nil
	}
	// As the reference: try the BCJ filter too and keep the smaller.
	alt, err := xzfmt.WriteBlocks(src, l.chunk, dict, props, l.bcj)
	if err != nil {
		return nil, err
	}
	if len(alt) < len(out) {
		return alt, nil
	}
	return out, nil
}

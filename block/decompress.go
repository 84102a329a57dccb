package block

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/godwarfs/godwarfs/internal/brotli"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

const (
	zstdMagic        = 0xFD2FB528
	zstdMaxBlockSize = 128 << 10
	// lz4MaxRatio bounds LZ4 expansion: every input byte yields at most 255
	// output bytes (a length-extension byte), so larger claims are corrupt.
	lz4MaxRatio = 255
	// zstdDecoderMaxMemory is only a backstop; the real bound is the
	// capacity of the destination slice (WithDecodeAllCapLimit).
	zstdDecoderMaxMemory = 1 << 40
)

// sharedZstdDecoder is created once and never reconfigured: DecodeAll is safe
// for concurrent use, and creating a decoder per call would be costly for
// small sections. Output size is bounded per call by the dst capacity.
var sharedZstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderMaxMemory(zstdDecoderMaxMemory),
		zstd.WithDecoderMaxWindow(1<<31),
	)
})

func corruptf(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrCorrupt)...)
}

func tooLarge(n, limit int64) error {
	return fmt.Errorf("declared size %d exceeds limit %d: %w", n, limit, ErrTooLarge)
}

func unsupported(c Compression) error {
	return fmt.Errorf("unsupported compression %s: %w", c, ErrUnsupported)
}

// Decompress decodes a section payload framed as described in notes §2.1.
// limit is the maximum number of decompressed bytes allowed; the output is
// never allowed to grow beyond it and no buffer larger than limit is
// allocated. The actual size must equal the size declared by the framing.
// For CompNone src itself is returned. Unknown ids fail with
// ErrUnsupported ("unsupported compression ...").
func Decompress(c Compression, src []byte, limit int64) ([]byte, error) {
	if limit < 0 {
		limit = 0
	}
	switch c {
	case CompNone:
		if int64(len(src)) > limit {
			return nil, tooLarge(int64(len(src)), limit)
		}
		return src, nil
	case CompZSTD:
		return decompressZstd(src, nil, limit)
	case CompLZ4, CompLZ4HC:
		return decompressLZ4(src, nil, limit)
	}
	return decompressExtra(c, src, nil, limit)
}

// DecompressInto is Decompress, but decodes into dst's storage when it is
// large enough (xz with BCJ filters allocates), so a caller that
// decodes block after block can reuse one buffer instead of producing a
// block-sized piece of garbage each time. The result may alias dst, or src
// for CompNone.
func DecompressInto(c Compression, src, dst []byte, limit int64) ([]byte, error) {
	if limit < 0 {
		limit = 0
	}
	switch c {
	case CompZSTD:
		return decompressZstd(src, dst, limit)
	case CompLZ4, CompLZ4HC:
		return decompressLZ4(src, dst, limit)
	case CompNone:
		return Decompress(c, src, limit)
	}
	return decompressExtra(c, src, dst, limit)
}

// outBuf returns dst resized to n bytes if it can hold them, else a new
// slice of n bytes.
func outBuf(dst []byte, n int64) []byte {
	if int64(cap(dst)) >= n {
		return dst[:n]
	}
	return make([]byte, n)
}

// UncompressedSize returns the decompressed size declared by the framing,
// without decoding the payload.
func UncompressedSize(c Compression, src []byte) (int64, error) {
	switch c {
	case CompNone:
		return int64(len(src)), nil
	case CompZSTD:
		f, err := parseZstdFrame(src)
		if err != nil {
			return 0, err
		}
		return f.contentSize, nil
	case CompLZ4, CompLZ4HC:
		if len(src) < 4 {
			return 0, corruptf("lz4 payload of %d bytes has no size prefix", len(src))
		}
		return int64(binary.LittleEndian.Uint32(src)), nil
	}
	return sizeExtra(c, src)
}

// SizeFromHeader returns the uncompressed size a payload of compression c
// declares in its first bytes, head (at least the first 64 bytes, or the
// whole payload if shorter), without checking the rest of the payload;
// ok is false for a compression that states it elsewhere (LZMA: read the
// whole payload and use UncompressedSize).
func SizeFromHeader(c Compression, head []byte) (n int64, ok bool, err error) {
	switch c {
	case CompLZMA:
		return 0, false, nil
	case CompZSTD:
		f, _, err := parseZstdHeader(head)
		return f.contentSize, err == nil, err
	case CompNone:
		return 0, false, nil
	}
	n, err = UncompressedSize(c, head)
	return n, err == nil, err
}

// readUvarint decodes the ULEB128 size prefix (at most 10 bytes, must fit
// in int64) and returns the value and its encoded length.
func readUvarint(src []byte) (int64, int, error) {
	v, n := binary.Uvarint(src)
	if n <= 0 {
		return 0, 0, corruptf("bad varint size prefix")
	}
	if v > 1<<62 {
		return 0, 0, corruptf("varint size prefix %d out of range", v)
	}
	return int64(v), n, nil
}

// readExactly reads exactly n bytes from r and requires r to end there. The
// buffer grows with the data actually produced, so a forged size prefix
// cannot make us allocate more than the stream really decodes to. A dst
// of n bytes or more is read into instead (its owner chose to spend that).
func readExactly(r io.Reader, n int64, prealloc int64, dst []byte) ([]byte, error) {
	var buf []byte
	if int64(cap(dst)) >= n {
		buf = dst[:0:n]
	} else {
		buf = make([]byte, 0, min(n, max(prealloc, 4096)))
	}
	for int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			grow := min(n, max(int64(cap(buf))*2, 4096))
			nb := make([]byte, len(buf), grow)
			copy(nb, buf)
			buf = nb
		}
		k, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err == io.EOF {
			if int64(len(buf)) < n {
				return nil, corruptf("stream ended after %d of %d declared bytes", len(buf), n)
			}
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
	var one [1]byte
	for {
		k, err := r.Read(one[:])
		if k > 0 {
			return nil, corruptf("stream produces more than the %d declared bytes", n)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// ---- zstd ----

type zstdFrame struct {
	contentSize int64
	headerLen   int
	frameLen    int   // total length of the frame including checksum
	maxOutput   int64 // most the blocks can possibly decode to
}

// parseZstdFrame reads the frame header and walks the block headers, so that
// the declared content size can be checked against what the blocks can
// produce before anything is allocated.
// parseZstdHeader reads a zstd frame header: the declared content size,
// the header length and the window size.
func parseZstdHeader(src []byte) (f zstdFrame, window int64, err error) {
	if len(src) < 5 || binary.LittleEndian.Uint32(src) != zstdMagic {
		return f, 0, corruptf("missing zstd frame magic")
	}
	fhd := src[4]
	if fhd&0x08 != 0 {
		return f, 0, corruptf("zstd frame header reserved bit set")
	}
	single := fhd&0x20 != 0
	pos := 5
	if !single {
		if len(src) < pos+1 {
			return f, 0, corruptf("truncated zstd frame header")
		}
		wd := src[pos]
		exp := 10 + int64(wd>>3)
		base := int64(1) << exp
		window = base + (base/8)*int64(wd&7)
		pos++
	}
	if didLen := [4]int{0, 1, 2, 4}[fhd&3]; didLen > 0 {
		if len(src) < pos+didLen {
			return f, 0, corruptf("truncated zstd frame header")
		}
		// Dictionary ids are never written by mkdwarfs.
		if !allZero(src[pos : pos+didLen]) {
			return f, 0, fmt.Errorf("zstd frame needs a dictionary: %w", ErrUnsupported)
		}
		pos += didLen
	}
	fcsLen := [4]int{0, 2, 4, 8}[fhd>>6]
	if fhd>>6 == 0 && single {
		fcsLen = 1
	}
	if fcsLen == 0 {
		return f, 0, corruptf("zstd frame has no content size")
	}
	if len(src) < pos+fcsLen {
		return f, 0, corruptf("truncated zstd frame header")
	}
	var fcs uint64
	switch fcsLen {
	case 1:
		fcs = uint64(src[pos])
	case 2:
		fcs = uint64(binary.LittleEndian.Uint16(src[pos:])) + 256
	case 4:
		fcs = uint64(binary.LittleEndian.Uint32(src[pos:]))
	case 8:
		fcs = binary.LittleEndian.Uint64(src[pos:])
	}
	pos += fcsLen
	if fcs > 1<<62 {
		return f, 0, corruptf("zstd content size %d out of range", fcs)
	}
	f.contentSize = int64(fcs)
	f.headerLen = pos
	return f, window, nil
}

func parseZstdFrame(src []byte) (zstdFrame, error) {
	f, window, err := parseZstdHeader(src)
	if err != nil {
		return f, err
	}
	pos := f.headerLen
	fhd := src[4]
	single := fhd&0x20 != 0
	if single {
		window = f.contentSize
	}
	blockMax := min(window, zstdMaxBlockSize)
	for {
		if len(src)-pos < 3 {
			return f, corruptf("truncated zstd block header at %d", pos)
		}
		bh := uint32(src[pos]) | uint32(src[pos+1])<<8 | uint32(src[pos+2])<<16
		pos += 3
		last := bh&1 != 0
		size := int64(bh >> 3)
		switch (bh >> 1) & 3 {
		case 0: // raw
			if int64(len(src)-pos) < size {
				return f, corruptf("truncated zstd raw block")
			}
			pos += int(size)
			f.maxOutput += size
		case 1: // RLE: one byte repeated size times
			if len(src)-pos < 1 {
				return f, corruptf("truncated zstd RLE block")
			}
			pos++
			f.maxOutput += size
		case 2:
			if int64(len(src)-pos) < size {
				return f, corruptf("truncated zstd compressed block")
			}
			pos += int(size)
			f.maxOutput += max(blockMax, 0)
		default:
			return f, corruptf("reserved zstd block type")
		}
		if last {
			break
		}
	}
	if fhd&0x04 != 0 {
		if len(src)-pos < 4 {
			return f, corruptf("truncated zstd checksum")
		}
		pos += 4
	}
	f.frameLen = pos
	return f, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func decompressZstd(src, dst []byte, limit int64) ([]byte, error) {
	f, err := parseZstdFrame(src)
	if err != nil {
		return nil, err
	}
	if f.frameLen != len(src) {
		return nil, corruptf("%d bytes of trailing data after zstd frame", len(src)-f.frameLen)
	}
	if f.contentSize > limit {
		return nil, tooLarge(f.contentSize, limit)
	}
	if f.contentSize > f.maxOutput {
		return nil, corruptf("zstd content size %d larger than the frame's blocks can produce (%d)", f.contentSize, f.maxOutput)
	}
	dec, err := sharedZstdDecoder()
	if err != nil {
		return nil, fmt.Errorf("zstd decoder: %w", err)
	}
	// The capacity of the destination is the decoder's output limit
	// (WithDecodeAllCapLimit), so it must be exactly the declared size.
	out, err := dec.DecodeAll(src, outBuf(dst, f.contentSize)[:0:f.contentSize])
	if err != nil {
		return nil, fmt.Errorf("zstd: %w (%w)", err, ErrCorrupt)
	}
	if int64(len(out)) != f.contentSize {
		return nil, corruptf("zstd produced %d bytes, frame declares %d", len(out), f.contentSize)
	}
	return out, nil
}

// ---- lz4 ----

func decompressLZ4(src, dst []byte, limit int64) ([]byte, error) {
	if len(src) < 4 {
		return nil, corruptf("lz4 payload of %d bytes has no size prefix", len(src))
	}
	n := int64(binary.LittleEndian.Uint32(src))
	body := src[4:]
	if n > limit {
		return nil, tooLarge(n, limit)
	}
	if n > int64(len(body))*lz4MaxRatio+16 {
		return nil, corruptf("lz4 declared size %d impossible for %d compressed bytes", n, len(body))
	}
	if n == 0 {
		// An empty block is encoded as a single zero token.
		if len(body) == 0 || (len(body) == 1 && body[0] == 0) {
			return []byte{}, nil
		}
		return nil, corruptf("lz4 block with declared size 0 has %d bytes of data", len(body))
	}
	dst = outBuf(dst, n)
	k, err := lz4.UncompressBlock(body, dst)
	if err != nil {
		return nil, fmt.Errorf("lz4: %w (%w)", err, ErrCorrupt)
	}
	if int64(k) != n {
		return nil, corruptf("lz4 produced %d bytes, prefix declares %d", k, n)
	}
	return dst, nil
}

// ---- brotli ----

func decompressBrotli(src, dst []byte, limit int64) ([]byte, error) {
	n, k, err := readUvarint(src)
	if err != nil {
		return nil, fmt.Errorf("brotli: %w", err)
	}
	if n > limit {
		return nil, tooLarge(n, limit)
	}
	r := brotli.NewReader(bytes.NewReader(src[k:]))
	out, err := readExactly(r, n, int64(len(src))*8, dst)
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			return nil, fmt.Errorf("brotli: %w", err)
		}
		return nil, fmt.Errorf("brotli: %w (%w)", err, ErrCorrupt)
	}
	return out, nil
}

// ---- lzma (xz) ----

func decompressXZ(src, dst []byte, limit int64) ([]byte, error) {
	info, err := parseXZ(src)
	if err != nil {
		return nil, err
	}
	if info.total > limit {
		return nil, tooLarge(info.total, limit)
	}
	hdrs, _, err := parseXZBlocks(src, info)
	if err != nil {
		return nil, err
	}
	return decodeXZBlocks(src, info, hdrs, dst)
}

package block

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/ulikunitz/xz"

	"github.com/godwarfs/godwarfs/block/ricepp"
)

// The decoder's tests make their payloads with the pure-Go libraries
// directly, framed as the format wants, so that they do not depend on the
// encoders (package block/encode, which imports this one).

// testPayload returns src compressed as a payload of comp (zstd, lzma,
// lz4, brotli or none).
func testPayload(t testing.TB, comp Compression, src []byte) []byte {
	t.Helper()
	out, err := payload(comp, src)
	if err != nil {
		t.Fatalf("%s payload of %d bytes: %v", comp, len(src), err)
	}
	return out
}

// testSection is testPayload falling back to NONE where the payload
// would not be smaller, as a writer stores sections.
func testSection(t testing.TB, comp Compression, src []byte) (Compression, []byte) {
	t.Helper()
	out := testPayload(t, comp, src)
	if len(out) >= len(src) {
		return CompNone, src
	}
	return comp, out
}

func payload(comp Compression, src []byte) ([]byte, error) {
	switch comp {
	case CompNone:
		return bytes.Clone(src), nil
	case CompZSTD:
		// Single segment: the frame header carries the content size,
		// which the format requires.
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithSingleSegment(true),
			zstd.WithZeroFrames(true), zstd.WithEncoderCRC(false), zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		defer enc.Close()
		return enc.EncodeAll(src, nil), nil
	case CompLZMA:
		var buf bytes.Buffer
		w, err := xz.WriterConfig{DictCap: max(len(src), 4096), CheckSum: xz.CRC64}.NewWriter(&buf)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case CompLZ4:
		out := make([]byte, 4+lz4.CompressBlockBound(len(src)))
		binary.LittleEndian.PutUint32(out, uint32(len(src)))
		if len(src) == 0 {
			return out[:5], nil // one token with no literals
		}
		var c lz4.Compressor
		n, err := c.CompressBlock(src, out[4:])
		if err != nil {
			return nil, err
		}
		return out[:4+n], nil
	case CompBrotli:
		buf := bytes.NewBuffer(binary.AppendUvarint(nil, uint64(len(src))))
		w := brotli.NewWriterLevel(buf, 5)
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	return nil, fmt.Errorf("no test payload for %s", comp)
}

// testRicepp is a RICEPP block payload holding data.
func testRicepp(data []byte, p ricepp.Params) ([]byte, error) {
	return ricepp.Encode(AppendRiceppHeader(nil, len(data), p), data, p)
}

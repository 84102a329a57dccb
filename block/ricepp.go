package block

import (
	"fmt"

	"github.com/godwarfs/godwarfs/block/ricepp"
)

// A RICEPP payload is the uncompressed size (ULEB128), a Thrift compact
// ricepp_block_header and the codec stream; see package ricepp for the
// details of all three.

// riceppHeader is the decoded ricepp_block_header.
type riceppHeader struct {
	params  ricepp.Params
	version int
}

// Thrift compact type ids used by the header (and the scalars we skip).
const (
	tcStop   = 0
	tcTrue   = 1
	tcFalse  = 2
	tcByte   = 3
	tcI16    = 4
	tcI32    = 5
	tcI64    = 6
	tcDouble = 7
	tcBinary = 8
)

// parseRiceppHeader reads the Thrift compact struct at the start of src
// and returns it with its length. Unknown fields of scalar or binary type
// are skipped; containers and nested structs are never written by any
// version and are refused.
func parseRiceppHeader(src []byte) (riceppHeader, int, error) {
	var h riceppHeader
	pos := 0
	varint := func() (uint64, error) {
		var v uint64
		for shift := uint(0); shift < 64; shift += 7 {
			if pos >= len(src) {
				return 0, corruptf("ricepp header: truncated varint")
			}
			b := src[pos]
			pos++
			v |= uint64(b&0x7f) << shift
			if b < 0x80 {
				return v, nil
			}
		}
		return 0, corruptf("ricepp header: varint too long")
	}
	zigzag := func() (int64, error) {
		u, err := varint()
		return int64(u>>1) ^ -int64(u&1), err
	}
	var id int64
	for {
		if pos >= len(src) {
			return h, 0, corruptf("ricepp header: no stop field")
		}
		fh := src[pos]
		pos++
		typ := fh & 0x0f
		if typ == tcStop {
			break
		}
		if delta := int64(fh >> 4); delta != 0 {
			id += delta
		} else {
			v, err := zigzag()
			if err != nil {
				return h, 0, err
			}
			id = v
		}
		var val int64
		switch typ {
		case tcTrue, tcFalse:
			val = int64(2 - typ) // 1 for true, 0 for false
		case tcByte:
			if pos >= len(src) {
				return h, 0, corruptf("ricepp header: truncated field %d", id)
			}
			val = int64(int8(src[pos]))
			pos++
		case tcI16, tcI32, tcI64:
			v, err := zigzag()
			if err != nil {
				return h, 0, fmt.Errorf("field %d: %w", id, err)
			}
			val = v
		case tcDouble:
			if len(src)-pos < 8 {
				return h, 0, corruptf("ricepp header: truncated field %d", id)
			}
			pos += 8
		case tcBinary:
			n, err := varint()
			if err != nil {
				return h, 0, fmt.Errorf("field %d: %w", id, err)
			}
			if n > uint64(len(src)-pos) {
				return h, 0, corruptf("ricepp header: field %d of %d bytes runs past the payload", id, n)
			}
			pos += int(n)
		default:
			return h, 0, corruptf("ricepp header: field %d has unexpected type %d", id, typ)
		}
		// The Thrift types are signed; the header's values are unsigned
		// and of the field's declared width.
		switch id {
		case 1:
			h.params.BlockSize = int(uint32(val))
		case 2:
			h.params.Components = int(uint16(val))
		case 3:
			h.params.BytesPerSample = int(uint8(val))
		case 4:
			h.params.UnusedLSBs = int(uint8(val))
		case 5:
			h.params.BigEndian = val != 0
		case 6:
			h.version = int(uint16(val))
		}
	}
	if h.version > ricepp.Version {
		return h, 0, fmt.Errorf("ricepp version %d (newest known %d): %w", h.version, ricepp.Version, ErrUnsupported)
	}
	return h, pos, nil
}

// riceppPayload splits a RICEPP payload into its declared size, header and
// codec stream.
func riceppPayload(src []byte) (int64, riceppHeader, []byte, error) {
	n, k, err := readUvarint(src)
	if err != nil {
		return 0, riceppHeader{}, nil, fmt.Errorf("ricepp: %w", err)
	}
	h, hl, err := parseRiceppHeader(src[k:])
	if err != nil {
		return 0, h, nil, err
	}
	return n, h, src[k+hl:], nil
}

// riceppPlausible rejects a declared size the stream cannot produce, so
// that it is never allocated: every coded block takes at least its 4-bit
// selector and yields at most block_size samples of each component
// (h.params must be valid).
func riceppPlausible(n int64, h riceppHeader, stream []byte) error {
	bs := int64(h.params.BlockSize)
	if maxOut := (int64(len(stream))*2 + 1) * bs * 2 * ricepp.MaxComponents; n > maxOut {
		return corruptf("ricepp declared size %d impossible for %d stream bytes", n, len(stream))
	}
	return nil
}

// riceppSize is UncompressedSize for RICEPP: the declared size, once the
// header parses. It looks at no stream bytes, as SizeFromHeader passes
// only the start of the payload; decompressRicepp checks plausibility.
func riceppSize(src []byte) (int64, error) {
	n, _, _, err := riceppPayload(src)
	return n, err
}

func decompressRicepp(src, dst []byte, limit int64) ([]byte, error) {
	n, h, stream, err := riceppPayload(src)
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, tooLarge(n, limit)
	}
	if err := h.params.Validate(); err != nil {
		return nil, fmt.Errorf("ricepp header: %w (%w)", err, ErrCorrupt)
	}
	if err := riceppPlausible(n, h, stream); err != nil {
		return nil, err
	}
	out, err := ricepp.Decode(outBuf(dst, n), stream, h.params)
	if err != nil {
		return nil, fmt.Errorf("ricepp: %w (%w)", err, ErrCorrupt)
	}
	return out, nil
}

// AppendRiceppHeader appends what precedes the codec stream in a RICEPP
// block payload of size uncompressed bytes: the size prefix and the
// header, codec version 1 as the reference writes it.
func AppendRiceppHeader(b []byte, size int, p ricepp.Params) []byte {
	return appendRiceppHeader(appendUvarint(b, uint64(size)), p)
}

func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// appendRiceppHeader writes the six header fields in Thrift compact form,
// in field order, as the reference's writer does.
func appendRiceppHeader(b []byte, p ricepp.Params) []byte {
	zz := func(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }
	b = append(b, 1<<4|tcI32)
	b = appendUvarint(b, zz(int64(int32(uint32(p.BlockSize)))))
	b = append(b, 1<<4|tcI16)
	b = appendUvarint(b, zz(int64(int16(uint16(p.Components)))))
	b = append(b, 1<<4|tcByte, byte(p.BytesPerSample))
	b = append(b, 1<<4|tcByte, byte(p.UnusedLSBs))
	if p.BigEndian {
		b = append(b, 1<<4|tcTrue)
	} else {
		b = append(b, 1<<4|tcFalse)
	}
	b = append(b, 1<<4|tcI16)
	b = appendUvarint(b, zz(ricepp.Version))
	return append(b, tcStop)
}

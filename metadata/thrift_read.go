package metadata

import (
	"errors"
	"fmt"
)

// maxThriftDepth bounds struct/container nesting so that hostile input
// cannot exhaust the stack while skipping unknown fields.
const maxThriftDepth = 64

var errThriftShort = errors.New("unexpected end of data")

// compactReader reads the thrift compact protocol from a byte slice. Every
// length is checked against the remaining bytes before anything is
// allocated, so the work done is linear in the input size.
type compactReader struct {
	b     []byte
	pos   int
	depth int
}

func (r *compactReader) remaining() int { return len(r.b) - r.pos }

func (r *compactReader) readByte() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, errThriftShort
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

func (r *compactReader) varint() (uint64, error) {
	var v uint64
	for shift := uint(0); shift < 70; shift += 7 {
		c, err := r.readByte()
		if err != nil {
			return 0, err
		}
		if shift == 63 && c > 1 {
			return 0, errors.New("varint overflows 64 bits")
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
	}
	return 0, errors.New("varint too long")
}

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

func (r *compactReader) i64() (int64, error) {
	u, err := r.varint()
	return unzigzag(u), err
}

func (r *compactReader) i32() (int32, error) {
	v, err := r.i64()
	if err != nil {
		return 0, err
	}
	if v != int64(int32(v)) {
		return 0, fmt.Errorf("i32 value %d out of range", v)
	}
	return int32(v), nil
}

func (r *compactReader) i16() (int16, error) {
	v, err := r.i64()
	if err != nil {
		return 0, err
	}
	if v != int64(int16(v)) {
		return 0, fmt.Errorf("i16 value %d out of range", v)
	}
	return int16(v), nil
}

func (r *compactReader) binary() ([]byte, error) {
	n, err := r.varint()
	if err != nil {
		return nil, err
	}
	if n > uint64(r.remaining()) {
		return nil, fmt.Errorf("binary length %d exceeds remaining %d bytes", n, r.remaining())
	}
	b := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b, nil
}

func (r *compactReader) str() (string, error) {
	b, err := r.binary()
	return string(b), err
}

// listHeader reads a list/set header. Every element occupies at least one
// byte on the wire, so a size larger than the remaining input is invalid.
func (r *compactReader) listHeader() (elem byte, n int, err error) {
	c, err := r.readByte()
	if err != nil {
		return 0, 0, err
	}
	elem = c & 0x0f
	size := uint64(c >> 4)
	if size == 15 {
		if size, err = r.varint(); err != nil {
			return 0, 0, err
		}
	}
	if size > uint64(r.remaining()) {
		return 0, 0, fmt.Errorf("list size %d exceeds remaining %d bytes", size, r.remaining())
	}
	return elem, int(size), nil
}

// mapHeader reads a map header; each entry takes at least two bytes.
func (r *compactReader) mapHeader() (kt, vt byte, n int, err error) {
	size, err := r.varint()
	if err != nil {
		return 0, 0, 0, err
	}
	if size == 0 {
		return 0, 0, 0, nil
	}
	if size > uint64(r.remaining())/2 {
		return 0, 0, 0, fmt.Errorf("map size %d exceeds remaining %d bytes", size, r.remaining())
	}
	c, err := r.readByte()
	if err != nil {
		return 0, 0, 0, err
	}
	return c >> 4, c & 0x0f, int(size), nil
}

// readStruct iterates the fields of one struct, calling fn for each. fn
// must consume the value (or call skip). For bool fields the value is in typ
// (ctBoolTrue / ctBoolFalse) and nothing is to be consumed.
func (r *compactReader) readStruct(fn func(id int16, typ byte) error) error {
	if r.depth >= maxThriftDepth {
		return errors.New("nesting too deep")
	}
	r.depth++
	defer func() { r.depth-- }()
	var last int16
	for {
		c, err := r.readByte()
		if err != nil {
			return err
		}
		if c == 0 {
			return nil
		}
		typ := c & 0x0f
		var id int16
		if delta := c >> 4; delta != 0 {
			id = last + int16(delta)
		} else if id, err = r.i16(); err != nil {
			return err
		}
		last = id
		if err := fn(id, typ); err != nil {
			return err
		}
	}
}

// readBoolElem reads a bool container element (one byte).
func (r *compactReader) readBoolElem() (bool, error) {
	c, err := r.readByte()
	if err != nil {
		return false, err
	}
	switch c {
	case 1:
		return true, nil
	case 0, 2:
		return false, nil
	}
	return false, fmt.Errorf("invalid bool element 0x%02x", c)
}

// skip consumes a value of the given wire type. fieldBool says the value
// belongs to a struct field, where bools carry no payload.
func (r *compactReader) skip(typ byte, fieldBool bool) error {
	switch typ {
	case ctBoolTrue, ctBoolFalse:
		if fieldBool {
			return nil
		}
		_, err := r.readBoolElem()
		return err
	case ctByte:
		_, err := r.readByte()
		return err
	case ctI16, ctI32, ctI64:
		_, err := r.varint()
		return err
	case ctDouble:
		if r.remaining() < 8 {
			return errThriftShort
		}
		r.pos += 8
		return nil
	case ctBinary:
		_, err := r.binary()
		return err
	case ctStruct:
		return r.readStruct(func(_ int16, t byte) error { return r.skip(t, true) })
	}
	if r.depth >= maxThriftDepth {
		return errors.New("nesting too deep")
	}
	r.depth++
	defer func() { r.depth-- }()
	switch typ {
	case ctList, ctSet:
		elem, n, err := r.listHeader()
		if err != nil {
			return err
		}
		for range n {
			if err := r.skip(elem, false); err != nil {
				return err
			}
		}
		return nil
	case ctMap:
		kt, vt, n, err := r.mapHeader()
		if err != nil {
			return err
		}
		for range n {
			if err := r.skip(kt, false); err != nil {
				return err
			}
			if err := r.skip(vt, false); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown compact type %d", typ)
}

// fieldBoolValue interprets the type nibble of a bool struct field.
func fieldBoolValue(typ byte) (bool, error) {
	switch typ {
	case ctBoolTrue:
		return true, nil
	case ctBoolFalse:
		return false, nil
	}
	return false, fmt.Errorf("expected bool, got type %d", typ)
}

func expectType(got, want byte) error {
	if got != want {
		return fmt.Errorf("wire type %d, want %d", got, want)
	}
	return nil
}

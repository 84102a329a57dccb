package metadata

import "encoding/binary"

// Thrift compact protocol type nibbles (§5).
const (
	ctBoolTrue  = 1
	ctBoolFalse = 2
	ctByte      = 3
	ctI16       = 4
	ctI32       = 5
	ctI64       = 6
	ctDouble    = 7
	ctBinary    = 8
	ctList      = 9
	ctSet       = 10
	ctMap       = 11
	ctStruct    = 12
)

// compactWriter serialises values in the thrift compact protocol. It keeps
// the last field id of every open struct because field headers are
// delta-encoded relative to the previous field of the same struct.
type compactWriter struct {
	buf    []byte
	lastID []int16
}

func (w *compactWriter) bytes() []byte { return w.buf }

func (w *compactWriter) varint(v uint64) {
	w.buf = binary.AppendUvarint(w.buf, v)
}

func zigzag64(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

func (w *compactWriter) i16(v int16) { w.varint(zigzag64(int64(v))) }
func (w *compactWriter) i32(v int32) { w.varint(zigzag64(int64(v))) }
func (w *compactWriter) i64(v int64) { w.varint(zigzag64(v)) }

func (w *compactWriter) binary(b []byte) {
	w.varint(uint64(len(b)))
	w.buf = append(w.buf, b...)
}

func (w *compactWriter) str(s string) {
	w.varint(uint64(len(s)))
	w.buf = append(w.buf, s...)
}

// structBegin opens a nested struct; field deltas restart at 0.
func (w *compactWriter) structBegin() { w.lastID = append(w.lastID, 0) }

// structEnd writes the stop byte and closes the innermost struct.
func (w *compactWriter) structEnd() {
	w.buf = append(w.buf, 0)
	w.lastID = w.lastID[:len(w.lastID)-1]
}

// fieldBegin writes a field header, using the short (delta) form when the id
// is 1..15 above the previous one, as fbthrift does.
func (w *compactWriter) fieldBegin(typ byte, id int16) {
	last := &w.lastID[len(w.lastID)-1]
	if d := int(id) - int(*last); d > 0 && d <= 15 {
		w.buf = append(w.buf, byte(d<<4)|typ)
	} else {
		w.buf = append(w.buf, typ)
		w.i16(id)
	}
	*last = id
}

// boolField carries the value in the type nibble (no payload byte).
func (w *compactWriter) boolField(id int16, v bool) {
	if v {
		w.fieldBegin(ctBoolTrue, id)
	} else {
		w.fieldBegin(ctBoolFalse, id)
	}
}

func (w *compactWriter) listBegin(elemType byte, n int) {
	if n <= 14 {
		w.buf = append(w.buf, byte(n<<4)|elemType)
		return
	}
	w.buf = append(w.buf, 0xF0|elemType)
	w.varint(uint64(n))
}

func (w *compactWriter) mapBegin(keyType, valType byte, n int) {
	w.varint(uint64(n))
	if n > 0 {
		w.buf = append(w.buf, keyType<<4|valType)
	}
}

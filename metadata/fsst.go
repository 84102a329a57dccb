package metadata

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

const fsstImportVersion = 20190218

// fsstDecoder expands FSST-compressed strings (§3.13) with a symbol table
// imported from a string_table's symtab.
type fsstDecoder struct {
	sym [255][8]byte
	len [255]uint8 // 0 = unused code
	// For compareKey: symbol c as a little-endian word and the mask of
	// its len[c] low bytes (256 entries, so a byte indexes them without
	// a bounds check; the escape code 255 is never looked up).
	word [256]uint64
	mask [256]uint64
	// vlen[c] is len[c] of a used code and badLen of an unused one, so
	// that validate's common case sums lengths without a test per code.
	vlen [256]uint32
}

// badLen is vlen of an unused code: more than any string may decode to.
const badLen = 1 << 20

// newFSSTDecoder parses an exported FSST symbol table. The table must be
// consumed exactly.
func newFSSTDecoder(tab []byte) (*fsstDecoder, error) {
	if len(tab) < 17 {
		return nil, fmt.Errorf("fsst: symbol table too short (%d bytes)", len(tab))
	}
	if v := binary.LittleEndian.Uint64(tab); v>>32 != fsstImportVersion {
		return nil, fmt.Errorf("fsst: bad version word %#x", v)
	}
	d := &fsstDecoder{}
	var hist [8]int
	for i := range hist {
		hist[i] = int(tab[9+i])
	}
	code := 0
	if tab[8]&1 != 0 {
		// Zero-terminated tables have an implicit 1-byte "\0" symbol at
		// code 0 that is counted in the histogram but not stored.
		if hist[0] == 0 {
			return nil, errors.New("fsst: zero-terminated table without 1-byte symbol")
		}
		hist[0]--
		d.len[0] = 1
		code = 1
	}
	p := 17
	// Groups are stored by length 2,3,...,8 and then 1.
	for l := 1; l <= 8; l++ {
		h := l & 7
		symLen := h + 1
		for range hist[h] {
			if code >= 255 {
				return nil, errors.New("fsst: more than 255 symbols")
			}
			if p+symLen > len(tab) {
				return nil, errors.New("fsst: symbol table truncated")
			}
			copy(d.sym[code][:], tab[p:p+symLen])
			d.len[code] = uint8(symLen)
			p += symLen
			code++
		}
	}
	if p != len(tab) {
		return nil, fmt.Errorf("fsst: symbol table size mismatch (%d of %d bytes used)", p, len(tab))
	}
	for c := range d.vlen {
		d.vlen[c] = badLen
	}
	for c := range d.sym {
		d.word[c] = binary.LittleEndian.Uint64(d.sym[c][:])
		if l := d.len[c]; l > 0 {
			d.mask[c] = ^uint64(0) >> (64 - 8*uint(l))
			d.vlen[c] = uint32(l)
		}
	}
	return d, nil
}

// decode expands one compressed string; max bounds the output length.
func (d *fsstDecoder) decode(in []byte, max int) ([]byte, error) {
	return d.decodeAppend(make([]byte, 0, min(len(in)*8, max)), in, max)
}

// decodeAppend appends the decoded in to out; max bounds the decoded
// length of in alone.
func (d *fsstDecoder) decodeAppend(out, in []byte, max int) ([]byte, error) {
	start := len(out)
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c == 0xff {
			i++
			if i >= len(in) {
				return nil, errors.New("fsst: escape at end of string")
			}
			out = append(out, in[i])
		} else {
			n := int(d.len[c])
			if n == 0 {
				return nil, fmt.Errorf("fsst: unused code %d", c)
			}
			out = append(out, d.sym[c][:n]...)
		}
		if len(out)-start > max {
			return nil, fmt.Errorf("fsst: string longer than %d bytes", max)
		}
	}
	return out, nil
}

// validate checks what decodeAppend checks, without decoding: every code
// is used, no escape ends the string and it decodes to at most max bytes.
func (d *fsstDecoder) validate(in []byte, max int) error {
	// A valid string (nearly all) is seen through in one cheap pass; a
	// fault of any kind is then looked for code by code, so that the
	// first one is reported.
	n, i := 0, 0
	for i < len(in) {
		c := in[i]
		if c == 0xff {
			i += 2 // past i: the escape ends the string
			n++
			continue
		}
		n += int(d.vlen[c])
		i++
	}
	if n > max || i > len(in) {
		return d.validateSlow(in, max)
	}
	return nil
}

// validateSlow is validate code by code.
func (d *fsstDecoder) validateSlow(in []byte, max int) error {
	n := 0
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c == 0xff {
			i++
			if i >= len(in) {
				return errors.New("fsst: escape at end of string")
			}
			n++
			continue
		}
		l := int(d.len[c])
		if l == 0 {
			return fmt.Errorf("fsst: unused code %d", c)
		}
		n += l
	}
	if n > max {
		return fmt.Errorf("fsst: string longer than %d bytes", max)
	}
	return nil
}

// appendValid is decodeAppend for input that validate has accepted
// before: no checks, and each symbol is copied as one 8-byte word. On
// other input it returns garbage but stays in bounds.
func (d *fsstDecoder) appendValid(out, in []byte) []byte {
	n := len(out)
	out = slices.Grow(out, 8*len(in))
	buf := out[:cap(out)]
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c == 0xff {
			i++
			if i == len(in) {
				break
			}
			buf[n] = in[i]
			n++
			continue
		}
		*(*[8]byte)(buf[n : n+8]) = d.sym[c]
		n += int(d.len[c])
	}
	return buf[:n]
}

// compareValid compares the decoded in (validated before, as for
// appendValid, and likewise in bounds otherwise) with name, stopping at
// the first difference.
func (d *fsstDecoder) compareValid(in []byte, name string) int {
	j := 0
	for i := 0; i < len(in); i++ {
		c := in[i]
		var sym []byte
		if c == 0xff {
			i++
			if i == len(in) {
				break
			}
			sym = in[i : i+1]
		} else {
			sym = d.sym[c][:d.len[c]]
		}
		for _, b := range sym {
			switch {
			case j >= len(name) || b > name[j]:
				return 1
			case b < name[j]:
				return -1
			}
			j++
		}
	}
	if j < len(name) {
		return -1
	}
	return 0
}

// keyPad is how many zero bytes follow a key for compareKey.
const keyPad = 8

// compareKey is compareValid for a name given as key[:n] followed by at
// least keyPad zero bytes: each symbol is compared as one word against
// the next 8 bytes of the key, so a comparison costs a few operations
// per symbol rather than per byte. Lookups compare the same name with
// several stored names, so padding it once pays.
func (d *fsstDecoder) compareKey(in, key []byte, n int) int {
	key = key[:n+keyPad]
	j := 0
	for i := 0; i < len(in); i++ {
		c := in[i]
		var w, m uint64
		var l int
		if c == 0xff {
			i++
			if i == len(in) {
				break
			}
			w, m, l = uint64(in[i]), 0xff, 1
		} else {
			w, m, l = d.word[c], d.mask[c], int(d.len[c])
		}
		// j <= n here, so the 8 bytes from j lie inside key.
		if x := (binary.LittleEndian.Uint64(key[j:]) ^ w) & m; x != 0 {
			k := bits.TrailingZeros64(x) >> 3
			if j+k >= n {
				return 1 // the name ended first
			}
			if byte(w>>(8*k)) < key[j+k] {
				return -1
			}
			return 1
		}
		j += l
		if j > n {
			// The symbol matched the padding: the stored string
			// goes on (with zero bytes) past the end of the name.
			return 1
		}
	}
	if j < n {
		return -1
	}
	return 0
}

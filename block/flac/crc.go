package flac

import "encoding/binary"

// CRC-8 (polynomial x^8+x^2+x+1) over the frame header and CRC-16
// (x^16+x^15+x^2+1) over the whole frame, both MSB first with zero initial
// value.
var crc8Table, crc16Table = makeCRCTables()

// crc16Slices[k][v] is the CRC-16 of byte v followed by k zero bytes:
// sixteen bytes are folded in at once (slicing by 16), since the frame CRC
// covers every byte of the stream; the table lookups of a round are
// independent of each other.
var crc16Slices = makeCRC16Slices()

func makeCRC16Slices() (t [16][256]uint16) {
	t[0] = crc16Table
	for k := 1; k < 16; k++ {
		for v := range 256 {
			c := t[k-1][v]
			t[k][v] = c<<8 ^ crc16Table[c>>8]
		}
	}
	return
}

func makeCRCTables() (t8 [256]uint8, t16 [256]uint16) {
	for i := range 256 {
		c8 := uint8(i)
		c16 := uint16(i) << 8
		for range 8 {
			if c8&0x80 != 0 {
				c8 = c8<<1 ^ 0x07
			} else {
				c8 <<= 1
			}
			if c16&0x8000 != 0 {
				c16 = c16<<1 ^ 0x8005
			} else {
				c16 <<= 1
			}
		}
		t8[i], t16[i] = c8, c16
	}
	return
}

func crc8(b []byte) uint8 {
	var c uint8
	for _, x := range b {
		c = crc8Table[c^x]
	}
	return c
}

func crc16(b []byte) uint16 {
	var c uint16
	t := &crc16Slices
	for len(b) >= 16 {
		x := binary.BigEndian.Uint64(b) ^ uint64(c)<<48
		y := binary.BigEndian.Uint64(b[8:])
		// Parenthesized as a tree, not a chain of 16 dependent XORs.
		c = ((t[15][x>>56] ^ t[14][byte(x>>48)]) ^ (t[13][byte(x>>40)] ^ t[12][byte(x>>32)])) ^
			((t[11][byte(x>>24)] ^ t[10][byte(x>>16)]) ^ (t[9][byte(x>>8)] ^ t[8][byte(x)])) ^
			(((t[7][y>>56] ^ t[6][byte(y>>48)]) ^ (t[5][byte(y>>40)] ^ t[4][byte(y>>32)])) ^
				((t[3][byte(y>>24)] ^ t[2][byte(y>>16)]) ^ (t[1][byte(y>>8)] ^ t[0][byte(y)])))
		b = b[16:]
	}
	for _, x := range b {
		c = c<<8 ^ crc16Table[byte(c>>8)^x]
	}
	return c
}

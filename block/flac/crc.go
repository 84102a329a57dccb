package flac

// CRC-8 (polynomial x^8+x^2+x+1) over the frame header and CRC-16
// (x^16+x^15+x^2+1) over the whole frame, both MSB first with zero initial
// value.
var crc8Table, crc16Table = makeCRCTables()

// crc16Slices[k][v] is the CRC-16 of byte v followed by k zero bytes:
// eight bytes are folded in at once (slicing by 8), since the frame CRC
// covers every byte of the stream.
var crc16Slices = makeCRC16Slices()

func makeCRC16Slices() (t [8][256]uint16) {
	t[0] = crc16Table
	for k := 1; k < 8; k++ {
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
	for len(b) >= 8 {
		c = t[7][b[0]^byte(c>>8)] ^ t[6][b[1]^byte(c)] ^ t[5][b[2]] ^ t[4][b[3]] ^
			t[3][b[4]] ^ t[2][b[5]] ^ t[1][b[6]] ^ t[0][b[7]]
		b = b[8:]
	}
	for _, x := range b {
		c = c<<8 ^ crc16Table[byte(c>>8)^x]
	}
	return c
}

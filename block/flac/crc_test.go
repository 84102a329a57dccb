package flac

import (
	"math/rand/v2"
	"testing"
)

func TestCRC16Slicing(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 0; n < 100; n++ {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		var want uint16
		for _, x := range b {
			want = want<<8 ^ crc16Table[byte(want>>8)^x]
		}
		if got := crc16(b); got != want {
			t.Fatalf("%d bytes: crc16 %#04x, bytewise %#04x", n, got, want)
		}
	}
	// Check values: CRC-16/UMTS (polynomial 0x8005, no reflection, zero init).
	if got := crc16([]byte("123456789")); got != 0xfee8 {
		t.Errorf("crc16(123456789) = %#04x, want 0xfee8", got)
	}
	if got := crc8([]byte("123456789")); got != 0xf4 {
		t.Errorf("crc8(123456789) = %#02x, want 0xf4", got)
	}
}

func BenchmarkCRC16(b *testing.B) {
	buf := make([]byte, 8192)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		crc16(buf)
	}
}

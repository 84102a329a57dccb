package metadata

import (
	"testing"
)

// The layout is Linux's: it must agree with the kernel's encoding for
// small and large numbers alike.
func TestDevNumbers(t *testing.T) {
	for _, c := range []struct{ maj, min uint32 }{
		{0, 0}, {1, 3}, {8, 1}, {259, 0}, {4095, 255}, {4096, 256}, {0xfffff, 0xfffff}, {0xffffffff, 0xffffffff},
	} {
		rdev := MakeDev(c.maj, c.min)
		if rdev != linuxMkdev(c.maj, c.min) {
			t.Errorf("MakeDev(%d, %d) = %#x, Linux says %#x", c.maj, c.min, rdev, linuxMkdev(c.maj, c.min))
		}
		if DevMajor(rdev) != c.maj || DevMinor(rdev) != c.min {
			t.Errorf("%d:%d -> %#x -> %d:%d", c.maj, c.min, rdev, DevMajor(rdev), DevMinor(rdev))
		}
	}
}

// linuxMkdev is glibc's makedev, written out independently.
func linuxMkdev(maj, min uint32) uint64 {
	d := uint64(maj&0x00000fff) << 8
	d |= uint64(maj&0xfffff000) << 32
	d |= uint64(min & 0x000000ff)
	d |= uint64(min&0xffffff00) << 12
	return d
}

package metadata

// Device numbers in images use the Linux (glibc) dev_t layout whatever
// system wrote them, so an image reads the same on every host: the
// scanner converts on other systems, and extraction converts back.

// DevMajor returns the major number of rdev.
func DevMajor(rdev uint64) uint32 {
	return uint32((rdev>>8)&0xfff) | uint32((rdev>>32)&^0xfff)
}

// DevMinor returns the minor number of rdev.
func DevMinor(rdev uint64) uint32 {
	return uint32(rdev&0xff) | uint32((rdev>>12)&^0xff)
}

// MakeDev returns the rdev of a device with the given major and minor.
func MakeDev(major, minor uint32) uint64 {
	return uint64(major&0xfff)<<8 | uint64(major&^0xfff)<<32 |
		uint64(minor&0xff) | uint64(minor&^0xff)<<12
}

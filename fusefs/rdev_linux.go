//go:build !386 && !arm

package fusefs

// fuseRdev is rdev as Linux's FUSE carries it: the kernel's 32-bit
// new_encode_dev() form.
func fuseRdev(maj, mnr uint32) uint32 { return mnr&0xff | maj<<8 | (mnr&^0xff)<<12 }

//go:build cgo && !purego && unix

package encode

import "golang.org/x/sys/unix"

// scratchMin is the output size from which the native encoders write into
// a mapping of their own instead of the Go heap. Their room is the whole
// input (a 16 or 64 MiB block) while the result is usually a few percent
// of it: pages of a fresh mapping that the encoder never writes cost no
// memory, and unmapping returns the rest at once, whereas a Go buffer is
// zeroed (so resident) whenever its pages are reused and its garbage stays
// until the collector and scavenger get to it. This keeps the peak RSS of
// a build near the encoders' own tables plus the blocks in flight.
const scratchMin = 1 << 20

// scratch is an output buffer of n bytes for a native encoder.
type scratch struct {
	b      []byte
	mapped bool
}

func newScratch(n int) scratch {
	if n < scratchMin {
		return scratch{b: make([]byte, n)}
	}
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		// No mapping to be had: the Go heap still works.
		return scratch{b: make([]byte, n)}
	}
	return scratch{b: b, mapped: true}
}

// release gives the buffer back; b must not be used afterwards.
func (s scratch) release() {
	if s.mapped {
		_ = unix.Munmap(s.b)
	}
}

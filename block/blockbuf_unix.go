//go:build unix

package block

import "golang.org/x/sys/unix"

// blockBuf is the memory of one decompressed block in the cache. From
// mapMin bytes on it is an anonymous mapping of its own rather than Go
// heap: unmapping it when the block leaves the cache hands its pages back
// to the system at once, whereas a heap buffer would stay as garbage until
// the collector and scavenger got to it, so a process streaming blocks
// through a full cache would hold a good part of a second cache's worth.
// It also makes a slice kept past the block's release fault instead of
// reading whatever reused the memory.
type blockBuf struct {
	b      []byte
	mapped bool
}

// mapMin is the smallest buffer that gets a mapping of its own; below it
// the per-mapping cost (a syscall and a kernel mapping each, of which a
// process has a limited number) outweighs what the heap would waste.
const mapMin = 64 << 10

// hugeMin is the size of a huge page on the common systems; smaller
// buffers cannot use one.
const hugeMin = 2 << 20

// newBlockBuf returns a zeroed buffer of n bytes, mapped when n >= min.
func newBlockBuf(n, min int) blockBuf {
	if n <= 0 {
		return blockBuf{}
	}
	if n >= min {
		b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
		if err == nil {
			if n >= hugeMin {
				adviseHuge(b)
			}
			return blockBuf{b: b[:n:n], mapped: true}
		}
		// Out of mappings (or address space): the heap still works.
	}
	return blockBuf{b: make([]byte, n)}
}

// free gives the memory back; no slice of it may be used afterwards (one
// into a mapping faults).
func (m blockBuf) free() {
	if m.mapped {
		_ = unix.Munmap(m.b[:cap(m.b)])
	}
}

// OffHeap reports whether the cache keeps a decoded block of n bytes
// outside the Go heap (in a mapping of its own).
func OffHeap(n int) bool { return n >= mapMin }

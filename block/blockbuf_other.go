//go:build !unix

package block

// blockBuf is the memory of one decompressed block in the cache. Without
// anonymous mappings it is Go heap, freed by the collector once the cache
// and every reader have let go of it.
type blockBuf struct {
	b      []byte
	mapped bool
}

const mapMin = 64 << 10

func newBlockBuf(n, _ int) blockBuf {
	if n <= 0 {
		return blockBuf{}
	}
	return blockBuf{b: make([]byte, n)}
}

func (m blockBuf) free() {}

// OffHeap reports whether the cache keeps a decoded block of n bytes
// outside the Go heap: never on this system.
func OffHeap(n int) bool { return false }

//go:build cgo && !purego && !unix

package encode

// scratch is an output buffer of n bytes for a native encoder (on the Go
// heap where there is no anonymous mmap).
type scratch struct{ b []byte }

func newScratch(n int) scratch { return scratch{b: make([]byte, n)} }

func (s scratch) release() {}

//go:build !cgo || !liblzma || purego

package encode

const nativeLZMA = false

func newNativeLZMA(so *specOptions) (Compressor, error) { return newLZMACompressor(so) }

func lzmaEncoderName() string { return "" }

// lzmaWorkspace is empty: the pure-Go encoder keeps nothing between inputs.
type lzmaWorkspace struct{}

func (lzmaWorkspace) close() {}

//go:build !cgo || purego

package block

const nativeLZMA = false

func newNativeLZMA(so *specOptions) (Compressor, error) { return newLZMACompressor(so) }

func lzmaEncoderName() string { return "" }

//go:build !cgo || purego

package encode

const nativeZstd = false

func newNativeZstd(so *specOptions) (Compressor, error) { return newZstdCompressor(so) }

func zstdEncoderName() string    { return "" }
func zstdLevelRange() (int, int) { return zstdMinLevel, 22 }

// zstdWorkspace is empty: the pure-Go encoder keeps nothing between inputs.
type zstdWorkspace struct{}

func (zstdWorkspace) close() {}

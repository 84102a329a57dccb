//go:build corecodecs

package block

import "fmt"

// Built with the corecodecs tag: only the core compressions are decoded
// (see codecs_extra.go).

// extraCodecs is false: no lzma, so no lzma blocks read in pieces either.
const extraCodecs = false

func decompressExtra(c Compression, _, _ []byte, _ int64) ([]byte, error) {
	return nil, coreOnly(c)
}

func sizeExtra(c Compression, _ []byte) (int64, error) {
	return 0, coreOnly(c)
}

func coreOnly(c Compression) error {
	if c.Known() {
		return fmt.Errorf("compression %s: this program is built to decode only none, lz4, lz4hc and zstd: %w", c, ErrUnsupported)
	}
	return unsupported(c)
}

// Decodable reports whether this program decodes sections of
// compression c: every known one, or, built with the corecodecs tag, the
// core ones (see Core).
func (c Compression) Decodable() bool { return c.Core() }

//go:build !corecodecs

package block

// The compressions outside the core set (see Core). A program built with
// the corecodecs tag leaves their decoders out: the self-mounting
// runtime (cmd/dwarfs-run), which every packed application carries, is
// built that way, and mkdwarfs --runtime packs only core compressions.

// extraCodecs: every known compression is decoded, lzma blocks in pieces
// among them.
const extraCodecs = true

func coreOnly(c Compression) error { return unsupported(c) }

// decompressExtra decodes a payload of a compression outside the core
// set, into dst's storage when it is large enough.
func decompressExtra(c Compression, src, dst []byte, limit int64) ([]byte, error) {
	switch c {
	case CompBrotli:
		return decompressBrotli(src, dst, limit)
	case CompLZMA:
		return decompressXZ(src, dst, limit)
	case CompRICEPP:
		return decompressRicepp(src, dst, limit)
	case CompFLAC:
		return decompressFLAC(src, dst, limit)
	}
	return nil, unsupported(c)
}

// sizeExtra is UncompressedSize for the compressions outside the core
// set.
func sizeExtra(c Compression, src []byte) (int64, error) {
	switch c {
	case CompBrotli, CompFLAC:
		n, _, err := readUvarint(src)
		return n, err
	case CompRICEPP:
		return riceppSize(src)
	case CompLZMA:
		info, err := parseXZ(src)
		if err != nil {
			return 0, err
		}
		return info.total, nil
	}
	return 0, unsupported(c)
}

// Decodable reports whether this program decodes sections of
// compression c: every known one, or, built with the corecodecs tag, the
// core ones (see Core).
func (c Compression) Decodable() bool { return c.Known() }

// Package tamper changes signed test images the ways an attacker or a
// damaged store could, for the tests of signature verification: the same
// table runs over local files, HTTP and S3, through the library, the
// checker and the mount.
//
// The cases expect an image of at least two data blocks of equal stored
// length followed by the schema, the metadata and a section index, such
// as testimage.NewSpread with "null" compression.
package tamper

import (
	"bytes"
	"crypto/sha512"
	"encoding/binary"
	"fmt"

	"github.com/zeebo/xxh3"

	"github.com/godwarfs/godwarfs/block"
)

// Case is one change to a signed image.
type Case struct {
	Name string
	// Change returns the changed image; it may change img in place.
	Change func(img []byte) []byte
	// Want is text the verification error contains: the section it
	// names ("" for any "section ").
	Want string
	// Checksum: the error wraps block.ErrChecksum (a payload that
	// differs from its header). Mismatch: it wraps imagesig.ErrMismatch
	// (headers that differ from the signed digest).
	Checksum, Mismatch bool
	// BadBlocks are the data blocks whose reads fail when the image
	// still opens verified; OpenFails says a verified open refuses it.
	// LazyBadBlocks, when set, are the blocks whose reads fail instead
	// when the image is opened with lazy block headers (as mounts and
	// remote opens do): a header is compared with the signed digest when
	// it is first read, so a changed block header fails its block only.
	BadBlocks     []int
	OpenFails     bool
	LazyBadBlocks []int
	// Stranger: the image is unchanged, but verified against allowed
	// signers that do not hold the signing key.
	Stranger bool
}

// Cases returns the changes to the image img (unchanged).
func Cases(img []byte) ([]Case, error) {
	bi, err := block.OpenImage(bytes.NewReader(img), int64(len(img)), block.Options{ImageOffset: -1})
	if err != nil {
		return nil, fmt.Errorf("tamper: %w", err)
	}
	one := func(t block.SectionType) (block.Section, error) {
		f := bi.Find(t)
		if len(f) != 1 {
			return block.Section{}, fmt.Errorf("tamper: %d %s sections, want 1", len(f), t)
		}
		return f[0], nil
	}
	meta, err := one(block.SectionMetadata)
	if err != nil {
		return nil, err
	}
	schema, err := one(block.SectionMetadataSchema)
	if err != nil {
		return nil, err
	}
	index, err := one(block.SectionIndex)
	if err != nil {
		return nil, err
	}
	blocks := bi.Blocks()
	if len(blocks) < 2 || blocks[0].Length != blocks[1].Length || blocks[0].Index != 0 || blocks[1].Index != 1 {
		return nil, fmt.Errorf("tamper: the image does not start with two blocks of equal length")
	}
	b0, b1 := blocks[0], blocks[1]
	name := func(s block.Section) string { return fmt.Sprintf("section %d (%s)", s.Index, s.Type) }
	swap := func(b []byte, from, to int64, a, c block.Section) {
		p := bytes.Clone(b[a.HeaderOffset+from : a.End()-to])
		copy(b[a.HeaderOffset+from:], b[c.HeaderOffset+from:c.End()-to])
		copy(b[c.HeaderOffset+from:], p)
	}
	hdr := b0.DataOffset - b0.HeaderOffset
	return []Case{
		{Name: "block bit flip", Change: func(b []byte) []byte { b[b0.DataOffset+100] ^= 4; return b },
			Want: name(b0), Checksum: true, BadBlocks: []int{0}},
		// The XXH3 is not signed: only the signed BLAKE3 tells this
		// block from the one signed; readers that do not verify return
		// it.
		{Name: "block rewritten with its xxh3", Change: func(b []byte) []byte {
			b[b0.DataOffset+100] ^= 4
			RehashXXH3(b, b0.HeaderOffset)
			return b
		}, Want: name(b0) + ": checksum mismatch (blake3", Checksum: true, BadBlocks: []int{0}},
		{Name: "metadata bit flip", Change: func(b []byte) []byte { b[meta.DataOffset+3] ^= 1; return b },
			Want: name(meta), Checksum: true, OpenFails: true},
		{Name: "schema bit flip", Change: func(b []byte) []byte { b[schema.DataOffset+5] ^= 0x10; return b },
			Want: name(schema), Checksum: true, OpenFails: true},
		{Name: "header sha flip", Change: func(b []byte) []byte { b[b1.HeaderOffset+9] ^= 0x80; return b },
			Want: name(b1), OpenFails: true, LazyBadBlocks: []int{1}},
		{Name: "header compression", Change: func(b []byte) []byte { b[b1.HeaderOffset+0x36] = byte(block.CompLZ4); return b },
			Want: name(b1), OpenFails: true, LazyBadBlocks: []int{1}},
		{Name: "index bit flip", Change: func(b []byte) []byte { b[index.DataOffset+2] ^= 1; return b },
			Want: name(index), Mismatch: true, OpenFails: true},
		{Name: "truncated", Change: func(b []byte) []byte { return b[:len(b)-10] }, OpenFails: true},
		{Name: "truncated to the metadata", Change: func(b []byte) []byte { return b[:index.HeaderOffset] },
			Want: name(index) + " missing", Mismatch: true, OpenFails: true},
		{Name: "block payloads swapped", Change: func(b []byte) []byte { swap(b, hdr, 0, b0, b1); return b },
			Want: name(b0), Checksum: true, BadBlocks: []int{0, 1}},
		{Name: "block payloads swapped and rehashed", Change: func(b []byte) []byte {
			swap(b, hdr, 0, b0, b1)
			Rehash(b, b0.HeaderOffset)
			Rehash(b, b1.HeaderOffset)
			return b
		}, Want: name(b0) + ": sha512/256", Mismatch: true, OpenFails: true, LazyBadBlocks: []int{0, 1}},
		// Header and payload together: each section is intact but for its
		// number and place.
		{Name: "whole blocks swapped", Change: func(b []byte) []byte { swap(b, 0, 0, b0, b1); return b },
			Want: name(b0), OpenFails: true, LazyBadBlocks: []int{0, 1}},
		{Name: "whole blocks swapped and renumbered", Change: func(b []byte) []byte {
			swap(b, 0, 0, b0, b1)
			binary.LittleEndian.PutUint32(b[b0.HeaderOffset+0x30:], uint32(b0.Index))
			binary.LittleEndian.PutUint32(b[b1.HeaderOffset+0x30:], uint32(b1.Index))
			Rehash(b, b0.HeaderOffset)
			Rehash(b, b1.HeaderOffset)
			return b
		}, Want: name(b0) + ": sha512/256", Mismatch: true, OpenFails: true, LazyBadBlocks: []int{0, 1}},
		{Name: "metadata rewritten and rehashed", Change: func(b []byte) []byte {
			b[meta.DataOffset+3] ^= 1
			Rehash(b, meta.HeaderOffset)
			return b
		}, Want: name(meta) + ": sha512/256", Mismatch: true, OpenFails: true},
		{Name: "signer not allowed", Change: func(b []byte) []byte { return b },
			Want: "not an allowed signer", Stranger: true, OpenFails: true},
	}, nil
}

// RehashXXH3 recomputes the XXH3-64 of the section whose header is at
// hdr (an offset in img), leaving its SHA-512/256, as a forger who cannot
// match the signed one would.
func RehashXXH3(img []byte, hdr int64) {
	h := img[hdr : hdr+64]
	n := int64(binary.LittleEndian.Uint64(h[0x38:]))
	x := xxh3.New()
	x.Write(h[0x30:])
	x.Write(img[hdr+64 : hdr+64+n])
	binary.LittleEndian.PutUint64(h[0x28:], x.Sum64())
}

// Rehash recomputes the checksums of the section whose header is at hdr
// (an offset in img), as a forger who rewrites a section would.
func Rehash(img []byte, hdr int64) {
	h := img[hdr : hdr+64]
	n := int64(binary.LittleEndian.Uint64(h[0x38:]))
	payload := img[hdr+64 : hdr+64+n]
	x := xxh3.New()
	x.Write(h[0x30:])
	x.Write(payload)
	binary.LittleEndian.PutUint64(h[0x28:], x.Sum64())
	s := sha512.New512_256()
	s.Write(h[0x28:])
	s.Write(payload)
	copy(h[0x08:0x28], s.Sum(nil))
}

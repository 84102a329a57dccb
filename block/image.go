package block

import (
	"crypto/sha512"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/godwarfs/godwarfs/internal/blake3"
	"github.com/godwarfs/godwarfs/internal/mmap"
	"github.com/godwarfs/godwarfs/internal/xxh3"
)

const (
	magic          = "DWARFS"
	majorVersion   = 2
	maxMinor       = 6 // highest minor accepted (upstream HEAD accepts 2.6)
	writeMinor     = 5 // minor written by Writer
	v1HeaderSize   = 8
	v2HeaderSize   = 64
	indexOffsetMax = 1<<48 - 1

	// DefaultMaxBlockSize bounds decompressed BLOCK sections when the caller
	// does not know block_size: mkdwarfs allows at most -S 30.
	DefaultMaxBlockSize = 1 << 30
	// DefaultMaxMetadataSize bounds decompressed non-BLOCK sections.
	DefaultMaxMetadataSize = 1 << 30
	// metadataRatio caps metadata expansion relative to its stored size so a
	// tiny section cannot claim a gigabyte; real metadata compresses far less.
	metadataRatio = 4096
	// metadataMinLimit keeps the ratio rule from rejecting small but
	// legitimately well-compressed metadata.
	metadataMinLimit = 16 << 20
)

// Options controls OpenImage. Note that the zero value means "image starts at
// offset 0"; pass ImageOffset: -1 to auto-detect a prefix.
type Options struct {
	ImageOffset int64  // -1 = auto-detect (notes §1.1), else exact prefix length
	Name        string // file name used in error messages

	// MaxBlockSize bounds the decompressed size of BLOCK sections in
	// ReadDecompressed (0 = DefaultMaxBlockSize). Callers that know the
	// metadata block_size should use ReadDecompressedLimit instead.
	MaxBlockSize int64
	// MaxMetadataSize bounds decompressed non-BLOCK sections
	// (0 = DefaultMaxMetadataSize); additionally such a section may not
	// expand more than 4096x its stored size (but 16 MiB is always allowed).
	MaxMetadataSize int64

	// LazyHeaders defers reading the headers of BLOCK sections, when the
	// image has a valid section index, until each block is first used
	// (as the reference tools do): opening then reads the index and the
	// other sections' headers only, instead of one header per block. A
	// bad block header, or one that disagrees with the index, is reported
	// by the first read of that block. Images without an index are
	// scanned header by header as before.
	LazyHeaders bool
	// CheckStored, with LazyHeaders, verifies the XXH3 checksum of a
	// stored (uncompressed) block when its header is first read: readers
	// that read such blocks piecewise at their offsets never go through
	// ReadRaw's check.
	CheckStored bool
	// CheckSHA makes every payload check (ReadRaw, ReadDecompressed*,
	// CheckPayload) verify the section's SHA-512/256 as well as its
	// XXH3, for readers that trust the headers (a signed image, see
	// package imagesig) and must never use bytes that differ from them.
	CheckSHA bool
}

// lazyHeader is the state of a pending section's header: read once, by
// the first user, under mu. Failed reads are not remembered, so a storage
// fault is retried; damage found in the header is.
type lazyHeader struct {
	mu   sync.Mutex
	done atomic.Bool
	s    Section
	err  error
}

// Image is a parsed section container. Reads use ReadAt (pread); only
// MapRaw maps.
// An Image is immutable after OpenImage and safe for concurrent use.
type Image struct {
	r        io.ReaderAt
	name     string
	offset   int64 // prefix length
	size     int64 // image size excluding prefix
	major    int
	minor    int
	v1       bool
	hasIndex bool
	indexErr error
	sections []Section
	blocks   []Section
	maxBlock int64
	maxMeta  int64
	// lazy holds, per section index, the header state of pending
	// sections (nil when every header was read at open).
	lazy        []lazyHeader
	lazyHeaders bool
	checkStored bool
	checkSHA    bool
	// expect checks each pending header when it is read (ExpectHeaders).
	expect func(Section) error
	// sums are trusted BLAKE3 sums of the sections, by index
	// (ExpectSums): with checkSHA, payloads are checked against them
	// instead of against their headers' SHA-512/256.
	sums [][32]byte
	// sumHash makes the hash of sums. ExpectSums sets it, so that a
	// program that never checks a signature does not link BLAKE3.
	sumHash func() hash.Hash
	// Read buffers of verify: checking every section of an image at open
	// would otherwise leave one garbage buffer per section.
	verifyBufs sync.Pool
}

// OpenImage parses the section structure of the image in r (size bytes
// long). It reads only headers and the section index (with LazyHeaders,
// not even the block headers); payloads are read on demand.
func OpenImage(r io.ReaderAt, size int64, opts Options) (*Image, error) {
	im := &Image{r: r, name: opts.Name, maxBlock: opts.MaxBlockSize, maxMeta: opts.MaxMetadataSize, lazyHeaders: opts.LazyHeaders, checkStored: opts.CheckStored, checkSHA: opts.CheckSHA}
	if im.name == "" {
		im.name = "image"
	}
	if im.maxBlock <= 0 {
		im.maxBlock = DefaultMaxBlockSize
	}
	if im.maxMeta <= 0 {
		im.maxMeta = DefaultMaxMetadataSize
	}
	if size < 0 {
		return nil, fmt.Errorf("%s: negative size %d: %w", im.name, size, ErrCorrupt)
	}
	off := opts.ImageOffset
	if off < 0 {
		var err error
		if off, err = detectOffset(r, size); err != nil {
			return nil, fmt.Errorf("%s: %w", im.name, err)
		}
	} else if off > size {
		return nil, fmt.Errorf("%s: image offset %d beyond file size %d: %w", im.name, off, size, ErrCorrupt)
	}
	im.offset = off
	im.size = size - off

	var fh [8]byte
	if im.size < int64(len(fh)) {
		return nil, fmt.Errorf("%s: file too short (%d bytes at offset %d) for a DwarFS header: %w", im.name, im.size, off, ErrCorrupt)
	}
	if err := im.readAt(fh[:], 0); err != nil {
		return nil, fmt.Errorf("%s: %w", im.name, err)
	}
	if string(fh[:6]) != magic {
		return nil, fmt.Errorf("%s: no DwarFS magic at offset %d: %w", im.name, off, ErrCorrupt)
	}
	im.major, im.minor = int(fh[6]), int(fh[7])
	if im.major != majorVersion || im.minor > maxMinor {
		return nil, fmt.Errorf("%s: format version %d.%d not supported (need 2.0..2.%d): %w", im.name, im.major, im.minor, maxMinor, ErrUnsupported)
	}
	im.v1 = im.minor < 2

	var err error
	switch {
	case im.v1:
		err = im.scanV1()
	default:
		if im.minor >= 4 {
			var ok bool
			ok, im.indexErr = im.readIndex()
			im.hasIndex = ok
		}
		if !im.hasIndex {
			err = im.scanV2()
		}
	}
	if err != nil {
		return nil, err
	}
	var nSchema, nMeta int
	for _, s := range im.sections {
		switch s.Type {
		case SectionBlock:
			im.blocks = append(im.blocks, s)
		case SectionMetadataSchema:
			nSchema++
			if nSchema > 1 {
				return nil, im.sectionErr(s, ErrCorrupt, "more than one METADATA_V2_SCHEMA section")
			}
		case SectionMetadata:
			nMeta++
			if nMeta > 1 {
				return nil, im.sectionErr(s, ErrCorrupt, "more than one METADATA_V2 section")
			}
		}
	}
	return im, nil
}

// readAt reads len(p) bytes at image-relative offset off.
func (im *Image) readAt(p []byte, off int64) error {
	n, err := im.r.ReadAt(p, im.offset+off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("read %d bytes at offset %d: %w", len(p), im.offset+off, err)
}

// scanV1 walks 8-byte v1 section headers after the 8-byte file header.
// v1 has no tolerance for unknown types or compressions (notes §1.5).
func (im *Image) scanV1() error {
	var h [v1HeaderSize]byte
	for pos := int64(8); pos < im.size; {
		idx := len(im.sections)
		if im.size-pos < v1HeaderSize {
			return fmt.Errorf("%s: section %d: truncated section header at offset %d (%d bytes left): %w", im.name, idx, pos, im.size-pos, ErrCorrupt)
		}
		if err := im.readAt(h[:], pos); err != nil {
			return fmt.Errorf("%s: section %d: %w", im.name, idx, err)
		}
		s := Section{
			Index:        idx,
			Number:       uint32(idx),
			Type:         SectionType(binary.LittleEndian.Uint16(h[0:])),
			Compression:  Compression(h[2]),
			HeaderOffset: pos,
			DataOffset:   pos + v1HeaderSize,
			Length:       int64(binary.LittleEndian.Uint32(h[4:])),
		}
		if !s.Type.Known() {
			return im.sectionErr(s, ErrCorrupt, "unknown section type %d at offset %d", uint16(s.Type), pos)
		}
		if !s.Compression.Known() {
			return im.sectionErr(s, ErrCorrupt, "unknown compression %d at offset %d", uint16(s.Compression), pos)
		}
		if s.Length > im.size-s.DataOffset {
			return im.sectionErr(s, ErrCorrupt, "length %d at offset %d runs past end of image (%d bytes)", s.Length, pos, im.size)
		}
		im.sections = append(im.sections, s)
		pos = s.End()
	}
	return nil
}

// HeaderSize is the size of a section header (format version 2).
const HeaderSize = v2HeaderSize

// ParseHeader decodes the section header h (HeaderSize bytes) found at
// image offset pos, for readers that hold headers without an Image (a
// remote source prefetching them). Index is 0, and the length is not
// checked against any image size. It fails when h lacks the section
// magic or has another major version.
func ParseHeader(h []byte, pos int64) (Section, error) {
	s := decodeV2Header(h, pos)
	if string(h[:6]) != magic {
		return s, fmt.Errorf("bad section magic at offset %d: %w", pos, ErrCorrupt)
	}
	if h[6] != majorVersion {
		return s, fmt.Errorf("section header at offset %d has major version %d: %w", pos, h[6], ErrUnsupported)
	}
	s.Length = int64(min(binary.LittleEndian.Uint64(h[0x38:]), 1<<63-1))
	return s, nil
}

// IndexEntry decodes an entry of the section index: the section's type
// and the offset of its header relative to the image start.
func IndexEntry(e uint64) (SectionType, int64) {
	return SectionType(e >> 48), int64(e & indexOffsetMax)
}

// decodeV2Header decodes the fields of a v2 header but its length.
func decodeV2Header(h []byte, pos int64) Section {
	s := Section{
		Number:       binary.LittleEndian.Uint32(h[0x30:]),
		Type:         SectionType(binary.LittleEndian.Uint16(h[0x34:])),
		Compression:  Compression(binary.LittleEndian.Uint16(h[0x36:])),
		HeaderOffset: pos,
		DataOffset:   pos + v2HeaderSize,
		XXH3:         binary.LittleEndian.Uint64(h[0x28:]),
	}
	copy(s.SHA512_256[:], h[0x08:0x28])
	return s
}

// parseV2Header decodes a 64-byte v2 header found at image offset pos.
func (im *Image) parseV2Header(h []byte, idx int, pos int64) (Section, error) {
	s := decodeV2Header(h, pos)
	s.Index = idx
	if string(h[:6]) != magic {
		return s, im.sectionErr(s, ErrCorrupt, "bad section magic at offset %d", pos)
	}
	if h[6] != majorVersion {
		return s, im.sectionErr(s, ErrUnsupported, "section header at offset %d has major version %d", pos, h[6])
	}
	length := binary.LittleEndian.Uint64(h[0x38:])
	if length > uint64(im.size-s.DataOffset) {
		return s, im.sectionErr(s, ErrCorrupt, "length %d at offset %d runs past end of image (%d bytes)", length, pos, im.size)
	}
	s.Length = int64(length)
	return s, nil
}

// scanV2 walks 64-byte v2 headers from the image start to its end.
func (im *Image) scanV2() error {
	var h [v2HeaderSize]byte
	for pos := int64(0); pos < im.size; {
		idx := len(im.sections)
		if im.size-pos < v2HeaderSize {
			return fmt.Errorf("%s: section %d: truncated section header at offset %d (%d bytes left): %w", im.name, idx, pos, im.size-pos, ErrCorrupt)
		}
		if err := im.readAt(h[:], pos); err != nil {
			return fmt.Errorf("%s: section %d: %w", im.name, idx, err)
		}
		s, err := im.parseV2Header(h[:], idx, pos)
		if err != nil {
			return err
		}
		im.sections = append(im.sections, s)
		pos = s.End()
	}
	return nil
}

// readIndex tries the SECTION_INDEX (notes §1.7). It returns false with the
// reason when the index is absent or invalid, in which case the caller scans
// linearly; it never fails the open by itself.
func (im *Image) readIndex() (bool, error) {
	if im.size < v2HeaderSize+8 {
		return false, errors.New("image too small for a section index")
	}
	var tail [8]byte
	if err := im.readAt(tail[:], im.size-8); err != nil {
		return false, err
	}
	last := binary.LittleEndian.Uint64(tail[:])
	if SectionType(last>>48) != SectionIndex {
		return false, errors.New("no section index")
	}
	pos := int64(last & indexOffsetMax)
	if pos > im.size-v2HeaderSize-8 {
		return false, fmt.Errorf("section index offset %d outside image: %w", pos, ErrCorrupt)
	}
	var h [v2HeaderSize]byte
	if err := im.readAt(h[:], pos); err != nil {
		return false, err
	}
	is, err := im.parseV2Header(h[:], 0, pos)
	if err != nil {
		return false, err
	}
	if is.Type != SectionIndex || is.Compression != CompNone || is.Length%8 != 0 || is.End() != im.size || is.Length/8 < 3 {
		return false, fmt.Errorf("invalid section index header at offset %d: %w", pos, ErrCorrupt)
	}
	payload := make([]byte, is.Length) // bounded by the file size check above
	if err := im.readAt(payload, is.DataOffset); err != nil {
		return false, err
	}
	if got := sectionXXH3(is, payload); got != is.XXH3 {
		return false, fmt.Errorf("section index xxh3 mismatch: %w", ErrChecksum)
	}
	n := len(payload) / 8
	entries := make([]uint64, n)
	for i := range entries {
		entries[i] = binary.LittleEndian.Uint64(payload[i*8:])
	}
	if entries[0]&indexOffsetMax != 0 || entries[n-1] != last {
		return false, fmt.Errorf("section index does not start at 0 or does not end with itself: %w", ErrCorrupt)
	}
	secs := make([]Section, 0, n)
	for i := 0; i < n-1; i++ {
		off := int64(entries[i] & indexOffsetMax)
		next := int64(entries[i+1] & indexOffsetMax)
		if next <= off || next-off < v2HeaderSize {
			return false, fmt.Errorf("section index entries %d/%d not sorted or overlapping: %w", i, i+1, ErrCorrupt)
		}
		if typ := SectionType(entries[i] >> 48); im.lazyHeaders && typ == SectionBlock {
			// Read when the block is first used (header).
			secs = append(secs, Section{Index: i, Type: typ, HeaderOffset: off, DataOffset: off + v2HeaderSize, Length: next - off - v2HeaderSize, pending: true})
			continue
		}
		if err := im.readAt(h[:], off); err != nil {
			return false, err
		}
		s, err := im.parseV2Header(h[:], i, off)
		if err != nil {
			return false, err
		}
		if s.Type != SectionType(entries[i]>>48) || s.End() != next {
			return false, fmt.Errorf("section index entry %d disagrees with header at offset %d: %w", i, off, ErrCorrupt)
		}
		secs = append(secs, s)
	}
	is.Index = n - 1
	im.sections = append(secs, is)
	if im.lazyHeaders {
		im.lazy = make([]lazyHeader, len(im.sections))
	}
	return true, nil
}

// Header returns s with its header read and checked: s itself unless it
// is pending. The first call for a pending section reads the header,
// checks that it agrees with the section index (and, with
// Options.CheckStored, verifies a stored block's payload); later calls
// return the result at once. Safe for concurrent use.
func (im *Image) Header(s Section) (Section, error) {
	if !s.pending {
		return s, nil
	}
	if s.Index < 0 || s.Index >= len(im.lazy) || !im.sections[s.Index].pending {
		return Section{}, im.sectionErr(s, ErrCorrupt, "no pending section with this index")
	}
	lh := &im.lazy[s.Index]
	if lh.done.Load() {
		return lh.s, lh.err
	}
	lh.mu.Lock()
	defer lh.mu.Unlock()
	if lh.done.Load() {
		return lh.s, lh.err
	}
	want := im.sections[s.Index]
	var h [v2HeaderSize]byte
	if err := im.readAt(h[:], want.HeaderOffset); err != nil {
		return Section{}, im.sectionErr(want, err, "read header") // retried next time
	}
	got, err := im.parseV2Header(h[:], want.Index, want.HeaderOffset)
	if err == nil && (got.Type != want.Type || got.End() != want.End()) {
		err = im.sectionErr(got, ErrCorrupt, "header at offset %d (%s, %d bytes) disagrees with the section index (%s, %d bytes)",
			want.HeaderOffset, got.Type, got.Length, want.Type, want.Length)
	}
	if err == nil && im.expect != nil {
		err = im.expect(got)
	}
	if err == nil && im.checkStored && got.Compression == CompNone {
		if err = im.verify(got, false); err != nil && !errors.Is(err, ErrChecksum) && !errors.Is(err, ErrCorrupt) {
			return Section{}, err // a read failure: retried next time
		}
	}
	if err != nil {
		got = Section{}
	}
	lh.s, lh.err = got, err
	lh.done.Store(true)
	return got, err
}

// BlockHeader is Header(Block(n)).
func (im *Image) BlockHeader(n int) (Section, error) {
	s, ok := im.Block(n)
	if !ok {
		return Section{}, fmt.Errorf("%s: block %d out of range (%d blocks): %w", im.name, n, len(im.blocks), ErrCorrupt)
	}
	return im.Header(s)
}

// ExpectHeaders makes check part of reading each pending header (see
// Header): an error it returns is that section's error, remembered like
// damage. Headers read before the call are checked now, and their errors
// kept the same way. Callers that know what the headers must hold (a
// signed digest, see package imagesig) use it to check them as they are
// read instead of reading them all at open. It must be called before the
// image is shared with other goroutines.
func (im *Image) ExpectHeaders(check func(Section) error) {
	im.expect = check
	for i := range im.lazy {
		lh := &im.lazy[i]
		lh.mu.Lock()
		if lh.done.Load() && lh.err == nil {
			if err := check(lh.s); err != nil {
				lh.s, lh.err = Section{}, err
			}
		}
		lh.mu.Unlock()
	}
}

// LoadHeaders reads every pending header (see Header) and returns the
// error of the first section that fails. The reads run in parallel: each
// header is its own small read, a round trip on a remote image.
func (im *Image) LoadHeaders() error {
	var pending []Section
	for _, s := range im.sections {
		if s.pending {
			pending = append(pending, s)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	errs := make([]error, len(pending))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(len(pending), 32) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(pending) {
					return
				}
				_, errs[i] = im.Header(pending[i])
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Major returns the format major version (always 2).
func (im *Image) Major() int { return im.major }

// Minor returns the format minor version of the first section.
func (im *Image) Minor() int { return im.minor }

// Offset returns the detected or configured prefix length.
func (im *Image) Offset() int64 { return im.offset }

// Size returns the image size excluding the prefix.
func (im *Image) Size() int64 { return im.size }

// Name returns the name used in error messages.
func (im *Image) Name() string { return im.name }

// HasSectionIndex reports whether a valid SECTION_INDEX was found and used.
func (im *Image) HasSectionIndex() bool { return im.hasIndex }

// IndexError explains why the section index was not used (nil if it was,
// or if the format has no index).
func (im *Image) IndexError() error {
	if im.hasIndex {
		return nil
	}
	return im.indexErr
}

// V1 reports whether the image uses v1 framing (format 2.0/2.1, no checksums).
func (im *Image) V1() bool { return im.v1 }

// Sections returns all sections in file order. The slice is a copy.
func (im *Image) Sections() []Section { return append([]Section(nil), im.sections...) }

// Blocks returns the BLOCK sections in file order; a block's number is its
// position in this slice (notes §1.5), not its section number.
func (im *Image) Blocks() []Section { return append([]Section(nil), im.blocks...) }

// NumBlocks returns len(Blocks()) without copying.
func (im *Image) NumBlocks() int { return len(im.blocks) }

// Block returns BLOCK number n.
func (im *Image) Block(n int) (Section, bool) {
	if n < 0 || n >= len(im.blocks) {
		return Section{}, false
	}
	return im.blocks[n], true
}

// Find returns all sections of type t in file order.
func (im *Image) Find(t SectionType) []Section {
	var out []Section
	for _, s := range im.sections {
		if s.Type == t {
			out = append(out, s)
		}
	}
	return out
}

// ReaderAt returns the underlying reader. Offsets passed to it are file
// offsets: add Offset() to a Section's DataOffset.
func (im *Image) ReaderAt() io.ReaderAt { return im.r }

// checkBounds rejects Section values that do not lie inside the image, so
// that a forged Section can never make us allocate or read out of range.
func (im *Image) checkBounds(s Section) error {
	if s.DataOffset < 0 || s.Length < 0 || s.DataOffset > im.size || s.Length > im.size-s.DataOffset {
		return im.sectionErr(s, ErrCorrupt, "payload [%d,+%d) outside image of %d bytes", s.DataOffset, s.Length, im.size)
	}
	return nil
}

// ReadRaw returns the stored payload of s. On v2 images the XXH3-64
// checksum is verified.
func (im *Image) ReadRaw(s Section) ([]byte, error) {
	return im.ReadRawInto(s, nil)
}

// ReadRawInto is ReadRaw reading into buf's storage when it is large
// enough, for callers that stream many sections through one buffer.
func (im *Image) ReadRawInto(s Section, buf []byte) ([]byte, error) {
	buf, err := im.readRawUnchecked(s, buf)
	if err != nil {
		return nil, err
	}
	if err := im.CheckPayload(s, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// readRawUnchecked reads payload s into buf (grown as needed) without
// checking it.
func (im *Image) readRawUnchecked(s Section, buf []byte) ([]byte, error) {
	s, err := im.Header(s)
	if err != nil {
		return nil, err
	}
	if err := im.checkBounds(s); err != nil {
		return nil, err
	}
	buf = outBuf(buf, s.Length)
	if err := im.readAt(buf, s.DataOffset); err != nil {
		return nil, im.sectionErr(s, err, "read payload")
	}
	return buf, nil
}

// CheckPayload verifies the XXH3-64 of payload s (v2 images), and with
// Options.CheckSHA its SHA-512/256, as ReadRaw does; for payloads MapRaw
// mapped.
func (im *Image) CheckPayload(s Section, payload []byte) error {
	s, err := im.Header(s)
	if err != nil {
		return err
	}
	if !im.v1 {
		if im.checkSHA && im.sums != nil {
			// The signed sum covers what the XXH3 does.
			return im.strongCheck(s, payload)
		}
		if got := sectionXXH3(s, payload); got != s.XXH3 {
			return im.sectionErr(s, ErrChecksum, "checksum mismatch (xxh3 want %016x got %016x)", s.XXH3, got)
		}
		if im.checkSHA {
			return im.strongCheck(s, payload)
		}
	}
	return nil
}

// MapRaw is ReadDecompressed for a stored (uncompressed) section of an
// image kept in file f, which the image's reader reads at the same
// offsets: the payload is mapped read-only instead of read into memory,
// and checked the same way (bounds, size limit) except for the checksum,
// which the caller verifies with CheckPayload before it trusts the
// payload, at a time that suits it (mapping reads nothing yet). It returns
// mmap.ErrUnsupported where mapping does not apply (a compressed section,
// a system without mmap); the caller reads the section then. See
// mmap.Region for the mapping's lifetime.
func (im *Image) MapRaw(s Section, f *os.File) (*mmap.Region, error) {
	s, err := im.Header(s)
	if err != nil {
		return nil, err
	}
	if s.Compression != CompNone {
		return nil, mmap.ErrUnsupported
	}
	if err := im.checkBounds(s); err != nil {
		return nil, err
	}
	if limit := im.Limit(s); s.Length > limit {
		return nil, im.sectionErr(s, ErrTooLarge, "size %d exceeds limit %d", s.Length, limit)
	}
	r, err := mmap.Map(f, im.offset+s.DataOffset, s.Length)
	if err != nil {
		if errors.Is(err, mmap.ErrUnsupported) {
			return nil, err
		}
		return nil, im.sectionErr(s, err, "map payload")
	}
	return r, nil
}

// Limit returns the decompressed-size limit ReadDecompressed applies to s.
func (im *Image) Limit(s Section) int64 {
	if s.Type == SectionBlock {
		return im.maxBlock
	}
	l := max(s.Length*metadataRatio, metadataMinLimit)
	if s.Length > im.maxMeta/metadataRatio { // avoid overflow for huge lengths
		l = im.maxMeta
	}
	return min(l, im.maxMeta)
}

// ReadDecompressed reads s, verifies its XXH3 (v2) and decompresses it with
// the limit from Limit(s).
func (im *Image) ReadDecompressed(s Section) ([]byte, error) {
	return im.ReadDecompressedLimit(s, im.Limit(s))
}

// ReadDecompressedLimit is ReadDecompressed with an explicit limit on the
// decompressed size (e.g. the metadata block_size for BLOCK sections).
func (im *Image) ReadDecompressedLimit(s Section, limit int64) ([]byte, error) {
	data, _, err := im.ReadDecompressedInto(s, limit, nil, nil)
	return data, err
}

// ReadDecompressedInto is ReadDecompressedLimit with caller-owned buffers:
// the payload is read into raw and decoded into dst where their storage
// suffices. It returns the decoded data (which aliases the returned raw
// buffer for CompNone sections) and the raw buffer, to be passed back in
// next time.
func (im *Image) ReadDecompressedInto(s Section, limit int64, raw, dst []byte) (data, rawBuf []byte, err error) {
	if s, err = im.Header(s); err != nil {
		return nil, raw, err
	}
	raw, err = im.ReadRawInto(s, raw)
	if err != nil {
		return nil, raw, err
	}
	if s.Compression == CompNone {
		if int64(len(raw)) > limit {
			return nil, raw, im.sectionErr(s, ErrTooLarge, "size %d exceeds limit %d", len(raw), limit)
		}
		return raw, raw, nil
	}
	out, err := DecompressInto(s.Compression, raw, dst, limit)
	if err != nil {
		return nil, raw, im.sectionErr(s, err, "decompress %s", s.Compression)
	}
	return out, raw, nil
}

// ExpectSums gives the trusted BLAKE3 sum (SectionBLAKE3) of every
// section, by index, from a signed digest (package imagesig): with
// Options.CheckSHA, payloads are then checked against these instead of
// against the SHA-512/256 of their headers, which costs several times
// less CPU per byte. It must be called before the image is shared with
// other goroutines.
func (im *Image) ExpectSums(sums [][32]byte) error {
	if len(sums) != len(im.sections) {
		return fmt.Errorf("%s: %d sums for %d sections: %w", im.name, len(sums), len(im.sections), ErrCorrupt)
	}
	im.sums = sums
	im.sumHash = func() hash.Hash { return blake3.New() }
	return nil
}

// strongCheck compares the strong hash of payload (section s) with the
// trusted one: the signed BLAKE3 when ExpectSums gave it, otherwise the
// SHA-512/256 of the header.
func (im *Image) strongCheck(s Section, payload []byte) error {
	if im.sums != nil {
		if got := sectionSum(im.sumHash(), s, payload); got != im.sums[s.Index] {
			return im.sectionErr(s, ErrChecksum, "checksum mismatch (blake3 want %x got %x)", im.sums[s.Index], got)
		}
		return nil
	}
	if got := sectionSHA(s, payload); got != s.SHA512_256 {
		return im.sectionErr(s, ErrChecksum, "checksum mismatch (sha512/256 want %x got %x)", s.SHA512_256, got)
	}
	return nil
}

// ReadDecompressedAlloc is ReadDecompressedInto decoding into a buffer
// from alloc, which it calls once with the decompressed size, after
// reading and checking the payload and before decoding it (a stored
// section is read straight into that buffer, raw is not used then). The
// data returned is alloc's buffer.
func (im *Image) ReadDecompressedAlloc(s Section, limit int64, raw []byte, alloc func(n int) ([]byte, error)) (data, rawBuf []byte, err error) {
	if s, err = im.Header(s); err != nil {
		return nil, raw, err
	}
	if s.Compression == CompNone {
		if s.Length > limit {
			return nil, raw, im.sectionErr(s, ErrTooLarge, "size %d exceeds limit %d", s.Length, limit)
		}
		dst, err := alloc(int(s.Length))
		if err != nil {
			return nil, raw, err
		}
		out, err := im.ReadRawInto(s, dst)
		return out, raw, err
	}
	if im.checkSHA && !im.v1 {
		return im.readDecompressedVerified(s, limit, raw, alloc)
	}
	raw, err = im.ReadRawInto(s, raw)
	if err != nil {
		return nil, raw, err
	}
	return im.decompressChecked(s, limit, raw, alloc)
}

// readDecompressedVerified is ReadDecompressedAlloc for a compressed
// section with Options.CheckSHA: the strong hash of the payload (see
// strongCheck) is computed on another goroutine while the payload is
// decompressed, and the result is returned only once it matches. A
// block's load then takes the longer of the two rather than their sum
// when a core is idle; when every core is busy decoding (a sequential
// read on two cores) the hash's CPU shows in the wall time, which is why
// signed digests carry BLAKE3 sums (a fraction of SHA-512's cost).
func (im *Image) readDecompressedVerified(s Section, limit int64, raw []byte, alloc func(n int) ([]byte, error)) (data, rawBuf []byte, err error) {
	raw, err = im.readRawUnchecked(s, raw)
	if err != nil {
		return nil, raw, err
	}
	if im.sums == nil {
		// (A signed sum covers what the XXH3 does.)
		if got := sectionXXH3(s, raw); got != s.XXH3 {
			return nil, raw, im.sectionErr(s, ErrChecksum, "checksum mismatch (xxh3 want %016x got %016x)", s.XXH3, got)
		}
	}
	sum := make(chan error, 1)
	go func() { sum <- im.strongCheck(s, raw) }()
	// raw is read by the hash until it is done: wait for it on every
	// path, before raw can be reused.
	data, raw, err = im.decompressChecked(s, limit, raw, alloc)
	if serr := <-sum; serr != nil {
		return nil, raw, serr
	}
	return data, raw, err
}

// decompressChecked decompresses the checked payload raw of section s.
func (im *Image) decompressChecked(s Section, limit int64, raw []byte, alloc func(n int) ([]byte, error)) (data, rawBuf []byte, err error) {
	n, err := UncompressedSize(s.Compression, raw)
	if err != nil || n > limit {
		// The decoder rejects the framing too, in its own words.
		if _, derr := DecompressInto(s.Compression, raw, nil, limit); derr != nil {
			err = derr
		} else if err == nil {
			err = tooLarge(n, limit)
		}
		return nil, raw, im.sectionErr(s, err, "decompress %s", s.Compression)
	}
	dst, err := alloc(int(n))
	if err != nil {
		return nil, raw, err
	}
	out, err := DecompressInto(s.Compression, raw, dst, limit)
	if err != nil {
		return nil, raw, im.sectionErr(s, err, "decompress %s", s.Compression)
	}
	if int64(len(out)) != n {
		return nil, raw, im.sectionErr(s, ErrCorrupt, "decompress %s: %d bytes, framing declares %d", s.Compression, len(out), n)
	}
	if n > 0 && &out[0] != &dst[0] {
		// A codec that decodes into memory of its own.
		copy(dst, out)
	}
	return dst, raw, nil
}

// VerifyFast checks the XXH3-64 checksum of s. v1 sections carry no
// checksum and always pass.
func (im *Image) VerifyFast(s Section) error {
	return im.verify(s, false)
}

// VerifyFull checks both the XXH3-64 and the SHA-512/256 digest of s.
func (im *Image) VerifyFull(s Section) error {
	return im.verify(s, true)
}

func (im *Image) verify(s Section, full bool) error {
	if im.v1 {
		return nil
	}
	var strong hash.Hash
	if full {
		strong = sha512.New512_256()
		if im.sums != nil {
			strong = im.sumHash()
		}
	}
	s, err := im.streamHash(s, strong)
	if err != nil || !full {
		return err
	}
	var got [32]byte
	strong.Sum(got[:0])
	if im.sums != nil {
		if got != im.sums[s.Index] {
			return im.sectionErr(s, ErrChecksum, "checksum mismatch (blake3 want %x got %x)", im.sums[s.Index], got)
		}
	} else if got != s.SHA512_256 {
		return im.sectionErr(s, ErrChecksum, "checksum mismatch (sha512/256 want %x got %x)", s.SHA512_256, got)
	}
	return nil
}

// streamHash reads v2 section s, checks its XXH3 and, when strong is not
// nil, writes to it what the strong hashes cover (header bytes 0x28..0x3f,
// then the payload). It streams, so that a large block needs no buffer
// of its size. It returns the section with its header read.
func (im *Image) streamHash(s Section, strong hash.Hash) (Section, error) {
	s, err := im.Header(s)
	if err != nil {
		return s, err
	}
	if err := im.checkBounds(s); err != nil {
		return s, err
	}
	var hdr [v2HeaderSize]byte
	putV2Header(hdr[:], s)
	xh := xxh3.New()
	xh.Write(hdr[0x30:])
	var w io.Writer = xh
	if strong != nil {
		strong.Write(hdr[0x28:])
		w = io.MultiWriter(xh, strong)
	}
	sr := io.NewSectionReader(im.r, im.offset+s.DataOffset, s.Length)
	bp, _ := im.verifyBufs.Get().(*[]byte)
	if bp == nil {
		b := make([]byte, 256<<10)
		bp = &b
	}
	n, err := io.CopyBuffer(w, sr, *bp)
	im.verifyBufs.Put(bp)
	if err != nil {
		return s, im.sectionErr(s, err, "read payload")
	}
	if n != s.Length {
		return s, im.sectionErr(s, io.ErrUnexpectedEOF, "read payload")
	}
	if got := xh.Sum64(); got != s.XXH3 {
		return s, im.sectionErr(s, ErrChecksum, "checksum mismatch (xxh3 want %016x got %016x)", s.XXH3, got)
	}
	return s, nil
}

// putV2Header serialises the header of s (version 2.writeMinor) into h.
func putV2Header(h []byte, s Section) {
	copy(h, magic)
	h[6] = majorVersion
	h[7] = writeMinor
	copy(h[0x08:0x28], s.SHA512_256[:])
	binary.LittleEndian.PutUint64(h[0x28:], s.XXH3)
	binary.LittleEndian.PutUint32(h[0x30:], s.Number)
	binary.LittleEndian.PutUint16(h[0x34:], uint16(s.Type))
	binary.LittleEndian.PutUint16(h[0x36:], uint16(s.Compression))
	binary.LittleEndian.PutUint64(h[0x38:], uint64(s.Length))
}

// sectionXXH3 computes the XXH3-64 over header bytes 0x30..0x3f + payload.
func sectionXXH3(s Section, payload []byte) uint64 {
	var hdr [v2HeaderSize]byte
	putV2Header(hdr[:], s)
	h := xxh3.New()
	h.Write(hdr[0x30:])
	h.Write(payload)
	return h.Sum64()
}

// SectionBLAKE3 is the BLAKE3-256 of section s with payload: over the
// same bytes as its SHA-512/256 (header bytes 0x28..0x3f, which hold the
// XXH3, number, type, compression and length, then the payload). Signed
// digests carry it (package imagesig).
func SectionBLAKE3(s Section, payload []byte) [32]byte {
	return sectionSum(blake3.New(), s, payload)
}

// PayloadBLAKE3 reads section s and returns its SectionBLAKE3, checking
// its XXH3 on the way.
func (im *Image) PayloadBLAKE3(s Section) ([32]byte, error) {
	var out [32]byte
	if im.v1 {
		return out, im.sectionErr(s, ErrCorrupt, "a v1 section has no header to hash")
	}
	h := blake3.New()
	if _, err := im.streamHash(s, h); err != nil {
		return out, err
	}
	h.Sum(out[:0])
	return out, nil
}

// sectionSHA computes the SHA-512/256 over header bytes 0x28..0x3f + payload.
func sectionSHA(s Section, payload []byte) [32]byte {
	return sectionSum(sha512.New512_256(), s, payload)
}

// sectionSum feeds h the header bytes 0x28..0x3f of s, then payload, and
// returns its 32-byte sum.
func sectionSum(h hash.Hash, s Section, payload []byte) [32]byte {
	var hdr [v2HeaderSize]byte
	putV2Header(hdr[:], s)
	h.Write(hdr[0x28:])
	h.Write(payload)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

package imagesig

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/block"
)

// Namespace is the SSHSIG namespace of image signatures; ssh-keygen needs
// it as -n.
const Namespace = "dwarfs-image@godwarfs"

// digestPrefix starts every signed digest; the version and a newline follow.
const digestPrefix = "godwarfs-image-digest/"

// DigestVersion is the version of the signed digests Sign writes.
const DigestVersion = 2

const (
	digestHeaderSize = len(digestPrefix) + 2 + 4 + 4 + 8
	digestRecordSize = 2 + 2 + 8 + 8 + 32 // version 1
	// Version 2 records add the section's BLAKE3.
	digestRecordSize2 = digestRecordSize + 32
	flagIndex         = 1
	// maxSections bounds a parsed digest so that a forged count cannot
	// ask for a huge allocation.
	maxSections = 1 << 26
)

// Sentinel errors; every error of this package wraps one of them.
var (
	// ErrFormat reports a malformed signature, digest or allowed signers file.
	ErrFormat = errors.New("malformed")
	// ErrUnsigned reports an image that cannot be signed or has no
	// signature. It is godwarfs.ErrUnsigned, which a reader returns when
	// it is asked for a verified image and given no signature.
	ErrUnsigned = godwarfs.ErrUnsigned
	// ErrSignature reports a signature that does not verify, or a signer
	// that is not allowed.
	ErrSignature = errors.New("signature not valid")
	// ErrMismatch reports an image that differs from what was signed.
	ErrMismatch = errors.New("image differs from the signed digest")
)

// SectionRecord is one section of a signed digest.
type SectionRecord struct {
	Type        block.SectionType
	Compression block.Compression
	Offset      int64 // payload offset, relative to the image start
	Length      int64
	SHA512_256  [32]byte
	// BLAKE3 is the section's block.SectionBLAKE3 (version 2 digests;
	// zero in version 1).
	BLAKE3 [32]byte
}

// Manifest is a decoded signed digest.
type Manifest struct {
	Version      int // of the digest: 1 (headers only) or 2 (with BLAKE3 sums)
	Major, Minor int
	HasIndex     bool
	End          int64
	Sections     []SectionRecord
}

// ManifestOf describes im as a version 1 signed digest would. Every
// section header is read (pending ones from a lazily opened image too);
// no data is.
func ManifestOf(im *block.Image) (*Manifest, error) {
	if im.V1() {
		return nil, fmt.Errorf("%s: format %d.%d has no section hashes: %w", im.Name(), im.Major(), im.Minor(), ErrUnsigned)
	}
	if err := im.LoadHeaders(); err != nil {
		return nil, err
	}
	m := &Manifest{Version: 1, Major: im.Major(), Minor: im.Minor(), HasIndex: im.HasSectionIndex()}
	for _, s := range im.Sections() {
		s, err := im.Header(s) // pending until read: no checksums yet
		if err != nil {
			return nil, err
		}
		m.Sections = append(m.Sections, recordOf(s))
		m.End = max(m.End, s.End())
	}
	return m, nil
}

// ManifestWithSums describes im as a version 2 signed digest would: it
// reads every section and computes its BLAKE3 (checking its XXH3), on
// workers goroutines, except those whose SHA-512/256 known maps to their
// BLAKE3 (block.Writer.Sums: both hashes cover the same bytes).
func ManifestWithSums(im *block.Image, workers int, known map[[32]byte][32]byte) (*Manifest, error) {
	m, err := ManifestOf(im)
	if err != nil {
		return nil, err
	}
	m.Version = 2
	secs := im.Sections()
	var next atomic.Int64
	var g errgroup.Group
	for range max(workers, 1) {
		g.Go(func() error {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(m.Sections) {
					return nil
				}
				if sum, ok := known[m.Sections[i].SHA512_256]; ok {
					m.Sections[i].BLAKE3 = sum
					continue
				}
				sum, err := im.PayloadBLAKE3(secs[i])
				if err != nil {
					next.Store(int64(len(m.Sections)))
					return err
				}
				m.Sections[i].BLAKE3 = sum
			}
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return m, nil
}

// Digest returns the signed digest of im that Sign signs (version
// DigestVersion, see the package documentation), reading and hashing
// every section on workers goroutines.
func Digest(im *block.Image, workers int) ([]byte, error) {
	m, err := ManifestWithSums(im, workers, nil)
	if err != nil {
		return nil, err
	}
	return m.Marshal(), nil
}

func recordSize(version int) int {
	if version >= 2 {
		return digestRecordSize2
	}
	return digestRecordSize
}

// Marshal encodes m as a signed digest of version m.Version.
func (m *Manifest) Marshal() []byte {
	v := max(m.Version, 1)
	b := make([]byte, 0, digestHeaderSize+len(m.Sections)*recordSize(v))
	b = append(b, digestPrefix...)
	b = append(b, byte('0'+v), '\n')
	var flags byte
	if m.HasIndex {
		flags |= flagIndex
	}
	b = append(b, byte(m.Major), byte(m.Minor), flags, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Sections)))
	b = binary.LittleEndian.AppendUint64(b, uint64(m.End))
	for _, s := range m.Sections {
		b = binary.LittleEndian.AppendUint16(b, uint16(s.Type))
		b = binary.LittleEndian.AppendUint16(b, uint16(s.Compression))
		b = binary.LittleEndian.AppendUint64(b, uint64(s.Offset))
		b = binary.LittleEndian.AppendUint64(b, uint64(s.Length))
		b = append(b, s.SHA512_256[:]...)
		if v >= 2 {
			b = append(b, s.BLAKE3[:]...)
		}
	}
	return b
}

// Sums returns the BLAKE3 of each section (nil for a version 1 digest).
func (m *Manifest) Sums() [][32]byte {
	if m.Version < 2 {
		return nil
	}
	sums := make([][32]byte, len(m.Sections))
	for i, s := range m.Sections {
		sums[i] = s.BLAKE3
	}
	return sums
}

// ParseDigest decodes a signed digest of version 1 or 2.
func ParseDigest(b []byte) (*Manifest, error) {
	if len(b) < digestHeaderSize || !bytes.HasPrefix(b, []byte(digestPrefix)) {
		return nil, fmt.Errorf("signed digest: no magic: %w", ErrFormat)
	}
	p := b[len(digestPrefix):]
	if (p[0] != '1' && p[0] != '2') || p[1] != '\n' {
		return nil, fmt.Errorf("signed digest: unsupported version %q: %w", p[:2], ErrFormat)
	}
	m := &Manifest{Version: int(p[0] - '0')}
	rs := recordSize(m.Version)
	p = p[2:]
	m.Major, m.Minor, m.HasIndex = int(p[0]), int(p[1]), p[2]&flagIndex != 0
	if p[2]&^flagIndex != 0 || p[3] != 0 {
		return nil, fmt.Errorf("signed digest: unknown flags %#x/%#x: %w", p[2], p[3], ErrFormat)
	}
	n := binary.LittleEndian.Uint32(p[4:])
	end := binary.LittleEndian.Uint64(p[8:])
	p = p[16:]
	if n > maxSections || uint64(len(p)) != uint64(n)*uint64(rs) {
		return nil, fmt.Errorf("signed digest: %d sections need %d bytes, have %d: %w", n, uint64(n)*uint64(rs), len(p), ErrFormat)
	}
	if end > 1<<62 {
		return nil, fmt.Errorf("signed digest: end %d out of range: %w", end, ErrFormat)
	}
	m.End = int64(end)
	m.Sections = make([]SectionRecord, n)
	for i := range m.Sections {
		r := p[i*rs:]
		s := &m.Sections[i]
		s.Type = block.SectionType(binary.LittleEndian.Uint16(r))
		s.Compression = block.Compression(binary.LittleEndian.Uint16(r[2:]))
		off, l := binary.LittleEndian.Uint64(r[4:]), binary.LittleEndian.Uint64(r[12:])
		if off > 1<<62 || l > 1<<62 {
			return nil, fmt.Errorf("signed digest: section %d: offset or length out of range: %w", i, ErrFormat)
		}
		s.Offset, s.Length = int64(off), int64(l)
		copy(s.SHA512_256[:], r[20:52])
		if m.Version >= 2 {
			copy(s.BLAKE3[:], r[52:84])
		}
	}
	return m, nil
}

// Compare returns nil if got (an image) matches want (what was signed), or
// an error wrapping ErrMismatch that names the first section that differs.
func Compare(want, got *Manifest) error {
	if want.Major != got.Major || want.Minor != got.Minor {
		return fmt.Errorf("format version %d.%d, signed %d.%d: %w", got.Major, got.Minor, want.Major, want.Minor, ErrMismatch)
	}
	for i := range min(len(want.Sections), len(got.Sections)) {
		if err := compareRecord(i, want.Sections[i], got.Sections[i]); err != nil {
			return err
		}
	}
	if len(want.Sections) != len(got.Sections) {
		i := min(len(want.Sections), len(got.Sections))
		if len(got.Sections) < len(want.Sections) {
			return fmt.Errorf("section %d (%s) missing: image has %d sections, signed %d: %w",
				i, want.Sections[i].Type, len(got.Sections), len(want.Sections), ErrMismatch)
		}
		return fmt.Errorf("section %d (%s) not signed: image has %d sections, signed %d: %w",
			i, got.Sections[i].Type, len(got.Sections), len(want.Sections), ErrMismatch)
	}
	if want.HasIndex != got.HasIndex {
		return fmt.Errorf("section index present: %v, signed %v: %w", got.HasIndex, want.HasIndex, ErrMismatch)
	}
	if want.End != got.End {
		return fmt.Errorf("image end %d, signed %d: %w", got.End, want.End, ErrMismatch)
	}
	return nil
}

// compareRecord returns nil if g, section i of an image, is w, its signed
// record, or an error wrapping ErrMismatch that names the section and the
// first field that differs. The BLAKE3 of a version 2 record is not
// compared: it is the payload's, checked when the payload is read.
func compareRecord(i int, w, g SectionRecord) error {
	w.BLAKE3, g.BLAKE3 = [32]byte{}, [32]byte{}
	if w == g {
		return nil
	}
	name := fmt.Sprintf("section %d (%s)", i, g.Type)
	switch {
	case w.Type != g.Type:
		return fmt.Errorf("%s: type, signed %s: %w", name, w.Type, ErrMismatch)
	case w.Offset != g.Offset || w.Length != g.Length:
		return fmt.Errorf("%s: at %d, %d bytes, signed at %d, %d bytes: %w", name, g.Offset, g.Length, w.Offset, w.Length, ErrMismatch)
	case w.Compression != g.Compression:
		return fmt.Errorf("%s: compression %s, signed %s: %w", name, g.Compression, w.Compression, ErrMismatch)
	default:
		return fmt.Errorf("%s: sha512/256 %x, signed %x: %w", name, g.SHA512_256, w.SHA512_256, ErrMismatch)
	}
}

func recordOf(s block.Section) SectionRecord {
	return SectionRecord{Type: s.Type, Compression: s.Compression, Offset: s.DataOffset, Length: s.Length, SHA512_256: s.SHA512_256}
}

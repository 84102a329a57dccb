package block

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sharedfixtures "github.com/godwarfs/godwarfs/internal/fixtures"
)

// fixtures returns the *.dwarfs files of a fixture directory.
func fixtures(t testing.TB, sub string) []string {
	t.Helper()
	return sharedfixtures.Glob(t, sub+"/*.dwarfs")
}

func openFile(t testing.TB, path string, opts Options) (*Image, []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Name == "" {
		opts.Name = filepath.Base(path)
	}
	im, err := OpenImage(bytes.NewReader(data), int64(len(data)), opts)
	if err != nil {
		t.Fatalf("OpenImage(%s): %v", path, err)
	}
	return im, data
}

func TestSectionTypeAndCompressionStrings(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{SectionBlock.String(), "BLOCK"},
		{SectionMetadataSchema.String(), "METADATA_V2_SCHEMA"},
		{SectionMetadata.String(), "METADATA_V2"},
		{SectionIndex.String(), "SECTION_INDEX"},
		{SectionHistory.String(), "HISTORY"},
		{SectionType(3).String(), "unknown(3)"},
		{CompNone.String(), "NONE"},
		{CompLZ4HC.String(), "LZ4HC"},
		{CompRICEPP.String(), "RICEPP"},
		{Compression(99).String(), "unknown(99)"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q want %q", tc.got, tc.want)
		}
	}
	for name, want := range map[string]Compression{"null": CompNone, "none": CompNone, "zstd": CompZSTD, "lzma": CompLZMA, "lz4": CompLZ4, "lz4hc": CompLZ4HC, "brotli": CompBrotli, "flac": CompFLAC, "ricepp": CompRICEPP, "ZSTD": CompZSTD} {
		got, err := ParseCompression(name)
		if err != nil || got != want {
			t.Errorf("ParseCompression(%q) = %v, %v", name, got, err)
		}
	}
	if _, err := ParseCompression("gzip"); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "gzip") {
		t.Errorf("ParseCompression(gzip) err = %v", err)
	}
}

// checkImage verifies and decompresses every section of a well-formed image.
func checkImage(t *testing.T, im *Image) {
	t.Helper()
	secs := im.Sections()
	if len(secs) == 0 {
		t.Fatal("no sections")
	}
	if len(im.Find(SectionMetadataSchema)) != 1 || len(im.Find(SectionMetadata)) != 1 {
		t.Errorf("want exactly one schema and one metadata section, got %d/%d", len(im.Find(SectionMetadataSchema)), len(im.Find(SectionMetadata)))
	}
	nb := 0
	var prevEnd int64 = -1
	for i, s := range secs {
		if s.Index != i {
			t.Errorf("section %d has Index %d", i, s.Index)
		}
		if !im.V1() && s.Number != uint32(i) {
			t.Errorf("section %d has Number %d", i, s.Number)
		}
		if prevEnd >= 0 && s.HeaderOffset != prevEnd {
			t.Errorf("section %d at %d, previous ended at %d", i, s.HeaderOffset, prevEnd)
		}
		prevEnd = s.End()
		if s.Type == SectionBlock {
			nb++
		}
		if err := im.VerifyFull(s); err != nil {
			t.Errorf("VerifyFull: %v", err)
		}
		if err := im.VerifyFast(s); err != nil {
			t.Errorf("VerifyFast: %v", err)
		}
		raw, err := im.ReadRaw(s)
		if err != nil {
			t.Errorf("ReadRaw: %v", err)
			continue
		}
		out, err := im.ReadDecompressed(s)
		if err != nil {
			t.Errorf("ReadDecompressed: %v", err)
			continue
		}
		if us, err := UncompressedSize(s.Compression, raw); err != nil || us != int64(len(out)) {
			t.Errorf("%v: UncompressedSize = %d, %v; decompressed %d", s, us, err, len(out))
		}
	}
	if prevEnd != im.Size() {
		t.Errorf("sections end at %d, image size %d", prevEnd, im.Size())
	}
	if nb != len(im.Blocks()) || nb != im.NumBlocks() {
		t.Errorf("Blocks() = %d, counted %d", len(im.Blocks()), nb)
	}
}

func TestFixtures(t *testing.T) {
	var files []string
	files = append(files, fixtures(t, "reference/images")...)
	files = append(files, fixtures(t, "upstream")...)
	comps := map[Compression]bool{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			im, _ := openFile(t, f, Options{ImageOffset: -1})
			if im.Major() != 2 {
				t.Errorf("major %d", im.Major())
			}
			if im.Minor() >= 4 && len(im.Find(SectionIndex)) == 1 && !im.HasSectionIndex() {
				t.Errorf("index present but not used: %v", im.IndexError())
			}
			for _, s := range im.Sections() {
				comps[s.Compression] = true
			}
			checkImage(t, im)
		})
	}
	for _, c := range []Compression{CompNone, CompZSTD, CompLZMA, CompLZ4, CompBrotli} {
		if !comps[c] {
			t.Errorf("no fixture section used %s", c)
		}
	}
}

func TestUpstreamLayout(t *testing.T) {
	fixtures(t, "upstream")
	im, _ := openFile(t, sharedfixtures.File(t, "upstream/compat-v0.9.10.dwarfs"), Options{ImageOffset: -1})
	want := []struct {
		off int64
		t   SectionType
		n   int64
	}{{0, SectionBlock, 1024}, {1088, SectionBlock, 852}, {2004, SectionMetadataSchema, 1127}, {3195, SectionMetadata, 623}, {3882, SectionHistory, 409}, {4355, SectionIndex, 48}}
	secs := im.Sections()
	if len(secs) != len(want) || !im.HasSectionIndex() || im.Minor() != 5 {
		t.Fatalf("got %d sections, index %v, minor %d", len(secs), im.HasSectionIndex(), im.Minor())
	}
	for i, w := range want {
		if s := secs[i]; s.HeaderOffset != w.off || s.Type != w.t || s.Length != w.n {
			t.Errorf("section %d = %+v, want %+v", i, s, w)
		}
	}
	if secs[0].XXH3 != 0xe75806ea41b2c6d5 {
		t.Errorf("xxh3 %x", secs[0].XXH3)
	}

	v1, _ := openFile(t, sharedfixtures.File(t, "upstream/compat-v0.2.0.dwarfs"), Options{ImageOffset: -1})
	if !v1.V1() || v1.Minor() != 0 || v1.HasSectionIndex() {
		t.Fatalf("v1 image: minor %d v1 %v", v1.Minor(), v1.V1())
	}
	wantV1 := []int64{8, 1040, 2072, 2503, 3238}
	for i, s := range v1.Sections() {
		if s.HeaderOffset != wantV1[i] {
			t.Errorf("v1 section %d at %d want %d", i, s.HeaderOffset, wantV1[i])
		}
	}
}

func TestHeaderAutoDetect(t *testing.T) {
	fixtures(t, "reference/images")
	path := sharedfixtures.File(t, "reference/images/header.dwarfs")
	im, data := openFile(t, path, Options{ImageOffset: -1})
	if im.Offset() <= 0 {
		t.Fatalf("offset %d, want > 0", im.Offset())
	}
	if !bytes.HasPrefix(data[im.Offset():], []byte("DWARFS\x02")) {
		t.Fatal("offset does not point at magic")
	}
	if im.Size() != int64(len(data))-im.Offset() {
		t.Errorf("size %d", im.Size())
	}
	checkImage(t, im)
	// The exact offset works too; 0 does not.
	if _, err := OpenImage(bytes.NewReader(data), int64(len(data)), Options{ImageOffset: im.Offset()}); err != nil {
		t.Errorf("explicit offset: %v", err)
	}
	if _, err := OpenImage(bytes.NewReader(data), int64(len(data)), Options{ImageOffset: 0, Name: "header.dwarfs"}); err == nil || !strings.Contains(err.Error(), "header.dwarfs") {
		t.Errorf("offset 0 on prefixed image: err = %v", err)
	}
	// A large prefix crossing the scan chunk boundary.
	big := append(bytes.Repeat([]byte("DWARFS\x02\x05junk"), detectChunk/11+3), data[im.Offset():]...)
	im2, err := OpenImage(bytes.NewReader(big), int64(len(big)), Options{ImageOffset: -1})
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(len(big) - len(data) + int(im.Offset())); im2.Offset() != want {
		t.Errorf("big prefix: offset %d want %d", im2.Offset(), want)
	}
}

func TestNoSectionIndex(t *testing.T) {
	fixtures(t, "reference/images")
	im, _ := openFile(t, sharedfixtures.File(t, "reference/images/no-section-index.dwarfs"), Options{ImageOffset: -1})
	if im.HasSectionIndex() || len(im.Find(SectionIndex)) != 0 {
		t.Fatal("unexpected index")
	}
	checkImage(t, im)
}

func TestTruncated(t *testing.T) {
	fixtures(t, "reference/images")
	data, err := os.ReadFile(sharedfixtures.File(t, "reference/images/default.dwarfs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 5, 8, 63, 64, 100, len(data) / 2, len(data) - 1} {
		_, err := OpenImage(bytes.NewReader(data[:n]), int64(n), Options{Name: "trunc.dwarfs"})
		if err == nil {
			t.Errorf("truncated to %d: no error", n)
			continue
		}
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "trunc.dwarfs") {
			t.Errorf("truncated to %d: %v", n, err)
		}
	}
}

func TestFlippedByte(t *testing.T) {
	fixtures(t, "reference/images")
	orig, err := os.ReadFile(sharedfixtures.File(t, "reference/images/default.dwarfs"))
	if err != nil {
		t.Fatal(err)
	}
	im0, err := OpenImage(bytes.NewReader(orig), int64(len(orig)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range im0.Sections() {
		if s.Type == SectionIndex {
			continue
		}
		data := bytes.Clone(orig)
		data[s.DataOffset+s.Length/2] ^= 0x40
		im, err := OpenImage(bytes.NewReader(data), int64(len(data)), Options{Name: "flip.dwarfs"})
		if err != nil {
			t.Fatal(err)
		}
		err = im.VerifyFull(im.Sections()[s.Index])
		want := "flip.dwarfs: section " + strconv.Itoa(s.Index) + " (" + s.Type.String() + "): checksum mismatch"
		if !errors.Is(err, ErrChecksum) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("VerifyFull = %v, want prefix %q", err, want)
		}
		var se *SectionError
		if !errors.As(err, &se) || se.Index != s.Index {
			t.Errorf("not a SectionError for %d: %v", s.Index, err)
		}
		if _, err := im.ReadDecompressed(s); !errors.Is(err, ErrChecksum) {
			t.Errorf("ReadDecompressed = %v", err)
		}
	}
	// A flipped bit in the SHA only is caught by VerifyFull, not VerifyFast.
	data := bytes.Clone(orig)
	data[im0.Sections()[0].HeaderOffset+8] ^= 1
	im, _ := OpenImage(bytes.NewReader(data), int64(len(data)), Options{Name: "sha.dwarfs"})
	if err := im.VerifyFast(im.Sections()[0]); err != nil {
		t.Errorf("VerifyFast: %v", err)
	}
	if err := im.VerifyFull(im.Sections()[0]); !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "sha512/256") {
		t.Errorf("VerifyFull: %v", err)
	}
}

func TestBadIndexFallsBack(t *testing.T) {
	fixtures(t, "reference/images")
	orig, err := os.ReadFile(sharedfixtures.File(t, "reference/images/default.dwarfs"))
	if err != nil {
		t.Fatal(err)
	}
	n := len(orig)
	for name, mutate := range map[string]func([]byte){
		"offset outside file": func(d []byte) { d[n-8] = 0xff; d[n-7] = 0xff; d[n-6] = 0xff; d[n-5] = 0x7f },
		"offset to block":     func(d []byte) { copy(d[n-8:n-2], []byte{0, 0, 0, 0, 0, 0}) },
		"entry corrupted":     func(d []byte) { d[n-16] ^= 0x10 },
	} {
		t.Run(name, func(t *testing.T) {
			data := bytes.Clone(orig)
			mutate(data)
			im, err := OpenImage(bytes.NewReader(data), int64(len(data)), Options{Name: "idx.dwarfs"})
			if err != nil {
				// Acceptable only as a clear corruption error (the scan
				// reaches the damaged index section).
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "idx.dwarfs") {
					t.Fatalf("unclear error: %v", err)
				}
				return
			}
			if im.HasSectionIndex() {
				t.Fatal("damaged index was used")
			}
			if im.IndexError() == nil {
				t.Error("no IndexError")
			}
			if len(im.Find(SectionMetadata)) != 1 {
				t.Error("metadata not found by scan")
			}
		})
	}
}

func TestVersionRefused(t *testing.T) {
	mk := func(major, minor byte) []byte {
		var b bytes.Buffer
		w := NewWriter(&b, WriterOptions{})
		w.WriteSection(SectionMetadataSchema, CompNone, []byte("s"))
		w.WriteSection(SectionMetadata, CompNone, []byte("m"))
		w.Close()
		d := b.Bytes()
		d[6], d[7] = major, minor
		return d
	}
	for _, v := range [][2]byte{{2, 7}, {3, 0}, {1, 5}} {
		d := mk(v[0], v[1])
		_, err := OpenImage(bytes.NewReader(d), int64(len(d)), Options{ImageOffset: 0, Name: "v.dwarfs"})
		want := "format version " + string(rune('0'+v[0])) + "." + string(rune('0'+v[1]))
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), want) {
			t.Errorf("version %d.%d: %v", v[0], v[1], err)
		}
	}
	d := mk(2, 6)
	if _, err := OpenImage(bytes.NewReader(d), int64(len(d)), Options{ImageOffset: 0}); err != nil {
		t.Errorf("2.6 refused: %v", err)
	}
}

func TestUnknownSectionAndCompression(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b, WriterOptions{})
	w.WriteSection(SectionBlock, CompFLAC, []byte("flac?"))
	w.WriteSection(SectionType(42), CompNone, []byte("future"))
	w.WriteSection(SectionMetadataSchema, CompNone, []byte("s"))
	w.WriteSection(SectionMetadata, Compression(77), []byte("m"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	im, err := OpenImage(bytes.NewReader(b.Bytes()), int64(b.Len()), Options{Name: "u.dwarfs", ImageOffset: -1})
	if err != nil {
		t.Fatal(err)
	}
	secs := im.Sections()
	if secs[1].Type.String() != "unknown(42)" || secs[1].Type.Known() {
		t.Errorf("type %v", secs[1].Type)
	}
	// FLAC is decoded; this payload is no FLAC block.
	if _, err := im.ReadDecompressed(secs[0]); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "flac header") {
		t.Errorf("FLAC: %v", err)
	}
	if _, err := im.ReadDecompressed(secs[3]); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "unknown(77)") {
		t.Errorf("77: %v", err)
	}
	if out, err := im.ReadDecompressed(secs[1]); err != nil || string(out) != "future" {
		t.Errorf("unknown type read: %q %v", out, err)
	}
}

func TestForgedSectionBounds(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b, WriterOptions{})
	w.WriteSection(SectionMetadata, CompNone, []byte("m"))
	w.Close()
	im, err := OpenImage(bytes.NewReader(b.Bytes()), int64(b.Len()), Options{ImageOffset: 0})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []Section{{DataOffset: 0, Length: 1 << 40}, {DataOffset: -1, Length: 1}, {DataOffset: 1 << 62, Length: 1 << 62}} {
		if _, err := im.ReadRaw(s); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%+v: %v", s, err)
		}
		if err := im.VerifyFull(s); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%+v: %v", s, err)
		}
	}
}

// TestBadFS opens every corrupt sample and reads everything: only errors,
// no panic, each file done within a second.
func TestBadFS(t *testing.T) {
	files := fixtures(t, "badfs-sample")
	failed := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			defer func() {
				if r := recover(); r != nil {
					done <- errors.New("panic: " + toString(r))
				}
			}()
			done <- exerciseImage(data, 64<<20)
		}()
		select {
		case err := <-done:
			if err != nil && strings.HasPrefix(err.Error(), "panic") {
				t.Errorf("%s: %v", filepath.Base(f), err)
			}
			if err != nil {
				failed++
			}
		case <-time.After(time.Second):
			t.Errorf("%s: not done within 1s", filepath.Base(f))
		}
	}
	t.Logf("%d of %d corrupt samples reported errors", failed, len(files))
}

func toString(v any) string {
	if e, ok := v.(error); ok {
		return e.Error()
	}
	if s, ok := v.(string); ok {
		return s
	}
	return "non-string panic"
}

// exerciseImage opens data and reads every section; it returns the first
// error (or nil when the image is fully readable).
func exerciseImage(data []byte, limit int64) error {
	// With block headers read on first use, damage surfaces later but
	// must be just as harmless.
	if im, err := OpenImage(bytes.NewReader(data), int64(len(data)), Options{ImageOffset: -1, Name: "fuzz", MaxBlockSize: limit, MaxMetadataSize: limit, LazyHeaders: true, CheckStored: true}); err == nil {
		for _, s := range im.Sections() {
			_, _ = im.Header(s)
			_ = im.VerifyFast(s)
			_, _ = im.ReadDecompressed(s)
		}
	}
	im, err := OpenImage(bytes.NewReader(data), int64(len(data)), Options{ImageOffset: -1, Name: "fuzz", MaxBlockSize: limit, MaxMetadataSize: limit})
	if err != nil {
		return err
	}
	var first error
	for _, s := range im.Sections() {
		_ = im.VerifyFull(s)
		if raw, err := im.ReadRaw(s); err == nil {
			_, _ = UncompressedSize(s.Compression, raw)
		}
		if _, err := im.ReadDecompressed(s); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// TestReadIntoMatches reads every section of every fixture through one pair
// of reused buffers and checks the result against the allocating readers.
func TestReadIntoMatches(t *testing.T) {
	var files []string
	files = append(files, fixtures(t, "reference/images")...)
	files = append(files, fixtures(t, "upstream")...)
	var raw, dst []byte
	for _, f := range files {
		im, _ := openFile(t, f, Options{ImageOffset: -1})
		for _, s := range im.Sections() {
			want, err := im.ReadDecompressed(s)
			if err != nil {
				continue // unsupported codecs are covered elsewhere
			}
			var got []byte
			got, raw, err = im.ReadDecompressedInto(s, im.Limit(s), raw, dst)
			if err != nil {
				t.Fatalf("%s %s: %v", filepath.Base(f), s.Type, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s %s: ReadDecompressedInto differs", filepath.Base(f), s.Type)
			}
			if s.Compression != CompNone {
				dst = got
			}
			wantRaw, _ := im.ReadRaw(s)
			if raw2, err := im.ReadRawInto(s, make([]byte, 1, len(wantRaw)+7)); err != nil || !bytes.Equal(raw2, wantRaw) {
				t.Fatalf("%s %s: ReadRawInto differs (%v)", filepath.Base(f), s.Type, err)
			}
			if l := int64(len(want)); l > 0 {
				if _, _, err := im.ReadDecompressedInto(s, l-1, raw, dst); !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s %s: limit below size: %v", filepath.Base(f), s.Type, err)
				}
			}
		}
	}
}

package block

import (
	"bytes"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/zeebo/blake3"
)

// TestCheckSHA: a header whose SHA-512/256 no longer fits the payload (the
// XXH3 still does) reads fine without CheckSHA and fails with it, naming
// the section.
func TestCheckSHA(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{})
	for _, p := range []string{"first block", "second block"} {
		if err := w.WriteSection(SectionBlock, CompNone, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	img := buf.Bytes()
	im, err := OpenImage(bytes.NewReader(img), int64(len(img)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s1 := im.Sections()[1]
	bad := bytes.Clone(img)
	bad[s1.HeaderOffset+8] ^= 1 // first byte of the SHA-512/256
	for _, check := range []bool{false, true} {
		im, err := OpenImage(bytes.NewReader(bad), int64(len(bad)), Options{CheckSHA: check})
		if err != nil {
			t.Fatal(err)
		}
		_, err = im.ReadRaw(im.Sections()[1])
		if !check && err != nil {
			t.Fatalf("without CheckSHA: %v", err)
		}
		if check && (!errors.Is(err, ErrChecksum) || !bytes.Contains([]byte(err.Error()), []byte("section 1 (BLOCK)"))) {
			t.Fatalf("with CheckSHA: got %v", err)
		}
		if _, err := im.ReadRaw(im.Sections()[0]); err != nil {
			t.Fatalf("intact section 0 (CheckSHA %v): %v", check, err)
		}
	}
}

// TestExpectSums: with the trusted BLAKE3 sums of a signed digest, every
// payload check (raw, decompressed, streamed, mapped) compares the
// section's BLAKE3 with its sum, so a wrong sum fails that section alone
// with a blake3 mismatch; the sums must cover every section.
func TestExpectSums(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{})
	text := bytes.Repeat([]byte("a block that compresses well. "), 400)
	comp, payload := testSection(t, CompZSTD, text)
	if comp != CompZSTD {
		t.Fatalf("compress: stored as %v", comp)
	}
	if err := w.WriteSection(SectionBlock, comp, payload); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteSection(SectionBlock, CompNone, []byte("a stored block")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	img := buf.Bytes()
	open := func() *Image {
		im, err := OpenImage(bytes.NewReader(img), int64(len(img)), Options{CheckSHA: true})
		if err != nil {
			t.Fatal(err)
		}
		return im
	}
	im := open()
	var sums [][32]byte
	for _, s := range im.Sections() {
		raw, err := im.ReadRaw(s)
		if err != nil {
			t.Fatal(err)
		}
		sum := SectionBLAKE3(s, raw)
		if streamed, err := im.PayloadBLAKE3(s); err != nil || streamed != sum {
			t.Fatalf("%v: PayloadBLAKE3 %x (%v), SectionBLAKE3 %x", s, streamed, err, sum)
		}
		sums = append(sums, sum)
	}
	if err := open().ExpectSums(sums[:1]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("one sum for %d sections: %v", len(sums), err)
	}
	for bad := range sums {
		wrong := slices.Clone(sums)
		wrong[bad][5] ^= 1
		im := open()
		if err := im.ExpectSums(wrong); err != nil {
			t.Fatal(err)
		}
		for _, s := range im.Sections() {
			reads := map[string]error{}
			_, reads["ReadRaw"] = im.ReadRaw(s)
			_, reads["ReadDecompressed"] = im.ReadDecompressed(s)
			_, _, reads["ReadDecompressedAlloc"] = im.ReadDecompressedAlloc(s, 1<<20, nil, func(n int) ([]byte, error) { return make([]byte, n), nil })
			reads["VerifyFull"] = im.VerifyFull(s)
			for what, err := range reads {
				if s.Index != bad && err != nil {
					t.Errorf("sum %d wrong: %s of intact section %d: %v", bad, what, s.Index, err)
				}
				if s.Index == bad && (!errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "blake3")) {
					t.Errorf("sum %d wrong: %s: got %v, want a blake3 mismatch", bad, what, err)
				}
			}
		}
		if bad != 0 {
			if got, err := im.ReadDecompressed(im.Sections()[0]); err != nil || !bytes.Equal(got, text) {
				t.Errorf("sum %d wrong: section 0 reads %d bytes (%v), want its %d", bad, len(got), err, len(text))
			}
		}
	}
}

// TestWriterSums: the sums a Writer computes as it writes are the
// SectionBLAKE3 of the sections read back, keyed by their SHA-512/256.
func TestWriterSums(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{Sums: true, Header: []byte("a header")})
	for _, p := range []string{"first block", "second block", ""} {
		if err := w.WriteSection(SectionBlock, CompNone, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	img := buf.Bytes()
	im, err := OpenImage(bytes.NewReader(img), int64(len(img)), Options{ImageOffset: -1})
	if err != nil {
		t.Fatal(err)
	}
	sums := w.Sums()
	if len(sums) != len(im.Sections()) {
		t.Fatalf("%d sums for %d sections", len(sums), len(im.Sections()))
	}
	for _, s := range im.Sections() {
		want, err := im.PayloadBLAKE3(s)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := sums[s.SHA512_256]; !ok || got != want {
			t.Errorf("%v: writer's sum %x (%v), read back %x", s, got, ok, want)
		}
	}
	if NewWriter(&buf, WriterOptions{}).Sums() != nil {
		t.Error("a writer without WriterOptions.Sums has sums")
	}
}

// TestBLAKE3KnownAnswers checks the BLAKE3 implementation on this
// target (byte order, SIMD or generic code) against the published
// vectors: signed digests made on one machine are checked on another.
func TestBLAKE3KnownAnswers(t *testing.T) {
	long := make([]byte, 1<<20+1) // many chunks, a partial last one
	for i := range long {
		long[i] = byte(i % 251)
	}
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		{nil, "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"},
		{[]byte("abc"), "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"},
		{long[:1025], "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444"},
	} {
		if got := blake3.Sum256(tc.in); hex.EncodeToString(got[:]) != tc.want {
			t.Errorf("BLAKE3 of %d bytes: %x, want %s", len(tc.in), got, tc.want)
		}
	}
	// Streamed in pieces as PayloadBLAKE3 does, the same as at once.
	h := blake3.New()
	for p := long; len(p) > 0; p = p[min(len(p), 100_003):] {
		h.Write(p[:min(len(p), 100_003)])
	}
	if whole := blake3.Sum256(long); !bytes.Equal(h.Sum(nil), whole[:]) {
		t.Error("BLAKE3 streamed differs from BLAKE3 at once")
	}
}

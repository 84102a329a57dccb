package block

import (
	"bytes"
	"errors"
	"testing"
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

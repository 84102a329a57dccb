package encode

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/block"
	sharedfixtures "github.com/godwarfs/godwarfs/internal/fixtures"
)

// TestFLACReencodeReferenceBlocks decodes the FLAC blocks of the
// reference-built images in the fixtures' codecs/ and encodes their
// samples again.
// With libFLAC 1.4.2 (the version that wrote them) the cgo encoder must
// give the reference's payloads byte for byte; every encoder must give a
// payload that decodes to the same bytes.
func TestFLACReencodeReferenceBlocks(t *testing.T) {
	sameLib := nativeFLAC && strings.HasPrefix(flacEncoderName(), "libFLAC 1.4.2,")
	if !sameLib {
		t.Logf("encoder %q is not libFLAC 1.4.2: checking round trips only", flacEncoderName())
	}
	for _, tc := range []struct {
		image string
		level int // FLAC level of the mkdwarfs level
	}{{"ref-flac-l1.dwarfs", 3}, {"ref-flac-l7.dwarfs", 5}, {"ref-flac-l9.dwarfs", 8}} {
		data, err := os.ReadFile(sharedfixtures.File(t, "codecs", tc.image))
		if err != nil {
			t.Fatal(err)
		}
		im, err := block.OpenImage(bytes.NewReader(data), int64(len(data)), block.Options{ImageOffset: -1})
		if err != nil {
			t.Fatal(err)
		}
		native := &flacCompressor{level: tc.level, native: nativeFLAC}
		purego := &flacCompressor{level: tc.level}
		for _, s := range im.Blocks() {
			if s.Compression != block.CompFLAC {
				continue
			}
			raw, err := im.ReadRaw(s)
			if err != nil {
				t.Fatal(err)
			}
			pcm, err := block.Decompress(block.CompFLAC, raw, 1<<30)
			if err != nil {
				t.Fatalf("%s block %d: %v", tc.image, s.Index, err)
			}
			l, err := block.FLACLayout(raw)
			if err != nil {
				t.Fatal(err)
			}
			for name, c := range map[string]*flacCompressor{"build": native, "purego": purego} {
				out, err := c.CompressPCM(pcm, l)
				if err != nil {
					t.Fatalf("%s block %d %s: %v", tc.image, s.Index, name, err)
				}
				if back, err := block.Decompress(block.CompFLAC, out, int64(len(pcm))); err != nil || !bytes.Equal(back, pcm) {
					t.Errorf("%s block %d %s: round trip failed: %v", tc.image, s.Index, name, err)
				}
				if name == "build" && sameLib && !bytes.Equal(out, raw) {
					t.Errorf("%s block %d: libFLAC payload of %d bytes differs from the reference's %d", tc.image, s.Index, len(out), len(raw))
				}
			}
		}
	}
}

package godwarfs_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/internal/tamper"
	"github.com/godwarfs/godwarfs/internal/testimage"
)

// piecesSpread is a Spread whose blocks of 24 KiB are lzma streams of
// 4 KiB xz blocks, so that its files start and end inside pieces.
func piecesSpread(t *testing.T) *testimage.Spread {
	t.Helper()
	s, err := testimage.NewSpread("lzma:level=1:xz_block_size=12", 3*8192)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPiecesReadAt reads every file of a multi-block lzma image whole and
// in scattered ranges, and checks that a small read decodes only the
// pieces holding it.
func TestPiecesReadAt(t *testing.T) {
	s := piecesSpread(t)
	im, err := godwarfs.OpenReaderAt(bytes.NewReader(s.Image), int64(len(s.Image)), "pieces.dwarfs", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	cache := imageaccess.Of(im).Cache

	// 100 bytes of d (block 2, from 8 KiB on) need its third piece only.
	f := openFile(t, im, "d")
	buf := make([]byte, 100)
	if _, err := f.ReadAt(buf, 10); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf, s.Files["d"][10:110]) {
		t.Fatal("d: bytes 10..110 differ")
	}
	if !cache.ContainsPiece(2, 2) || cache.Contains(2) {
		t.Errorf("after a read of 100 bytes at 8 KiB of block 2: piece 2 cached %v (want true), whole block cached %v (want false)",
			cache.ContainsPiece(2, 2), cache.Contains(2))
	}
	if st := cache.Stats(); st.DecodedBytes != 4096 {
		t.Errorf("decoded %d bytes for a read within one piece, want 4096", st.DecodedBytes)
	}
	f.Close()

	for name, want := range s.Files {
		f := openFile(t, im, name)
		got, err := io.ReadAll(f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: read whole differs", name)
		}
		// Ranges that start and end inside pieces and cross them.
		for _, r := range [][2]int{{0, 1}, {4000, 200}, {4095, 4098}, {5000, 9000}, {len(want) - 3, 3}} {
			off, n := r[0], min(r[1], len(want)-r[0])
			p := make([]byte, n)
			if _, err := f.ReadAt(p, int64(off)); err != nil {
				t.Fatalf("%s: ReadAt(%d, %d): %v", name, n, off, err)
			}
			if !bytes.Equal(p, want[off:off+n]) {
				t.Errorf("%s: ReadAt(%d, %d) differs", name, n, off)
			}
		}
		f.Close()
	}
}

// TestPiecesCorruptIndex damages the xz index of block 0 (its section
// checksum made to match again) and expects reads of the files in that
// block to fail with an error that names the image and the index, while
// the other blocks still read.
func TestPiecesCorruptIndex(t *testing.T) {
	s := piecesSpread(t)
	img := bytes.Clone(s.Image)
	bi, err := block.OpenImage(bytes.NewReader(img), int64(len(img)), block.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b0 := bi.Blocks()[0]
	end := b0.DataOffset + b0.Length
	// The footer's backward size gives the index; change its first
	// record's uncompressed size.
	indexSize := int64(binary.LittleEndian.Uint32(img[end-8:])+1) * 4
	img[end-12-indexSize+3]++
	tamper.RehashXXH3(img, b0.HeaderOffset)

	im, err := godwarfs.OpenReaderAt(bytes.NewReader(img), int64(len(img)), "pieces.dwarfs", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	for name, want := range s.Files {
		got, err := im.ReadFile(name)
		if s.NeedsBlock(name, 0) {
			if err == nil {
				t.Errorf("%s: read a block with a damaged xz index", name)
			} else if msg := err.Error(); !strings.Contains(msg, "pieces.dwarfs") || !strings.Contains(msg, "xz index crc mismatch") {
				t.Errorf("%s: error %q does not name the image and the damaged index", name, msg)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v (or content differs)", name, err)
		}
	}
}

func openFile(t *testing.T, im *godwarfs.Image, name string) *godwarfs.File {
	t.Helper()
	f, err := im.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	return f.(*godwarfs.File)
}

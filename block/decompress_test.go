package block

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/block/internal/xzfmt"
)

func TestDecompressBombs(t *testing.T) {
	// Forged size prefixes must be rejected before allocating.
	lz4 := binary.LittleEndian.AppendUint32(nil, 1<<31)
	lz4 = append(lz4, 0x10, 'a')
	if _, err := Decompress(CompLZ4, lz4, 1<<32); !errors.Is(err, ErrCorrupt) {
		t.Errorf("lz4 bomb: %v", err)
	}
	if _, err := Decompress(CompLZ4, lz4, 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Errorf("lz4 over limit: %v", err)
	}
	br := binary.AppendUvarint(nil, 1<<40)
	br = append(br, 0x06)
	if _, err := Decompress(CompBrotli, br, 1<<50); !errors.Is(err, ErrCorrupt) {
		t.Errorf("brotli bomb: %v", err)
	}
	// zstd frame declaring 1 GiB with one tiny raw
	z := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xa0}
	z = binary.LittleEndian.AppendUint32(z, 1<<30)
	z = append(z, 0x09, 0x00, 0x00, 'a') // last raw block, size 1
	if _, err := Decompress(CompZSTD, z, 2<<30); !errors.Is(err, ErrCorrupt) {
		t.Errorf("zstd bomb: %v", err)
	}
	// Real data, wrong declared sizes.
	out := testPayload(t, CompBrotli, []byte("hello hello hello hello"))
	bad := append(binary.AppendUvarint(nil, 10), out[1:]...)
	if _, err := Decompress(CompBrotli, bad, 100); !errors.Is(err, ErrCorrupt) {
		t.Errorf("brotli wrong size: %v", err)
	}
	out = testPayload(t, CompLZ4, bytes.Repeat([]byte("abc"), 100))
	binary.LittleEndian.PutUint32(out, 299)
	if _, err := Decompress(CompLZ4, out, 1000); !errors.Is(err, ErrCorrupt) {
		t.Errorf("lz4 wrong size: %v", err)
	}
	out = testPayload(t, CompZSTD, []byte("abc"))
	out = append(out, out...)
	if _, err := Decompress(CompZSTD, out, 1000); !errors.Is(err, ErrCorrupt) {
		t.Errorf("zstd two frames: %v", err)
	}
	if _, err := Decompress(CompRICEPP, []byte{1, 2}, 10); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "ricepp header") {
		t.Errorf("ricepp: %v", err)
	}
	if _, err := Decompress(CompNone, []byte{1, 2, 3}, 2); !errors.Is(err, ErrTooLarge) {
		t.Errorf("none over limit: %v", err)
	}
}

func TestXZDictClamp(t *testing.T) {
	in := bytes.Repeat([]byte("dictionary "), 1000)
	out := testPayload(t, CompLZMA, in)
	// Pretend a 64 MiB preset dictionary was declared, as liblzma does.
	info, err := parseXZ(out)
	if err != nil || len(info.blocks) == 0 {
		t.Fatalf("parseXZ: %v", err)
	}
	big := bytes.Clone(out)
	off := info.blocks[0].offset
	hlen := (int(big[off]) + 1) * 4
	// Find the LZMA2 props byte: last filter property before padding.
	patched := false
	for p := off + 2; p+2 < off+hlen-4; p++ {
		if big[p] == xzfmt.LZMA2FilterID && big[p+1] == 1 {
			big[p+2] = 38 // 1<<30... 768 MiB-ish
			patched = true
			break
		}
	}
	if !patched {
		t.Skip("could not locate LZMA2 filter flags")
	}
	putCRC := func(b []byte) {
		binary.LittleEndian.PutUint32(b[off+hlen-4:], crc32IEEE(b[off:off+hlen-4]))
	}
	putCRC(big)
	got, err := Decompress(CompLZMA, big, int64(len(in)))
	if err != nil || !bytes.Equal(got, in) {
		t.Fatalf("decode with oversized dict: %v", err)
	}
}

func BenchmarkDecompressZSTD(b *testing.B) {
	in := make([]byte, 16<<20)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range in {
		in[i] = byte(r.IntN(16)) // compressible but not trivial
	}
	out := testPayload(b, CompZSTD, in)
	b.SetBytes(int64(len(in)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := Decompress(CompZSTD, out, int64(len(in))); err != nil {
			b.Fatal(err)
		}
	}
}

func crc32IEEE(b []byte) uint32 { return crc32.ChecksumIEEE(b) }

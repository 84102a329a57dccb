package block

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/block/internal/codectest"
)

// packReference lays samples out as the reference's PCM transformer does,
// with plain integer arithmetic (independent of pcmPacker).
func packReference(samples []int64, l PCMLayout) []byte {
	var out []byte
	for _, v := range samples {
		if !l.Signed {
			v += 1 << (l.BitsPerSample - 1)
		}
		if l.LSBPadding {
			v *= 1 << (8*l.BytesPerSample - l.BitsPerSample)
		}
		u := uint64(v) & (1<<(8*l.BytesPerSample) - 1)
		b := make([]byte, l.BytesPerSample)
		for i := range b {
			sh := 8 * i
			if l.BigEndian {
				sh = 8 * (l.BytesPerSample - 1 - i)
			}
			b[i] = byte(u >> sh)
		}
		out = append(out, b...)
	}
	return out
}

func flacPayload(size int64, l PCMLayout, stream []byte) []byte {
	return append(AppendFLACHeader(nil, size, l), stream...)
}

// TestFLACBlockLayouts wraps libFLAC streams in block headers of every
// layout and checks the decoded bytes; the signed little-endian layout
// must also match the MD5 signature libFLAC stored in the stream.
func TestFLACBlockLayouts(t *testing.T) {
	for name, stream := range codectest.Streams(t) {
		info, samples := codectest.Samples(t, stream)
		minBytes := (info.BitsPerSample + 7) / 8
		for _, nb := range []int{minBytes, 4} {
			for flags := 0; flags < 8; flags++ {
				l := PCMLayout{
					Channels: info.Channels, BitsPerSample: info.BitsPerSample, BytesPerSample: nb,
					BigEndian: flags&1 != 0, Signed: flags&2 != 0, LSBPadding: flags&4 != 0,
				}
				want := packReference(samples, l)
				payload := flacPayload(int64(len(want)), l, stream)
				got, err := Decompress(CompFLAC, payload, 1<<30)
				if err != nil {
					t.Fatalf("%s %+v: %v", name, l, err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%s %+v: decoded bytes differ", name, l)
				}
				if l.Signed && !l.BigEndian && !l.LSBPadding && nb == minBytes && md5.Sum(got) != info.MD5 {
					t.Errorf("%s: MD5 %x, libFLAC says %x", name, md5.Sum(got), info.MD5)
				}
				if n, err := UncompressedSize(CompFLAC, payload); err != nil || n != int64(len(want)) {
					t.Errorf("%s: UncompressedSize %d %v", name, n, err)
				}
				gl, err := FLACLayout(payload)
				if err != nil || gl != l {
					t.Errorf("%s: FLACLayout %+v %v, want %+v", name, gl, err, l)
				}
				// Into a buffer that is large enough, and one that is not.
				buf := make([]byte, len(want)+10)
				got, err = DecompressInto(CompFLAC, payload, buf, 1<<30)
				if err != nil || !bytes.Equal(got, want) || &got[0] != &buf[0] {
					t.Errorf("%s: DecompressInto with room: %v", name, err)
				}
				got, err = DecompressInto(CompFLAC, payload, make([]byte, 3), 1<<30)
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s: DecompressInto without room: %v", name, err)
				}
			}
		}
	}
}

func TestFLACHeaderBytes(t *testing.T) {
	l := PCMLayout{Channels: 2, BitsPerSample: 16, BytesPerSample: 2, Signed: true}
	got := AppendFLACHeader(nil, 300, l)
	want := []byte{0xac, 0x02, 0x14, 0x04, 0x13, 0x10, 0x13, 0x41, 0x00}
	if !bytes.Equal(got, want) {
		t.Errorf("header % x, want % x", got, want)
	}
	l = PCMLayout{Channels: 6, BitsPerSample: 20, BytesPerSample: 3, BigEndian: true, LSBPadding: true}
	if got := AppendFLACHeader(nil, 0, l); !bytes.Equal(got, []byte{0, 0x14, 0x0c, 0x13, 20, 0x13, 0xa2, 0}) {
		t.Errorf("header % x", got)
	}
}

func TestFLACBlockErrors(t *testing.T) {
	stream := codectest.Streams(t)["tiny16.flac"]
	info, samples := codectest.Samples(t, stream)
	l := PCMLayout{Channels: info.Channels, BitsPerSample: info.BitsPerSample, BytesPerSample: 2, Signed: true}
	size := int64(len(samples) * 2)
	good := flacPayload(size, l, stream)
	if _, err := Decompress(CompFLAC, good, 1<<20); err != nil {
		t.Fatal(err)
	}
	hdr := func(fields ...byte) []byte {
		return append(append(binary.AppendUvarint(nil, uint64(size)), fields...), stream...)
	}
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)-40] ^= 0x01
	for _, tc := range []struct {
		name  string
		src   []byte
		limit int64
		is    error
		want  string
	}{
		{"empty", nil, 1 << 20, ErrCorrupt, "varint"},
		{"over limit", good, int64(size) - 1, ErrTooLarge, "exceeds limit"},
		{"no stop byte", []byte{0x10, 0x14, 0x04}, 1 << 20, ErrCorrupt, "ends before its stop byte"},
		{"nested struct", hdr(0x1c, 0x00), 1 << 20, ErrCorrupt, "not a scalar"},
		{"missing flags", hdr(0x14, 0x04, 0x13, 0x10, 0x00), 1 << 20, ErrCorrupt, "lacks flags"},
		{"wrong type", hdr(0x15, 0x04, 0x13, 0x10, 0x13, 0x41, 0x00), 1 << 20, ErrCorrupt, "compact type 5"},
		{"unknown flag", hdr(0x14, 0x04, 0x13, 0x10, 0x13, 0x49, 0x00), 1 << 20, ErrUnsupported, "unknown bits"},
		{"too many bits", hdr(0x14, 0x04, 0x13, 0x11, 0x13, 0x41, 0x00), 1 << 20, ErrCorrupt, "17 bits per sample in 2 bytes"},
		{"nine channels", hdr(0x14, 0x12, 0x13, 0x10, 0x13, 0x41, 0x00), 1 << 20, ErrCorrupt, "9 channels"},
		{"channel mismatch", flacPayload(size, PCMLayout{Channels: 1, BitsPerSample: 16, BytesPerSample: 2, Signed: true}, stream), 1 << 20, ErrCorrupt, "block header says 1 of 16"},
		{"bits mismatch", flacPayload(size, PCMLayout{Channels: 2, BitsPerSample: 15, BytesPerSample: 2, Signed: true}, stream), 1 << 20, ErrCorrupt, "block header says 2 of 15"},
		{"partial frame", flacPayload(size+2, l, stream), 1 << 20, ErrCorrupt, "whole number"},
		{"size too large", flacPayload(size+4, l, stream), 1 << 20, ErrCorrupt, "stream ended after"},
		{"size too small", flacPayload(size-4, l, stream), 1 << 20, ErrCorrupt, "more than the"},
		{"forged huge size", flacPayload(1<<40, l, stream), 1 << 41, ErrCorrupt, "stream ended after"},
		{"not flac", flacPayload(size, l, []byte("RIFF....")), 1 << 20, ErrCorrupt, "fLaC"},
		{"flipped bit", flipped, 1 << 20, ErrCorrupt, "CRC"},
		{"truncated", good[:len(good)-3], 1 << 20, ErrCorrupt, "frame at offset"},
	} {
		_, err := Decompress(CompFLAC, tc.src, tc.limit)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %v naming %q", tc.name, err, tc.is, tc.want)
		}
	}
	// Frames after the declared size are ignored, as the reference does.
	two := append(flacPayload(size, l, stream), stream[len(stream)-200:]...)
	if _, err := Decompress(CompFLAC, two, 1<<20); err != nil {
		t.Errorf("trailing data: %v", err)
	}
}

// TestFLACForgedSizeAllocation: a tiny payload declaring a huge size must
// fail without allocating anything near that size.
func TestFLACForgedSizeAllocation(t *testing.T) {
	stream := codectest.Streams(t)["tiny16.flac"]
	l := PCMLayout{Channels: 2, BitsPerSample: 16, BytesPerSample: 2, Signed: true}
	src := flacPayload(1<<36, l, stream)
	var before, after runtimeMem
	before.read()
	if _, err := Decompress(CompFLAC, src, 1<<40); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v", err)
	}
	after.read()
	if d := after.total - before.total; d > 16<<20 {
		t.Errorf("allocated %d bytes for a %d-byte payload", d, len(src))
	}
}

func FuzzFLAC(f *testing.F) {
	streams := codectest.Streams(f)
	for _, name := range []string{"tiny16.flac", "s12-mono.flac"} {
		stream := streams[name]
		info, samples := codectest.Samples(f, stream)
		nb := (info.BitsPerSample + 7) / 8
		l := PCMLayout{Channels: info.Channels, BitsPerSample: info.BitsPerSample, BytesPerSample: nb, Signed: true}
		f.Add(flacPayload(int64(len(samples)*nb), l, stream))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		out, err := Decompress(CompFLAC, src, 1<<22)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error of no known class: %v", err)
			}
			return
		}
		if n, err := UncompressedSize(CompFLAC, src); err != nil || n != int64(len(out)) {
			t.Fatalf("decoded %d bytes but UncompressedSize = %d, %v", len(out), n, err)
		}
	})
}

type runtimeMem struct{ total uint64 }

func (m *runtimeMem) read() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.total = s.TotalAlloc
}

// BenchmarkFLAC decodes $GODWARFS_FLAC_BENCH (a 16-bit stereo libFLAC
// stream) as a block; speeds are PCM bytes. Package block/encode's
// BenchmarkFLACEncode encodes it.
func BenchmarkFLAC(b *testing.B) {
	path := os.Getenv("GODWARFS_FLAC_BENCH")
	if path == "" {
		b.Skip("GODWARFS_FLAC_BENCH not set (a 16-bit stereo .flac file)")
	}
	stream, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	info, samples := codectest.Samples(b, stream)
	l := PCMLayout{Channels: info.Channels, BitsPerSample: info.BitsPerSample, BytesPerSample: (info.BitsPerSample + 7) / 8, Signed: true}
	pcm := packReference(samples, l)
	payload := flacPayload(int64(len(pcm)), l, stream)
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(pcm)))
		dst := make([]byte, len(pcm))
		for b.Loop() {
			if _, err := DecompressInto(CompFLAC, payload, dst, int64(len(pcm))); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestPCMLayoutJSON(t *testing.T) {
	// As dwarfsck -d 9 shows the reference's category metadata.
	ref := `{"bits_per_sample":24,"bytes_per_sample":3,"endianness":"big","number_of_channels":1,"padding":"lsb","signedness":"signed"}`
	l, err := ParsePCMLayout([]byte(ref))
	if err != nil {
		t.Fatal(err)
	}
	if want := (PCMLayout{Channels: 1, BitsPerSample: 24, BytesPerSample: 3, BigEndian: true, Signed: true, LSBPadding: true}); l != want {
		t.Errorf("parsed %+v, want %+v", l, want)
	}
	if got := l.MetadataJSON(); got != ref {
		t.Errorf("MetadataJSON %s, want %s", got, ref)
	}
	u8 := PCMLayout{Channels: 2, BitsPerSample: 8, BytesPerSample: 1}
	if got, err := ParsePCMLayout([]byte(u8.MetadataJSON())); err != nil || got != u8 {
		t.Errorf("round trip %+v: %+v %v", u8, got, err)
	}
	for _, bad := range []string{`{}`, `[`, strings.Replace(ref, `"big"`, `"middle"`, 1), strings.Replace(ref, `"padding":"lsb",`, ``, 1)} {
		if _, err := ParsePCMLayout([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

package flac

import (
	"crypto/md5"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// decodeAll decodes a whole stream and returns the STREAMINFO block, the
// MD5 of the samples as libFLAC computes it (interleaved, little endian,
// whole bytes per sample) and the number of samples per channel.
func decodeAll(stream []byte) (StreamInfo, [16]byte, uint64, error) {
	d, err := NewDecoder(stream)
	if err != nil {
		return StreamInfo{}, [16]byte{}, 0, err
	}
	info := d.Info()
	h := md5.New()
	var total uint64
	var buf []byte
	for {
		f, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return info, [16]byte{}, total, err
		}
		bytes := (f.BitsPerSample + 7) / 8
		buf = buf[:0]
		for i := 0; i < f.BlockSize; i++ {
			for _, ch := range f.Samples {
				v := ch[i]
				for b := 0; b < bytes; b++ {
					buf = append(buf, byte(v>>(8*b)))
				}
			}
		}
		h.Write(buf)
		total += uint64(f.BlockSize)
	}
	var sum [16]byte
	copy(sum[:], h.Sum(nil))
	return info, sum, total, nil
}

// TestLibFLACStreams decodes streams written by libFLAC (testdata/*.flac,
// and the directory $GODWARFS_FLAC_DIR if set) and checks the samples
// against the MD5 signature libFLAC put in STREAMINFO.
func TestLibFLACStreams(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.flac")
	if dir := os.Getenv("GODWARFS_FLAC_DIR"); dir != "" {
		more, _ := filepath.Glob(filepath.Join(dir, "*.flac"))
		files = append(files, more...)
	}
	if len(files) == 0 {
		t.Fatal("no test streams")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			info, sum, total, err := decodeAll(data)
			if err != nil {
				t.Fatal(err)
			}
			if total != info.TotalSamples {
				t.Errorf("decoded %d samples per channel, STREAMINFO says %d", total, info.TotalSamples)
			}
			if sum != info.MD5 {
				t.Errorf("sample MD5 %x, STREAMINFO says %x", sum, info.MD5)
			}
		})
	}
}

// TestCorruptStreams flips, cuts and extends a valid stream: every result
// must be an ErrFormat error or a clean decode, never a panic.
func TestCorruptStreams(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.flac")
	if len(files) == 0 {
		t.Fatal("no test streams")
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, b []byte) {
		if _, _, _, err := decodeAll(b); err != nil && !errors.Is(err, ErrFormat) {
			t.Errorf("%s: error %v does not wrap ErrFormat", name, err)
		}
	}
	for i := 0; i < len(data); i += 1 + len(data)/300 {
		b := append([]byte(nil), data...)
		b[i] ^= 0x10
		check("flip", b)
		check("cut", data[:i])
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "missing fLaC stream marker"},
		{"marker only", []byte("fLaC"), "metadata block header at 4 truncated"},
		{"no streaminfo", []byte("fLaC\x84\x00\x00\x00"), "STREAMINFO must be the first"},
		{"short streaminfo", []byte("fLaC\x80\x00\x00\x10"), "claims 16 bytes"},
	} {
		_, _, _, err := decodeAll(tc.in)
		if err == nil || !errors.Is(err, ErrFormat) || !contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestMaxBlockSize(t *testing.T) {
	data, err := os.ReadFile("testdata/tiny16.flac") // frames of 64 samples
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDecoder(data)
	if err != nil {
		t.Fatal(err)
	}
	d.SetMaxBlockSize(64)
	if _, err := d.Next(); err != nil {
		t.Fatalf("64-sample frame with limit 64: %v", err)
	}
	d.SetMaxBlockSize(55) // the last frame has 56
	if _, err := d.Next(); !errors.Is(err, ErrBlockLimit) || !errors.Is(err, ErrFormat) {
		t.Errorf("56-sample frame with limit 55: %v", err)
	}
}

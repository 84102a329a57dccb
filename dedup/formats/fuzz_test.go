package formats

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// checkParts checks what a detector may return for a file of size bytes:
// nothing, or parts of non-negative size that add up to the file.
func checkParts(t *testing.T, parts []Part, size int64) {
	if parts == nil {
		return
	}
	var sum int64
	for _, p := range parts {
		if p.Size < 0 {
			t.Fatalf("negative part: %+v", parts)
		}
		sum += p.Size
	}
	if sum != size {
		t.Fatalf("parts add up to %d, file has %d: %+v", sum, size, parts)
	}
}

func seed(f *testing.F, dir string) {
	files, _ := filepath.Glob(filepath.Join("testdata/ref", dir, "*"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

func FuzzPCMAudio(f *testing.F) {
	seed(f, "pcmaudio")
	f.Add(caf(2, 2, 1, 16, 1<<64-1, make([]byte, 40)))
	f.Add(w64(2, 24, make([]byte, 60)))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkParts(t, DetectPCMAudio(bytes.NewReader(b), int64(len(b)), Options{Log: func(Level, string) {}}), int64(len(b)))
	})
}

func FuzzFITS(f *testing.F) {
	seed(f, "fits")
	f.Fuzz(func(t *testing.T, b []byte) {
		checkParts(t, DetectFITS(bytes.NewReader(b), int64(len(b)), Options{Log: func(Level, string) {}}), int64(len(b)))
	})
}

func FuzzBinary(f *testing.F) {
	seed(f, "binary")
	f.Fuzz(func(t *testing.T, b []byte) {
		checkParts(t, DetectBinary(bytes.NewReader(b), int64(len(b)), Options{}), int64(len(b)))
	})
}

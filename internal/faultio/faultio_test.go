package faultio

import (
	"bytes"
	"errors"
	"io"
	"syscall"
	"testing"
)

func TestReaderAt(t *testing.T) {
	data := []byte("0123456789abcdefghij")
	f := New(bytes.NewReader(data))
	p := make([]byte, 10)
	if n, err := f.ReadAt(p, 0); n != 10 || err != nil || string(p) != "0123456789" {
		t.Fatalf("healthy: %d %v %q", n, err, p)
	}
	f.Fail(5, 2, nil)
	if n, err := f.ReadAt(p, 0); n != 5 || !errors.Is(err, syscall.EIO) || string(p[:n]) != "01234" {
		t.Errorf("over bad range: %d %v", n, err)
	}
	if n, err := f.ReadAt(p[:5], 0); n != 5 || err != nil {
		t.Errorf("before bad range: %d %v", n, err)
	}
	if n, err := f.ReadAt(p, 7); n != 10 || err != nil || string(p) != "789abcdefg" {
		t.Errorf("after bad range: %d %v", n, err)
	}
	if n, err := f.ReadAt(p, 6); n != 0 || !errors.Is(err, syscall.EIO) {
		t.Errorf("inside bad range: %d %v", n, err)
	}
	f.Clear()
	f.Truncate(12)
	if n, err := f.ReadAt(p, 5); n != 7 || err != io.EOF || string(p[:n]) != "56789ab" {
		t.Errorf("truncated: %d %v %q", n, err, p[:n])
	}
	if n, err := f.ReadAt(p, 15); n != 0 || err != io.EOF {
		t.Errorf("past truncation: %d %v", n, err)
	}
	f.Clear()
	if n, err := f.ReadAt(p, 10); n != 10 || err != nil {
		t.Errorf("cleared: %d %v", n, err)
	}
	if f.Failed() != 2 || f.Reads() != 8 {
		t.Errorf("counters: %d failed of %d", f.Failed(), f.Reads())
	}
}

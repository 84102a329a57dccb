//go:build unix

package stattime

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestTimesPast2038: a modification time past 2038 reads back whole
// where Times is needed (and Times says when it is not).
func TestTimesPast2038(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// touch(1), not os.Chtimes: on 32-bit Linux Go sets 32-bit times.
	at := time.Unix(1<<31+5, 123456789)
	touch, err := exec.LookPath("touch")
	if err != nil {
		t.Skipf("skipped: no touch command to set a time past 2038 with: %v", err)
	}
	if out, err := exec.Command(touch, "-d", "@2147483653.123456789", p).CombinedOutput(); err != nil {
		t.Skipf("skipped: touch cannot set a time past 2038 here: %v: %s", err, out)
	}
	_, m, _, ok := Times(p, false)
	if !ok {
		// Seconds only: qemu-user's s390x stat drops the nanoseconds.
		if st, err := os.Stat(p); err != nil || st.ModTime().Unix() != at.Unix() {
			t.Fatalf("Times not used, and stat reads %v (%v), want %v", st.ModTime(), err, at)
		}
		t.Log("stat reads 64-bit times here, so Times is not needed")
		return
	}
	if m != (Time{at.Unix(), int64(at.Nanosecond())}) {
		t.Errorf("mtime %+v, want %v", m, at)
	}
}

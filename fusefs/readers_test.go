//go:build linux && !386 && !arm

package fusefs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMemServesBesideWaitingReads: the driver reads the FUSE device with
// one goroutine and starts another for each READ, which may wait for a
// block; while reads wait in the source, lookups, listings, attributes
// and reads of other files are answered.
func TestMemServesBesideWaitingReads(t *testing.T) {
	m, _ := sampleSource()
	const n = 3
	m.holdFiles(n)
	srv, _ := mountWith(t, m, "no_cache_files", nil)
	errs := readHeld(srv.Dir(), n)
	defer m.releaseHeld(t, errs, n)
	// The bounds only turn a hang into a failure.
	for i := range n {
		select {
		case <-m.entered:
			continue
		case <-time.After(20 * time.Second):
			t.Errorf("%d of %d reads reached the source", i, n)
		}
		break
	}

	done := make(chan error, 1)
	go func() {
		done <- func() error {
			if _, err := os.Lstat(filepath.Join(srv.Dir(), "a", "link")); err != nil {
				return err
			}
			ents, err := os.ReadDir(filepath.Join(srv.Dir(), "a"))
			if err != nil {
				return err
			}
			if len(ents) == 0 {
				return fmt.Errorf("a: empty listing")
			}
			b, err := os.ReadFile(filepath.Join(srv.Dir(), "a", "hello.txt"))
			if err != nil {
				return err
			}
			if string(b) != "hello\n" {
				return fmt.Errorf("a/hello.txt: %q", b)
			}
			return nil
		}()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("beside %d waiting reads: %v", n, err)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("requests beside %d waiting reads were not answered", n)
	}
}

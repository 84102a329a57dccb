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
	for i := range n {
		ino := m.file(0, fmt.Sprintf("h%d", i), []byte(fmt.Sprintf("held %d", i)))
		m.hold[ino] = true
	}
	srv, _ := mountWith(t, m, "no_cache_files", nil)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			b, err := os.ReadFile(filepath.Join(srv.Dir(), fmt.Sprintf("h%d", i)))
			if err == nil && string(b) != fmt.Sprintf("held %d", i) {
				err = fmt.Errorf("h%d: %q", i, b)
			}
			errs <- err
		}()
	}
	defer func() {
		// Released one by one, so that the reads also end (and the
		// mount can go) when they reached the source one at a time.
		go func() {
			for range n {
				m.release <- struct{}{}
			}
		}()
		for range n {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	}()
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

//go:build linux && !386 && !arm

package fusefs_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs/internal/fixtures"
)

func fileSHA(t *testing.T, p string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestOverlay uses the mount as an overlayfs lower layer, the typical
// way to get a writable view of a DwarFS image.
func TestOverlay(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("overlayfs test needs root")
	}
	img := fixtures.File(t, "reference", "images", "default.dwarfs")
	imgHash := fileSHA(t, img)
	srv, _ := mountImage(t, img, "")

	base := t.TempDir()
	// Upper and work dirs on a fresh tmpfs: overlayfs rejects some host
	// filesystems (e.g. another overlay) as upper layer.
	if err := unix.Mount("tmpfs", base, "tmpfs", 0, "size=64m"); err != nil {
		t.Skipf("cannot mount tmpfs for the upper layer: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(base, unix.MNT_DETACH) })
	upper, work, merged := filepath.Join(base, "upper"), filepath.Join(base, "work"), filepath.Join(base, "merged")
	for _, d := range []string{upper, work, merged} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data := "lowerdir=" + srv.Dir() + ",upperdir=" + upper + ",workdir=" + work
	if err := unix.Mount("overlay", merged, "overlay", 0, data); err != nil {
		if errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.EPERM) {
			t.Skipf("overlayfs unavailable: %v", err)
		}
		t.Fatalf("mount overlay: %v", err)
	}
	// Unmount the overlay before the FUSE mount (cleanups run LIFO).
	t.Cleanup(func() {
		if err := unix.Unmount(merged, 0); err != nil {
			t.Errorf("unmount overlay: %v", err)
		}
	})

	lowerHello := fileSHA(t, filepath.Join(srv.Dir(), "a/hello.txt"))
	if got := fileSHA(t, filepath.Join(merged, "a/hello.txt")); got != lowerHello {
		t.Error("read through overlay differs")
	}
	if fileSHA(t, filepath.Join(merged, "data/sparse.bin")) != fileSHA(t, filepath.Join(srv.Dir(), "data/sparse.bin")) {
		t.Error("sparse.bin through overlay differs")
	}
	content := []byte("written through the overlay\n")
	if err := os.WriteFile(filepath.Join(merged, "a/new.txt"), content, 0o644); err != nil {
		t.Fatal(err)
	}
	// Modify an image file: overlayfs copies it up from the FUSE layer.
	f, err := os.OpenFile(filepath.Join(merged, "a/hello.txt"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("more\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if b, err := os.ReadFile(filepath.Join(upper, "a/new.txt")); err != nil || !bytes.Equal(b, content) {
		t.Errorf("new file not in upper: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(upper, "a/hello.txt")); err != nil || string(b) != "hello\nmore\n" {
		t.Errorf("copied-up file in upper: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(srv.Dir(), "a/new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("new file visible in the image mount: %v", err)
	}
	if fileSHA(t, filepath.Join(srv.Dir(), "a/hello.txt")) != lowerHello {
		t.Error("image mount content changed")
	}
	if fileSHA(t, img) != imgHash {
		t.Error("image file changed")
	}
}

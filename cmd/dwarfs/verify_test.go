//go:build linux && !386 && !arm

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/internal/signtest"
)

// TestVerifyMount: -o verify (with paths relative to the directory the
// driver starts in, which the daemon leaves) mounts a signed image and
// refuses one whose signer is not allowed.
func TestVerifyMount(t *testing.T) {
	requireFUSE(t)
	work := t.TempDir()
	img := copyImage(t, work, "fs.dwarfs")
	signtest.SignImage(t, img, filepath.Join(work, "fs.sig"), "me")
	os.WriteFile(filepath.Join(work, "nobody"), []byte("# nobody\n"), 0o644)

	mnt := t.TempDir()
	cmd := exec.Command(buildBinary(t, "dwarfs"), "fs.dwarfs", mnt, "-o", "verify=allowed_signers,signature=fs.sig")
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dwarfs -o verify: %v\n%s", err, out)
	}
	mounted := true
	defer func() {
		if mounted {
			_ = unmount(mnt)
		}
	}()
	if _, err := os.ReadFile(filepath.Join(mnt, "a", "hello.txt")); err != nil {
		t.Fatal(err)
	}
	if err := unmount(mnt); err != nil {
		t.Fatal(err)
	}
	mounted = false

	cmd = exec.Command(buildBinary(t, "dwarfs"), "fs.dwarfs", mnt, "-o", "verify=nobody,signature=fs.sig")
	cmd.Dir = work
	out, err := cmd.CombinedOutput()
	if err == nil {
		_ = unmount(mnt)
		t.Fatal("mounted with a signer that is not allowed")
	}
	if !strings.Contains(string(out), "not an allowed signer") {
		t.Fatalf("error does not say why: %s", out)
	}
}

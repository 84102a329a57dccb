//go:build linux && !386 && !arm

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/dwarfsextract"
	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/mkdwarfs"
)

// TestWritableMount runs the loop of the README: mount an image writable
// (-o upper=), change it, unmount, apply the upper directory; the new
// image has the changes and the old one is unchanged.
func TestWritableMount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a writable mount needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		fixtures.FUSEUnusable(t, err.Error())
	}
	base := t.TempDir()
	// Upper and work on a tmpfs: overlayfs refuses another overlay as
	// its upper layer.
	if err := unix.Mount("tmpfs", base, "tmpfs", 0, "size=64m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(base, unix.MNT_DETACH) })
	img := defaultImage(t)
	before, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	mnt, upper := t.TempDir(), filepath.Join(base, "upper")
	if out, err := exec.Command(buildBinary(t, "dwarfs"), img, mnt, "-o", "upper="+upper).CombinedOutput(); err != nil {
		if strings.Contains(string(out), "fusermount") || strings.Contains(string(out), "permission") {
			fixtures.FUSEUnusable(t, string(out))
		}
		t.Fatalf("dwarfs -o upper: %v\n%s", err, out)
	}
	mounted := true
	t.Cleanup(func() {
		if mounted {
			_ = unix.Unmount(mnt, unix.MNT_DETACH)
		}
	})
	if err := os.WriteFile(filepath.Join(mnt, "written.txt"), []byte("through the writable mount\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(mnt, "a")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(upper, "written.txt")); err != nil {
		t.Fatalf("the change is not in the upper directory: %v", err)
	}
	pid := upperDriverPid(upper)
	if err := unix.Unmount(mnt, 0); err != nil {
		t.Fatalf("unmount: %v", err)
	}
	mounted = false
	// The image's own (detached) mount goes with the overlay, and the
	// driver ends with it.
	if pid == 0 {
		t.Error("no driver process found")
	} else {
		for i := 0; !processGone(pid) && i < 300; i++ {
			time.Sleep(100 * time.Millisecond)
		}
		if !processGone(pid) {
			t.Errorf("driver %d still runs 30s after the overlay was unmounted", pid)
		}
	}
	out := filepath.Join(t.TempDir(), "new.dwarfs")
	var stderr bytes.Buffer
	if code := mkdwarfs.Main(context.Background(), []string{"mkdwarfs", "-i", img, "--apply-upper", upper, "-o", out, "-l", "1", "--log-level", "warn"},
		cli.Stdio{Out: &bytes.Buffer{}, Err: &stderr}); code != 0 {
		t.Fatalf("mkdwarfs --apply-upper: exit %d: %s", code, stderr.String())
	}
	dst := t.TempDir()
	if code := dwarfsextract.Main(context.Background(), []string{"dwarfsextract", "-i", out, "-o", dst}, cli.Stdio{Out: &bytes.Buffer{}, Err: &stderr}); code != 0 {
		t.Fatalf("dwarfsextract: exit %d: %s", code, stderr.String())
	}
	if b, err := os.ReadFile(filepath.Join(dst, "written.txt")); err != nil || string(b) != "through the writable mount\n" {
		t.Errorf("written.txt: %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(dst, "a")); !os.IsNotExist(err) {
		t.Errorf("a: removed in the mount, in the new image: %v", err)
	}
	if after, _ := os.ReadFile(img); !bytes.Equal(before, after) {
		t.Error("the image changed")
	}
}

// upperDriverPid returns the pid of the dwarfs process writing to upper (0: none).
func upperDriverPid(upper string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if bytes.Contains(b, []byte("upper="+upper+"\x00")) {
			return pid
		}
	}
	return 0
}

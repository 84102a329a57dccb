//go:build linux && !386 && !arm

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/internal/fixtures"
)

func requireFUSE(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		fixtures.FUSEUnusable(t, err.Error())
	}
}

// isMounted reports whether dir is a mount point of this mount namespace.
func isMounted(t *testing.T, dir string) bool {
	t.Helper()
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(mi), " "+dir+" ")
}

// copyImage copies the default image into dir as name.
func copyImage(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(defaultImage(t))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAutoMountpoint: --auto-mountpoint mounts fs.dwarfs on fs, creating
// the directory and removing it at unmount; an existing empty directory
// is used and kept; anything else is refused.
func TestAutoMountpoint(t *testing.T) {
	requireFUSE(t)
	bin := buildBinary(t, "dwarfs")
	dir := t.TempDir()
	img := copyImage(t, dir, "fs.dwarfs")
	mnt := filepath.Join(dir, "fs")

	// In the background: the daemon removes the directory it made.
	// The image is given relative to the working directory.
	cmd := exec.Command(bin, "fs.dwarfs", "--auto-mountpoint")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dwarfs --auto-mountpoint: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "a/hello.txt")); err != nil || string(b) != "hello\n" {
		_ = unmount(mnt)
		t.Fatalf("read through auto mount point: %q %v", b, err)
	}
	if err := unmount(mnt); err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(mnt); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Since(start) > 20*time.Second {
			t.Fatal("auto mount point not removed after unmount")
		}
	}

	// In the foreground, with an existing empty directory: kept.
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	fg := exec.Command(bin, img, "--auto-mountpoint", "-f")
	exited := make(chan error, 1)
	if err := fg.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { exited <- fg.Wait() }()
	waitMounted(t, mnt, exited)
	if err := unmount(mnt); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Fatalf("foreground dwarfs: %v", err)
	}
	if fi, err := os.Stat(mnt); err != nil || !fi.IsDir() {
		t.Errorf("existing mount point removed: %v", err)
	}

	// Refusals, each with exit status 1 and nothing mounted.
	if err := os.WriteFile(filepath.Join(mnt, "junk"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	noext := copyImage(t, dir, "noext")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{img, "--auto-mountpoint"}, "cannot find a suitable empty mountpoint directory"},
		{[]string{img, dir, "--auto-mountpoint"}, "cannot combine <mountpoint> with --auto-mountpoint"},
		{[]string{noext, "--auto-mountpoint"}, "cannot select mountpoint directory for file with no extension"},
	} {
		out, err := exec.Command(bin, c.args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), c.want) {
			t.Errorf("%q: %v %s, want exit 1 and %q", c.args, err, out, c.want)
		}
	}
	if isMounted(t, mnt) {
		_ = unmount(mnt)
		t.Error("mounted despite the error")
	}

	// A failed mount removes the directory it created.
	bad := filepath.Join(dir, "bad.dwarfs")
	if err := os.WriteFile(bad, []byte("not an image"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, bad, "--auto-mountpoint").CombinedOutput(); err == nil {
		t.Errorf("bad image mounted: %s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("mount point of a failed mount left behind: %v", err)
	}
}

// TestAutoUnmount: with -o auto_unmount the mount goes away when the
// driver is killed outright; without it a dead mount is left.
func TestAutoUnmount(t *testing.T) {
	requireFUSE(t)
	if _, err := exec.LookPath("fusermount3"); err != nil {
		fixtures.FUSEUnusable(t, "fusermount3 not installed")
	}
	for _, auto := range []bool{true, false} {
		name := "auto_unmount"
		opts := "auto_unmount"
		if !auto {
			name, opts = "default", "cachesize=16m"
		}
		t.Run(name, func(t *testing.T) {
			mnt := t.TempDir()
			cmd := exec.Command(buildBinary(t, "dwarfs"), defaultImage(t), mnt, "-f", "-o", opts)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			waitMounted(t, mnt, exited)
			if b, err := os.ReadFile(filepath.Join(mnt, "a/hello.txt")); err != nil || string(b) != "hello\n" {
				t.Errorf("read: %q %v", b, err)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-exited
			if !auto {
				// The kernel keeps the mount, now without a server.
				if !isMounted(t, mnt) {
					t.Error("mount vanished without auto_unmount")
				}
				if err := unmount(mnt); err != nil {
					t.Fatal(err)
				}
				return
			}
			for start := time.Now(); isMounted(t, mnt); time.Sleep(20 * time.Millisecond) {
				if time.Since(start) > 20*time.Second {
					_ = unmount(mnt)
					t.Fatalf("still mounted after the driver was killed\n%s", stderr.String())
				}
			}
		})
	}
}

// TestAnalysisFile: a daemon given a relative analysis_file writes it
// relative to where dwarfs was started, one path per opened file, in
// the form mkdwarfs --hotness-list reads.
func TestAnalysisFile(t *testing.T) {
	requireFUSE(t)
	work := t.TempDir()
	mnt := t.TempDir()
	cmd := exec.Command(buildBinary(t, "dwarfs"), defaultImage(t), mnt, "-o", "analysis_file=hot.list")
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dwarfs: %v\n%s", err, out)
	}
	mounted := true
	defer func() {
		if mounted {
			_ = unmount(mnt)
		}
	}()
	for _, p := range []string{"data/random.bin", "a/hello.txt", "data/random.bin"} {
		if _, err := os.ReadFile(filepath.Join(mnt, p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := unmount(mnt); err != nil {
		t.Fatal(err)
	}
	mounted = false
	b, err := os.ReadFile(filepath.Join(work, "hot.list"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "data/random.bin\na/hello.txt\n"; got != want {
		t.Errorf("analysis file %q, want %q", got, want)
	}
}

// TestLibfuseThreadOptions: libfuse's clone_fd and max_idle_threads, which
// fstab lines written for the reference may carry, mount (with no effect);
// a bad max_idle_threads value is refused.
func TestLibfuseThreadOptions(t *testing.T) {
	requireFUSE(t)
	bin := buildBinary(t, "dwarfs")
	mnt := t.TempDir()
	if out, err := exec.Command(bin, defaultImage(t), mnt, "-o", "clone_fd,max_idle_threads=4").CombinedOutput(); err != nil {
		t.Fatalf("dwarfs -o clone_fd,max_idle_threads=4: %v\n%s", err, out)
	}
	defer func() {
		if isMounted(t, mnt) {
			_ = unmount(mnt)
		}
	}()
	if b, err := os.ReadFile(filepath.Join(mnt, "a/hello.txt")); err != nil || len(b) == 0 {
		t.Errorf("reading through the mount: %q %v", b, err)
	}
	if err := unmount(mnt); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, defaultImage(t), t.TempDir(), "-o", "max_idle_threads=many").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "invalid value for option max_idle_threads") {
		t.Errorf("max_idle_threads=many: %v\n%s", err, out)
	}
}

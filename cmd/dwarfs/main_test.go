//go:build linux && !386 && !arm

package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs/internal/fixtures"
)

// defaultImage is the image the tests mount.
func defaultImage(t *testing.T) string {
	return fixtures.File(t, "reference", "images", "default.dwarfs")
}

// binDir holds the binary built once by TestMain, plus helper-named links.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dwarfs-bin")
	if err != nil {
		panic(err)
	}
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "dwarfs"), ".").CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		panic("go build: " + err.Error() + "\n" + string(out))
	}
	for _, n := range []string{"mount.dwarfs", "mount.fuse.dwarfs"} {
		if err := os.Symlink("dwarfs", filepath.Join(dir, n)); err != nil {
			panic(err)
		}
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func buildBinary(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join(binDir, name)
}

func unmount(dir string) error {
	var err error
	for _, bin := range []string{"fusermount3", "fusermount"} {
		if p, lerr := exec.LookPath(bin); lerr == nil {
			out, cerr := exec.Command(p, "-u", dir).CombinedOutput()
			if cerr == nil {
				return nil
			}
			err = errors.Join(err, errors.New(string(out)))
		}
	}
	if uerr := unix.Unmount(dir, 0); uerr != nil {
		return errors.Join(err, uerr)
	}
	return nil
}

// processGone reports whether pid has exited (zombies count as exited:
// the daemon's parent is gone, so nobody may reap it here).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

func TestDaemonMount(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		fixtures.FUSEUnusable(t, err.Error())
	}
	bin := buildBinary(t, "dwarfs")
	mnt := t.TempDir()
	cmd := exec.Command(bin, defaultImage(t), mnt, "-o", "cachesize=64m")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := make(chan error, 1)
	go func() { done <- cmd.Run() }()
	select {
	case err := <-done:
		if err != nil {
			msg := stderr.String()
			if strings.Contains(msg, "permission") || strings.Contains(msg, "fusermount") {
				fixtures.FUSEUnusable(t, msg)
			}
			t.Fatalf("dwarfs: %v\n%s", err, msg)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("dwarfs did not return after mounting (daemon kept stdio?)")
	}
	mounted := true
	t.Cleanup(func() {
		if mounted {
			_ = unmount(mnt)
		}
	})
	b, err := os.ReadFile(filepath.Join(mnt, "a/hello.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if h := sha256.Sum256(b); hex.EncodeToString(h[:]) != "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03" {
		t.Errorf("hello.txt content %q", b)
	}
	buf := make([]byte, 32)
	n, err := unix.Getxattr(mnt, "user.dwarfs.driver.pid", buf)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(buf[:n]))
	if err != nil || pid == os.Getpid() || pid == cmd.Process.Pid {
		t.Fatalf("daemon pid %q (%v)", buf[:n], err)
	}
	if err := unmount(mnt); err != nil {
		t.Fatalf("unmount: %v", err)
	}
	mounted = false
	for start := time.Now(); !processGone(pid); {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("daemon %d still running after unmount", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestUnknownOption(t *testing.T) {
	bin := buildBinary(t, "dwarfs")
	for _, opt := range []string{"frobnicate", "cachesize=12q", "mlock=sometimes"} {
		name, _, _ := strings.Cut(opt, "=")
		cmd := exec.Command(bin, defaultImage(t), t.TempDir(), "-o", "workers=2,"+opt)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("-o %s: %v, want exit status 1\n%s", opt, err, out)
		}
		if !strings.Contains(string(out), name) {
			t.Errorf("-o %s: message does not name the option: %s", opt, out)
		}
	}
}

func TestMountHelperFake(t *testing.T) {
	bin := buildBinary(t, "mount.fuse.dwarfs")
	// mount(8) -f (fake) must parse everything, ignore generic mount
	// options, and not mount.
	out, err := exec.Command(bin, defaultImage(t), t.TempDir(), "-f", "-o", "rw,noauto,user,_netdev,defaults,cachesize=1g").CombinedOutput()
	if err != nil {
		t.Fatalf("mount helper: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, defaultImage(t), t.TempDir(), "-f", "-o", "nosuchopt").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "nosuchopt") {
		t.Errorf("bad option via helper: %v %s", err, out)
	}
}

func TestMountHelper(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		fixtures.FUSEUnusable(t, err.Error())
	}
	bin := buildBinary(t, "mount.dwarfs")
	mnt := t.TempDir()
	out, err := exec.Command(bin, defaultImage(t), mnt, "-o", "ro,noauto,_netdev,enable_nlink").CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "permission") {
			fixtures.FUSEUnusable(t, string(out))
		}
		t.Fatalf("mount.dwarfs: %v\n%s", err, out)
	}
	defer unmount(mnt)
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(mnt, "a/hello.txt"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Nlink != 2 {
		t.Errorf("enable_nlink: nlink %d", st.Nlink)
	}
}

// waitMounted polls until the driver answers on mnt.
func waitMounted(t *testing.T, mnt string, exited <-chan error) {
	t.Helper()
	buf := make([]byte, 32)
	for start := time.Now(); ; {
		if _, err := unix.Getxattr(mnt, "user.dwarfs.driver.pid", buf); err == nil {
			return
		}
		select {
		case err := <-exited:
			t.Fatalf("dwarfs exited before mounting: %v", err)
		default:
		}
		if time.Since(start) > 20*time.Second {
			t.Fatal("mount did not appear")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestForegroundSignal(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		fixtures.FUSEUnusable(t, err.Error())
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			mnt := t.TempDir()
			cmd := exec.Command(buildBinary(t, "dwarfs"), defaultImage(t), mnt, "-f", "-o", "perfmon,tidy_strategy=time,tidy_interval=10ms")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			waitMounted(t, mnt, exited)
			if _, err := os.ReadFile(filepath.Join(mnt, "data/random.bin")); err != nil {
				t.Error(err)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("exit after %v: %v\n%s", sig, err, stderr.String())
				}
			case <-time.After(20 * time.Second):
				_ = unmount(mnt)
				t.Fatalf("no exit after %v", sig)
			}
			if !strings.Contains(stderr.String(), "[dwarfs perfmon]") || !strings.Contains(stderr.String(), "block cache:") {
				t.Errorf("no perfmon report on stderr:\n%s", stderr.String())
			}
			var st unix.Statfs_t
			if err := unix.Statfs(mnt, &st); err != nil || st.Type == 0x65735546 { // FUSE_SUPER_MAGIC
				t.Errorf("still mounted after %v (%v)", sig, err)
			}
		})
	}
}

// TestUserMount mounts as an unprivileged user, which goes through
// fusermount3 instead of mount(2).
func TestUserMount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch to an unprivileged user")
	}
	if _, err := exec.LookPath("fusermount3"); err != nil {
		fixtures.FUSEUnusable(t, "fusermount3 not installed")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		fixtures.FUSEUnusable(t, err.Error())
	}
	const uid, gid = 65534, 65534
	base, err := os.MkdirTemp("", "dwarfs-user")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	// The fixture may sit in a checkout the unprivileged user cannot
	// enter (a clone in a 0700 temporary directory), so the user
	// mounts a copy inside its own directory.
	data, err := os.ReadFile(defaultImage(t))
	if err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(base, "image.dwarfs")
	if err := os.WriteFile(img, data, 0o644); err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(base, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{base, mnt} {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(buildBinary(t, "dwarfs"), img, mnt, "-o", "cachesize=16m")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	cmd.Env = append(os.Environ(), "HOME=/")
	out, err := cmd.CombinedOutput()
	if err != nil {
		// Unreadable fixtures, a root-only /dev/fuse or a fusermount3
		// without working setuid are properties of the host, not bugs.
		if msg := strings.ToLower(string(out)); strings.Contains(msg, "permission denied") || strings.Contains(msg, "not permitted") {
			t.Skipf("unprivileged FUSE mounts unavailable here: %s", out)
		}
		t.Fatalf("user mount: %v\n%s", err, out)
	}
	defer unmount(mnt)
	// Without allow_other only the mounting user may enter the mount
	// (root included), so the checks run as that user.
	asUser := func(name string, args ...string) (string, error) {
		c := exec.Command(name, args...)
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
		out, err := c.CombinedOutput()
		return string(out), err
	}
	if out, err := asUser("cat", filepath.Join(mnt, "a/hello.txt")); err != nil || out != "hello\n" {
		t.Errorf("read as user: %q %v", out, err)
	}
	if out, err := asUser("stat", "-c", "%u", mnt); err != nil || strings.TrimSpace(out) != "0" {
		t.Errorf("root owner as user: %q %v", out, err)
	}
	if _, err := os.ReadFile(filepath.Join(mnt, "a/hello.txt")); !errors.Is(err, os.ErrPermission) {
		t.Errorf("read by another user of a mount without allow_other: %v, want permission denied", err)
	}
	if out, err := asUser("fusermount3", "-u", mnt); err != nil {
		t.Errorf("fusermount3 -u as user: %v %s", err, out)
	}
}

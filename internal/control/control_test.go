//go:build linux

package control

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/godwarfs/godwarfs/internal/fixtures"
)

// helperEnv makes the test binary a client that sends one request to
// the socket the variable names and prints the response as JSON.
const helperEnv = "GODWARFS_CONTROL_TEST_CLIENT"

func TestMain(m *testing.M) {
	if p := os.Getenv(helperEnv); p != "" {
		r, err := CallPath(p, "test", Request{Op: "config"})
		if err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(2)
		}
		json.NewEncoder(os.Stdout).Encode(r)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func echo(req Request) (string, error) {
	if req.Op == "fail" {
		return "partial", errors.New("it failed")
	}
	return req.Op + ":" + strings.Join(req.Names, ","), nil
}

func TestRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ctl")
	path := filepath.Join(dir, "dev-1.sock")
	s, err := Listen(path, echo)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		req      Request
		out, err string
	}{
		{Request{Op: "remove", Names: []string{"a", "b"}}, "remove:a,b", ""},
		{Request{Op: "fail"}, "partial", "it failed"},
	} {
		r, err := CallPath(path, "mnt", c.req)
		if err != nil || r.Output != c.out || r.Error != c.err {
			t.Errorf("%+v: %+v %v", c.req, r, err)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil || st.Mode&0o777 != 0o700 {
		t.Errorf("directory mode %o %v", st.Mode&0o777, err)
	}
	if err := syscall.Stat(path, &st); err != nil || st.Mode&0o777 != 0o600 || st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		t.Errorf("socket mode %o %v", st.Mode, err)
	}
	// A second driver cannot take a socket that answers.
	if _, err := Listen(path, echo); err == nil || !strings.Contains(err.Error(), "another driver") {
		t.Errorf("second Listen: %v", err)
	}
	s.Close()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left after Close: %v", err)
	}
	if _, err := CallPath(path, "mnt", Request{Op: "config"}); err == nil || !strings.Contains(err.Error(), "not served by a dwarfs multi driver") {
		t.Errorf("call without a driver: %v", err)
	}
	// A stale socket file (its driver gone) is replaced.
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	s2, err := Listen(path, echo)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	s2.Close()
}

func TestDirChecks(t *testing.T) {
	base := t.TempDir()
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(filepath.Join(open, "x.sock"), echo); err == nil || !strings.Contains(err.Error(), "others may enter") {
		t.Errorf("Listen in a directory open to others: %v", err)
	}
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	if _, err := Listen(filepath.Join(file, "x.sock"), echo); err == nil {
		t.Error("Listen under a file succeeded")
	}
	if got := Dir(func(string) string { return "" }); os.Geteuid() == 0 && got != "/run/godwarfs" {
		t.Errorf("root's directory %s", got)
	}
}

// TestOtherUserRefused: the driver answers only its own user. The socket
// is opened to everyone here (the directory and mode alone keep others
// out in use) so that the peer credential check is what refuses.
func TestOtherUserRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to act as another user")
	}
	base, err := os.MkdirTemp("", "control-test")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	dir := filepath.Join(base, "ctl")
	path := filepath.Join(dir, "dev-2.sock")
	s, err := Listen(path, echo)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A copy of the test binary that the other user may run, and a way
	// in for it.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(base, "client")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{base, dir, path} {
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	run := func(cred *syscall.Credential) (Response, string) {
		// Through qemu when the tests run for another architecture.
		cmd := fixtures.Command(exe)
		cmd.Env = append(os.Environ(), helperEnv+"="+path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return Response{}, string(ee.Stderr)
			}
			return Response{}, err.Error()
		}
		var r Response
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("client output %q: %v", out, err)
		}
		return r, ""
	}
	r, fail := run(&syscall.Credential{Uid: 65534, Gid: 65534})
	if fail != "" || !strings.Contains(r.Error, "permission denied: uid 65534 may not control a mount of uid 0") || r.Output != "" {
		t.Errorf("other user: %+v %s", r, fail)
	}
	if r, fail := run(nil); fail != "" || r.Output != "config:" || r.Error != "" {
		t.Errorf("owner: %+v %s", r, fail)
	}
}

// TestCallChecksDir: the client talks to no socket in a directory that
// others may enter, where another user could have put one.
func TestCallChecksDir(t *testing.T) {
	mnt := t.TempDir()
	runtime := t.TempDir()
	if os.Geteuid() == 0 {
		// Root's directory is fixed; the check itself is the same.
		dir := filepath.Join(t.TempDir(), "open")
		if err := os.Mkdir(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, 0o777)
		if err := checkDir(dir); err == nil || !strings.Contains(err.Error(), "others may enter") {
			t.Errorf("checkDir of an open directory: %v", err)
		}
		if err := checkDir(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("checkDir of a missing directory: %v", err)
		}
		return
	}
	dir := filepath.Join(runtime, "godwarfs")
	os.Mkdir(dir, 0o777)
	os.Chmod(dir, 0o777)
	getenv := func(k string) string {
		if k == "XDG_RUNTIME_DIR" {
			return runtime
		}
		return ""
	}
	if _, err := Call(getenv, mnt, Request{Op: "config"}); err == nil || !strings.Contains(err.Error(), "others may enter") {
		t.Errorf("Call with an open directory: %v", err)
	}
}

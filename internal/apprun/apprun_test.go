//go:build linux && !386 && !arm

package apprun

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/mkdwarfs"
)

// The AppRun of the test application: it reports its arguments and
// environment, and then does what $MODE says.
const appRun = `#!/bin/sh
for a in "$@"; do echo "arg=$a"; done
echo "APPDIR=$APPDIR"
echo "APPIMAGE=$APPIMAGE"
echo "ARGV0=$ARGV0"
echo "OWD=$OWD"
echo "DATA=$(cat "$APPDIR/share/data")"
ls "$APPDIR" | sed 's/^/ls=/'
case "$MODE" in
wait)
	trap 'echo got TERM; exit 42' TERM
	echo "pid=$$"
	echo ready
	while :; do sleep 0.05; done
	;;
selfkill)
	kill -KILL $$
	;;
esac
exit ${STATUS:-0}
`

var (
	buildOnce  sync.Once
	runtimeBin string
	buildErr   error
)

// runtimePath builds cmd/dwarfs-run once (static, with the core
// compressions only, as it ships).
func runtimePath(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dwarfs-run-test-")
		if err != nil {
			buildErr = err
			return
		}
		runtimeBin = filepath.Join(dir, "dwarfs-run")
		cmd := exec.Command("go", "build", "-trimpath", "-tags", "corecodecs", "-o", runtimeBin, "github.com/godwarfs/godwarfs/cmd/dwarfs-run")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return runtimeBin
}

// maxRuntimeSize is issue #51's bound on the runtime, stripped, for
// linux/amd64: every packed application carries a copy.
const maxRuntimeSize = 4 << 20

// TestRuntimeSize builds the runtime as make cross does, stripped, for
// linux/amd64, and holds it to its bound.
func TestRuntimeSize(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "dwarfs-run")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-tags", "corecodecs", "-o", bin, "github.com/godwarfs/godwarfs/cmd/dwarfs-run")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dwarfs-run for linux/amd64, stripped: %d bytes", fi.Size())
	if fi.Size() > maxRuntimeSize {
		t.Errorf("dwarfs-run for linux/amd64, stripped, is %d bytes, over the bound of %d (4 MiB): see what it links with go tool nm -size -sort size",
			fi.Size(), maxRuntimeSize)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if runtimeBin != "" {
		os.RemoveAll(filepath.Dir(runtimeBin))
	}
	os.Exit(code)
}

// appTree writes the test application's tree.
func appTree(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "app")
	for p, c := range map[string]string{
		"AppRun":     appRun,
		"bin/tool":   "#!/bin/sh\necho tool \"$@\"\nexit 3\n",
		"share/data": "payload",
	} {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(c, "#!") {
			mode = 0o755
		}
		if err := os.WriteFile(full, []byte(c), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("bin/tool", filepath.Join(dir, "tool-link")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// pack builds the executable with mkdwarfs --runtime and more args.
func pack(t *testing.T, more ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "app.run")
	args := append([]string{"mkdwarfs", "-i", appTree(t), "-o", out, "--runtime=" + runtimePath(t), "--no-progress", "-l1"}, more...)
	var stderr bytes.Buffer
	if code := mkdwarfs.Main(context.Background(), args, cli.Stdio{Out: io.Discard, Err: &stderr}); code != 0 {
		t.Fatalf("mkdwarfs %q: exit %d: %s", args, code, stderr.String())
	}
	return out
}

// result is a finished run of a packed executable.
type result struct {
	code           int
	stdout, stderr string
}

// lines maps the KEY=VALUE lines of AppRun's report.
func (r result) value(key string) string {
	for _, l := range strings.Split(r.stdout, "\n") {
		if v, ok := strings.CutPrefix(l, key+"="); ok {
			return v
		}
	}
	return ""
}

func (r result) all(key string) []string {
	var vs []string
	for _, l := range strings.Split(r.stdout, "\n") {
		if v, ok := strings.CutPrefix(l, key+"="); ok {
			vs = append(vs, v)
		}
	}
	return vs
}

func runApp(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running %s: %v", cmd.Path, err)
	}
	return result{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

// env is the environment of a run: the test's, with a private cache and
// the given additions.
func env(t *testing.T, cache string, kv ...string) []string {
	e := append(os.Environ(), "XDG_CACHE_HOME="+cache)
	return append(e, kv...)
}

func needFUSE(t *testing.T) {
	t.Helper()
	if err := fuseUsable(); err != nil {
		t.Skipf("skipping: the mount path needs FUSE: %v", err)
	}
}

// mountedDirs lists the mount points in /proc/self/mountinfo under
// prefix.
func mountedDirs(t *testing.T, prefix string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var ds []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && strings.HasPrefix(f[4], prefix) {
			ds = append(ds, f[4])
		}
	}
	return ds
}

// runtimeMounts lists the mount points a runtime makes (see mount.go).
func runtimeMounts(t *testing.T) []string {
	t.Helper()
	var ds []string
	for _, d := range mountedDirs(t, "/") {
		if strings.HasPrefix(filepath.Base(d), ".mount_") {
			ds = append(ds, d)
		}
	}
	return ds
}

// checkRun checks a run's arguments, environment and status against
// what was asked, for the mount and the extraction path alike.
func checkRun(t *testing.T, r result, app, appdirPrefix string, args []string, status int) {
	t.Helper()
	if r.code != status {
		t.Fatalf("exit status %d, want %d; stderr: %s", r.code, status, r.stderr)
	}
	if got := r.all("arg"); strings.Join(got, "\x00") != strings.Join(args, "\x00") {
		t.Errorf("arguments %q, want %q", got, args)
	}
	wd, _ := os.Getwd()
	for k, want := range map[string]string{"APPIMAGE": app, "ARGV0": app, "OWD": wd, "DATA": "payload"} {
		if got := r.value(k); got != want {
			t.Errorf("%s=%q, want %q", k, got, want)
		}
	}
	if d := r.value("APPDIR"); !strings.HasPrefix(d, appdirPrefix) {
		t.Errorf("APPDIR=%q, want it under %s", d, appdirPrefix)
	}
	if ls := r.all("ls"); strings.Join(ls, ",") != "AppRun,bin,share,tool-link" {
		t.Errorf("APPDIR holds %q", ls)
	}
}

func TestRuntimeMountedRun(t *testing.T) {
	needFUSE(t)
	app := pack(t)
	cache := t.TempDir()
	for _, tc := range []struct {
		args   []string
		status int
	}{
		{nil, 0},
		{[]string{"a", "b c", "--appimage-not-first", "-x"}, 0},
		{[]string{"x"}, 5},
		{[]string{"x"}, 255},
	} {
		cmd := exec.Command(app, tc.args...)
		cmd.Env = env(t, cache, "STATUS="+strconv.Itoa(tc.status))
		r := runApp(t, cmd)
		checkRun(t, r, app, filepath.Join(os.TempDir(), ".mount_"), tc.args, tc.status)
		if d := r.value("APPDIR"); d != "" {
			if ds := mountedDirs(t, d); len(ds) != 0 {
				t.Errorf("%s is still mounted after the entry exited", d)
			}
			if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("mount point %s is left: %v", d, err)
			}
		}
	}
	if ents, _ := os.ReadDir(cache); len(ents) != 0 {
		t.Errorf("the mounted run extracted to the cache: %v", ents)
	}
	// An entry killed by a signal: 128 plus its number, as shells say.
	cmd := exec.Command(app)
	cmd.Env = env(t, cache, "MODE=selfkill")
	if r := runApp(t, cmd); r.code != 128+int(syscall.SIGKILL) {
		t.Errorf("entry killed by SIGKILL: exit %d, want %d", r.code, 128+int(syscall.SIGKILL))
	}
}

// startWaiting starts the application in MODE=wait and returns once
// AppRun reports that it waits, with its pid and APPDIR.
func startWaiting(t *testing.T, cmd *exec.Cmd) (pid int, appdir string, wait func() result) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = pw, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	var out strings.Builder
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		l := sc.Text()
		out.WriteString(l + "\n")
		if v, ok := strings.CutPrefix(l, "pid="); ok {
			pid, _ = strconv.Atoi(v)
		}
		if v, ok := strings.CutPrefix(l, "APPDIR="); ok {
			appdir = v
		}
		if l == "ready" {
			break
		}
	}
	if pid == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("AppRun did not start: %s%s", out.String(), stderr.String())
	}
	return pid, appdir, func() result {
		rest, _ := io.ReadAll(pr)
		pr.Close()
		err := cmd.Wait()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return result{cmd.ProcessState.ExitCode(), out.String() + string(rest), stderr.String()}
	}
}

func TestRuntimeForwardsSignals(t *testing.T) {
	needFUSE(t)
	app := pack(t)
	cmd := exec.Command(app)
	cmd.Env = env(t, t.TempDir(), "MODE=wait")
	_, appdir, wait := startWaiting(t, cmd)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r := wait()
	if !strings.Contains(r.stdout, "got TERM") || r.code != 42 {
		t.Errorf("after SIGTERM to the runtime: exit %d, output %q; want AppRun's trap and 42", r.code, r.stdout)
	}
	if ds := mountedDirs(t, appdir); len(ds) != 0 {
		t.Errorf("%s still mounted", appdir)
	}
}

func TestRuntimeKilledLeavesNoMount(t *testing.T) {
	needFUSE(t)
	app := pack(t)
	cmd := exec.Command(app)
	cmd.Env = env(t, t.TempDir(), "MODE=wait")
	pid, appdir, wait := startWaiting(t, cmd)
	defer syscall.Kill(pid, syscall.SIGKILL)
	if len(mountedDirs(t, appdir)) != 1 {
		t.Fatalf("%s is not mounted while the entry runs", appdir)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The mount goes while the entry, still running, has files open in
	// the tree, and so does its mount point.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := os.Lstat(appdir)
		if len(mountedDirs(t, appdir)) == 0 && errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			exec.Command("umount", "-l", appdir).Run()
			os.Remove(appdir)
			t.Fatalf("%s is still mounted (%d) or left (%v) after the runtime was killed", appdir, len(mountedDirs(t, appdir)), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	wait()
}

func TestRuntimeExtractOption(t *testing.T) {
	app := pack(t)
	for _, tc := range []struct {
		pattern string
		want    []string // files under squashfs-root
		absent  []string
	}{
		{"", []string{"AppRun", "bin/tool", "share/data", "tool-link"}, nil},
		{"share/*", []string{"share/data"}, []string{"AppRun", "bin/tool"}},
		{"**/tool", []string{"bin/tool"}, []string{"AppRun", "share/data"}},
	} {
		t.Run("pattern="+tc.pattern, func(t *testing.T) {
			wd := t.TempDir()
			args := []string{"--appimage-extract"}
			if tc.pattern != "" {
				args = append(args, tc.pattern)
			}
			cmd := exec.Command(app, args...)
			cmd.Dir = wd
			r := runApp(t, cmd)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			root := filepath.Join(wd, ExtractDir)
			for _, p := range tc.want {
				if _, err := os.Lstat(filepath.Join(root, p)); err != nil {
					t.Errorf("%s not extracted: %v", p, err)
				}
				if !strings.Contains(r.stdout, filepath.Join(ExtractDir, p)+"\n") {
					t.Errorf("%s not listed in %q", p, r.stdout)
				}
			}
			for _, p := range tc.absent {
				if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
					t.Errorf("%s extracted, though it does not match %q", p, tc.pattern)
				}
			}
		})
	}
	// The whole tree, with modes, contents and links intact.
	wd := t.TempDir()
	cmd := exec.Command(app, "--appimage-extract")
	cmd.Dir = wd
	if r := runApp(t, cmd); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	root := filepath.Join(wd, ExtractDir)
	if fi, err := os.Stat(filepath.Join(root, "AppRun")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("AppRun: %v, %v; want mode 0755", fi, err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "AppRun")); err != nil || string(b) != appRun {
		t.Errorf("AppRun's contents differ: %v", err)
	}
	if l, err := os.Readlink(filepath.Join(root, "tool-link")); err != nil || l != "bin/tool" {
		t.Errorf("tool-link -> %q, %v", l, err)
	}
	out, err := exec.Command(filepath.Join(root, "AppRun"), "x").Output()
	if err != nil || !strings.Contains(string(out), "arg=x") {
		t.Errorf("extracted AppRun: %q, %v", out, err)
	}
}

func TestRuntimeOffset(t *testing.T) {
	app := pack(t)
	fi, err := os.Stat(runtimePath(t))
	if err != nil {
		t.Fatal(err)
	}
	r := runApp(t, exec.Command(app, "--appimage-offset"))
	if r.code != 0 || strings.TrimSpace(r.stdout) != strconv.FormatInt(fi.Size(), 10) {
		t.Errorf("--appimage-offset: exit %d, %q; want the runtime's size %d", r.code, r.stdout, fi.Size())
	}
	for _, opt := range []string{"--appimage-help", "--appimage-version"} {
		if r := runApp(t, exec.Command(app, opt)); r.code != 0 || r.stdout == "" {
			t.Errorf("%s: exit %d, %q", opt, r.code, r.stdout)
		}
	}
	if r := runApp(t, exec.Command(app, "--appimage-bogus")); r.code != exitError || !strings.Contains(r.stderr, "--appimage-bogus") {
		t.Errorf("unknown option: exit %d, %q", r.code, r.stderr)
	}
}

// extractedRun checks a run from the cache directory, whichever way
// the runtime was made to take that path.
func extractedRun(t *testing.T, app, cache string, cmd func(args ...string) *exec.Cmd) {
	t.Helper()
	base := filepath.Join(cache, "dwarfs-run")
	r := runApp(t, cmd("one", "two"))
	checkRun(t, r, app, base+"/", []string{"one", "two"}, 0)
	appdir := r.value("APPDIR")
	// The cache holds the finished extraction only, and a second run
	// uses it: a file put there shows in the second run's listing.
	ents, err := os.ReadDir(base)
	if err != nil || len(ents) != 1 || filepath.Join(base, ents[0].Name()) != appdir {
		t.Fatalf("cache %s holds %v (%v), want only %s", base, ents, err, appdir)
	}
	if err := os.WriteFile(filepath.Join(appdir, "marker"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r = runApp(t, cmd())
	if r.code != 0 || r.value("APPDIR") != appdir || !strings.Contains(r.stdout, "ls=marker\n") {
		t.Errorf("second run did not reuse %s: exit %d, %s%s", appdir, r.code, r.stdout, r.stderr)
	}
}

func TestRuntimeExtractEnv(t *testing.T) {
	app := pack(t)
	cache := t.TempDir()
	extractedRun(t, app, cache, func(args ...string) *exec.Cmd {
		c := exec.Command(app, args...)
		c.Env = env(t, cache, ExtractEnv+"=1")
		return c
	})
}

// TestRuntimeWithoutFUSE hides /dev/fuse in a mount namespace of its
// own, as in a container without FUSE.
func TestRuntimeWithoutFUSE(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: hiding /dev/fuse (unshare -m, mount --bind) needs root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skipf("skipping: %v", err)
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("skipping: no /dev/fuse to hide: %v", err)
	}
	app := pack(t)
	cache := t.TempDir()
	wrap := func(args ...string) *exec.Cmd {
		script := `mount --bind /dev/null /dev/fuse && exec "$0" "$@"`
		c := exec.Command("unshare", append([]string{"-m", "--propagation", "private", "sh", "-c", script, app}, args...)...)
		c.Env = env(t, cache)
		return c
	}
	// The hiding works: the runtime cannot mount in there.
	probe := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", "mount --bind /dev/null /dev/fuse && exec \"$0\" --appimage-mount", app)
	if out, err := probe.CombinedOutput(); err == nil || !strings.Contains(string(out), "FUSE is not available") {
		t.Fatalf("--appimage-mount with /dev/fuse hidden: %v, %s", err, out)
	}
	extractedRun(t, app, cache, wrap)
}

func TestRuntimeEntry(t *testing.T) {
	app := pack(t, "--entry=bin/tool")
	cache := t.TempDir()
	for _, extract := range []string{"0", "1"} {
		if extract == "0" && fuseUsable() != nil {
			t.Logf("skipping the mounted run: %v", fuseUsable())
			continue
		}
		cmd := exec.Command(app, "p", "q")
		cmd.Env = env(t, cache, ExtractEnv+"="+extract)
		r := runApp(t, cmd)
		if r.code != 3 || r.stdout != "tool p q\n" {
			t.Errorf("%s=%s: exit %d, %q; want bin/tool's 3, \"tool p q\"", ExtractEnv, extract, r.code, r.stdout)
		}
	}
}

func TestEntryFromArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		ok   bool
	}{
		{[]string{"mkdwarfs", "-i", "d", "-o", "x"}, "", false},
		{[]string{"mkdwarfs", "--entry=bin/a", "-o", "x"}, "bin/a", true},
		{[]string{"mkdwarfs", "--entry", "bin/a"}, "bin/a", true},
		{[]string{"mkdwarfs", "--entry=a", "--entry=b"}, "b", true},
		{[]string{"mkdwarfs", "--merge", "--", "--entry=a"}, "", false},
		{[]string{"mkdwarfs", "--entry"}, "", false},
	} {
		got, ok := EntryFromArgs(tc.args)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%q: %q, %v; want %q, %v", tc.args, got, ok, tc.want, tc.ok)
		}
	}
}

// TestRuntimeBadImage: a missing, truncated or corrupt image is one
// line naming the file and the offset, status 127, and nothing mounted
// or extracted.
func TestRuntimeBadImage(t *testing.T) {
	good := pack(t)
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(runtimePath(t))
	if err != nil {
		t.Fatal(err)
	}
	off := fi.Size()
	// An image whose metadata is LZMA, which the runtime does not decode
	// (mkdwarfs --runtime refuses to pack one).
	lzma := filepath.Join(t.TempDir(), "lzma.dwarfs")
	var stderr bytes.Buffer
	if code := mkdwarfs.Main(context.Background(), []string{"mkdwarfs", "-i", appTree(t), "-o", lzma, "--no-progress", "-l9"},
		cli.Stdio{Out: io.Discard, Err: &stderr}); code != 0 {
		t.Fatalf("mkdwarfs -l9: exit %d: %s", code, stderr.String())
	}
	img, err := os.ReadFile(lzma)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := func(at int64) []byte {
		c := bytes.Clone(b)
		for i := range int64(16) {
			c[at+i] ^= 0xff
		}
		return c
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"missing", b[:off], "nothing is appended to the runtime"},
		{"truncated", b[:off+(int64(len(b))-off)/2], ""},
		{"bad magic", corrupt(off), ""},
		{"corrupt metadata", corrupt(int64(len(b)) - 400), ""},
		{"lzma", append(b[:off:off], img...), "its blocks are LZMA-compressed, and this runtime decodes only none, lz4, lz4hc and zstd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			app := filepath.Join(dir, "bad.run")
			if err := os.WriteFile(app, tc.data, 0o755); err != nil {
				t.Fatal(err)
			}
			cache := t.TempDir()
			for _, extract := range []string{"0", "1"} {
				// Only the runtime's own mount points count: other
				// packages' tests mount and unmount meanwhile.
				before := runtimeMounts(t)
				cmd := exec.Command(app, "arg")
				cmd.Env = env(t, cache, ExtractEnv+"="+extract)
				r := runApp(t, cmd)
				msg := strings.TrimSuffix(r.stderr, "\n")
				if r.code != exitBadImage || strings.Contains(msg, "\n") || !strings.Contains(msg, app) ||
					!strings.Contains(msg, fmt.Sprintf("offset %d", off)) || r.stdout != "" {
					t.Errorf("%s=%s: exit %d, stderr %q, stdout %q; want 127 and one line naming %s and offset %d",
						ExtractEnv, extract, r.code, r.stderr, r.stdout, app, off)
				}
				if !strings.Contains(msg, tc.want) {
					t.Errorf("%s=%s: stderr %q does not say %q", ExtractEnv, extract, msg, tc.want)
				}
				if after := runtimeMounts(t); len(after) != len(before) {
					t.Errorf("mounts changed: %v -> %v", before, after)
				}
				if ents, _ := os.ReadDir(filepath.Join(cache, "dwarfs-run")); len(ents) != 0 {
					t.Errorf("the cache holds %v", ents)
				}
			}
		})
	}
}

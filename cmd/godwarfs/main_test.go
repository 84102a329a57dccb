//go:build unix

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/version"
)

// binDir holds godwarfs and the standalone mkdwarfs, built once on first
// use into a directory anyone may read (tests run them as another user).
var binDir struct {
	sync.Once
	dir string
	err error
}

func buildTools(t *testing.T) string {
	t.Helper()
	binDir.Do(func() {
		dir, err := os.MkdirTemp("", "godwarfs-bin")
		if err == nil {
			err = os.Chmod(dir, 0o755)
		}
		for _, pkg := range []string{".", "../mkdwarfs"} {
			if err != nil {
				break
			}
			var out []byte
			if out, err = exec.Command("go", "build", "-o", dir, pkg).CombinedOutput(); err != nil {
				err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
			}
		}
		binDir.dir, binDir.err = dir, err
	})
	if binDir.err != nil {
		t.Fatal(binDir.err)
	}
	return binDir.dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir.dir != "" {
		os.RemoveAll(binDir.dir)
	}
	os.Exit(code)
}

// runTool runs a tool in-process as godwarfs --tool=NAME would.
func runTool(name string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	argv := append([]string{"godwarfs", "--tool=" + name}, args...)
	code = run(argv, cli.Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

var allTools = []string{"dwarfs", "dwarfsck", "dwarfsextract", "mkdwarfs"}

func TestDispatch(t *testing.T) {
	for _, tc := range []struct {
		argv  []string
		tool  string
		targs []string
	}{
		{[]string{"/usr/bin/mkdwarfs", "-i", "x"}, "mkdwarfs", []string{"/usr/bin/mkdwarfs", "-i", "x"}},
		{[]string{"dwarfsck", "img"}, "dwarfsck", []string{"dwarfsck", "img"}},
		{[]string{"./mkdwarfs-0.15.3", "-h"}, "mkdwarfs", []string{"mkdwarfs", "-h"}},
		{[]string{"/sbin/mount.fuse.dwarfs", "img", "mnt"}, "dwarfs", []string{"/sbin/mount.fuse.dwarfs", "img", "mnt"}},
		{[]string{"mount.dwarfs", "img", "mnt"}, "dwarfs", []string{"mount.dwarfs", "img", "mnt"}},
		{[]string{"godwarfs", "--tool=dwarfsextract", "-i", "img"}, "dwarfsextract", []string{"dwarfsextract", "-i", "img"}},
		{[]string{"/opt/godwarfs", "--tool=mount.dwarfs", "img", "mnt"}, "dwarfs", []string{"mount.dwarfs", "img", "mnt"}},
		{[]string{"godwarfs", "--tool=nope"}, "", nil},
		{[]string{"godwarfs", "-i", "x", "--tool=mkdwarfs"}, "", nil},
		{[]string{"godwarfs"}, "", nil},
		{[]string{"mkdwarfs-beta", "-h"}, "", nil},
		{nil, "", nil},
	} {
		tool, targs, ok := dispatch(tc.argv)
		if tool != tc.tool || ok != (tc.tool != "") || !reflect.DeepEqual(targs, tc.targs) {
			t.Errorf("dispatch(%q) = %q %q %v, want %q %q", tc.argv, tool, targs, ok, tc.tool, tc.targs)
		}
	}
}

func TestGodwarfsItself(t *testing.T) {
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{nil, 0, "Usage: godwarfs --tool=NAME", ""},
		{[]string{"--help"}, 0, "Tools: dwarfs, dwarfsck, dwarfsextract, mkdwarfs", ""},
		{[]string{"--version"}, 0, "godwarfs (godwarfs) " + version.Get().String() + "\n", ""},
		{[]string{"--tool=mkfs"}, 1, "", "godwarfs: error: unknown tool 'mkfs' (expected one of dwarfs, dwarfsck, dwarfsextract, mkdwarfs)\n"},
		{[]string{"-i", "x"}, 1, "", "godwarfs: error: no tool chosen"},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"godwarfs"}, tc.args...), cli.Stdio{Out: &out, Err: &errb})
		if code != tc.code || !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errb.String(), tc.stderr) {
			t.Errorf("godwarfs %q: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.args, code, out.String(), errb.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
}

// withOutput returns "-i IMAGE [-o OUT] ARGS", with -o for the tools that
// write something.
func withOutput(tool, img string, args ...string) []string {
	a := []string{"-i", img}
	if tool != "dwarfsck" {
		a = append(a, "-o", img+".out")
	}
	return append(a, args...)
}

// TestSameMistakeSameWords makes the same mistake with every tool that has
// the option involved: each must print the same words, name itself, point
// to --help and exit with status 1.
func TestSameMistakeSameWords(t *testing.T) {
	img := filepath.Join(t.TempDir(), "img.dwarfs")
	for _, tc := range []struct {
		mistake string
		tools   []string
		args    func(tool string) []string
		msg     string
	}{
		{"unknown long option", allTools, func(string) []string { return []string{"--frobnicate", "x"} },
			"unrecognised option '--frobnicate'"},
		{"unknown short option", allTools, func(string) []string { return []string{"-Z"} },
			"unrecognised option '-Z'"},
		{"value for a flag", allTools, func(string) []string { return []string{"--help=yes"} },
			"option '--help' does not take a value"},
		{"value for --version", allTools, func(string) []string { return []string{"--version=2"} },
			"option '--version' does not take a value"},
		{"missing value", []string{"mkdwarfs", "dwarfsck", "dwarfsextract"}, func(string) []string { return []string{"-i"} },
			"option '-i' requires a value"},
		{"missing long value", []string{"mkdwarfs", "dwarfsck", "dwarfsextract"}, func(string) []string { return []string{"--log-level"} },
			"option '--log-level' requires a value"},
		{"bad log level", []string{"mkdwarfs", "dwarfsck", "dwarfsextract"}, func(tool string) []string {
			return withOutput(tool, img, "--log-level=loud")
		}, "invalid value 'loud' for option '--log-level': expected one of error, warn, info, verbose, debug, trace"},
		{"bad worker count", []string{"mkdwarfs", "dwarfsextract"}, func(string) []string {
			return []string{"-i", img, "-o", img + ".out", "--num-workers=0"}
		}, "invalid value '0' for option '--num-workers': expected a number from 1 to 1024"},
		{"bad image offset", []string{"dwarfsck", "dwarfsextract"}, func(tool string) []string {
			return withOutput(tool, img, "--image-offset=-5")
		}, "invalid value '-5' for option '--image-offset': expected auto or a byte offset"},
		// dwarfsextract takes plain arguments as patterns, as the reference.
		{"surplus argument", []string{"mkdwarfs"}, func(string) []string {
			return []string{"-i", img, "-o", img + ".out", "surplus"}
		}, "unexpected argument 'surplus'"},
		{"surplus argument after image", []string{"dwarfsck", "dwarfs"}, func(string) []string {
			return []string{img, "mnt", "surplus"}
		}, "unexpected argument 'surplus'"},
		{"compression level out of range", []string{"mkdwarfs"}, func(string) []string {
			// lzma: the zstd range depends on the build's encoder.
			return []string{"-i", ".", "-o", img, "-C", "lzma:level=12"}
		}, "invalid value 'lzma:level=12' for option '--compression': lzma level 12 is out of range (valid: 0 to 9)"},
		{"missing input", []string{"mkdwarfs", "dwarfsextract"}, func(string) []string { return []string{"-o", img + ".out"} },
			"option '--input' is required"},
	} {
		for _, name := range tc.tools {
			if tc.mistake == "surplus argument after image" && name == "dwarfsck" {
				// dwarfsck takes one image; the second argument is the surplus.
				code, _, stderr := runTool(name, img, "surplus")
				want := name + ": error: unexpected argument 'surplus'\nTry '" + name + " --help' for more information.\n"
				if code != 1 || stderr != want {
					t.Errorf("%s, %s: exit %d, stderr %q; want 1, %q", tc.mistake, name, code, stderr, want)
				}
				continue
			}
			code, stdout, stderr := runTool(name, tc.args(name)...)
			want := name + ": error: " + tc.msg + "\nTry '" + name + " --help' for more information.\n"
			if code != 1 || stderr != want || stdout != "" {
				t.Errorf("%s, %s: exit %d, stdout %q, stderr %q; want 1, %q", tc.mistake, name, code, stdout, stderr, want)
			}
		}
	}
}

func TestHelpVersionMan(t *testing.T) {
	for _, name := range allTools {
		t.Run(name, func(t *testing.T) {
			code, help, stderr := runTool(name, "--help")
			if code != 0 || stderr != "" || !strings.Contains(help, "Usage: "+name+" ") || !strings.Contains(help, "--version") || !strings.Contains(help, "--man") || !strings.Contains(help, "Exit status: 0 ") {
				t.Errorf("--help: exit %d, stderr %q, stdout:\n%s", code, stderr, help)
			}
			if code, short, _ := runTool(name, "-h"); code != 0 || short != help {
				t.Errorf("-h differs from --help (exit %d)", code)
			}
			if code, noargs, _ := runTool(name); code != 0 || noargs != help {
				t.Errorf("no arguments: exit %d, want the help text and 0:\n%s", code, noargs)
			}
			code, out, stderr := runTool(name, "--version")
			want := name + " (godwarfs) " + version.Get().String() + "\n"
			if code != 0 || stderr != "" || !strings.HasPrefix(out, want) || !strings.Contains(out, "built with go") {
				t.Errorf("--version: exit %d, stderr %q, stdout %q, want it to start with %q", code, stderr, out, want)
			}
			// --version wins over other arguments, as --help does.
			if code, out2, _ := runTool(name, "nonexistent", "--version"); code != 0 || out2 != out {
				t.Errorf("--version after other options: exit %d %q", code, out2)
			}
			code, man, stderr := runTool(name, "--man")
			if code != 0 || stderr != "" {
				t.Fatalf("--man: exit %d, stderr %q", code, stderr)
			}
			for _, s := range []string{"NAME\n       " + name + " - ", "SYNOPSIS\n", "DESCRIPTION\n", "OPTIONS\n", "EXIT STATUS\n", "SEE ALSO\n", "       -h, --help\n", "--version\n", "       --man\n"} {
				if !strings.Contains(man, s) {
					t.Errorf("--man lacks %q:\n%s", s, man)
				}
			}
			// Every option --help lists is explained in the manual.
			for _, line := range strings.Split(help, "\n") {
				f := strings.Fields(line)
				for _, w := range f {
					if strings.HasPrefix(w, "--") && len(f) > 0 && strings.HasPrefix(f[0], "-") {
						opt := strings.TrimRight(strings.SplitN(w, "[", 2)[0], ",")
						if !strings.Contains(man, opt) {
							t.Errorf("--man does not mention %s", opt)
						}
						break
					}
				}
			}
		})
	}
}

// TestMultiCall builds godwarfs and the standalone mkdwarfs and checks that
// "godwarfs --tool=mkdwarfs", a link named mkdwarfs to godwarfs and the
// standalone mkdwarfs behave the same: the same image bytes, the same
// messages and exit statuses.
func TestMultiCall(t *testing.T) {
	bin := buildTools(t)
	links := t.TempDir()
	if err := os.Symlink(filepath.Join(bin, "godwarfs"), filepath.Join(links, "mkdwarfs")); err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	for name, data := range map[string]string{"a.txt": "hello\n", "b.txt": "hello\n", "sub/c.bin": strings.Repeat("xyz", 5000)} {
		p := filepath.Join(src, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ways := []struct {
		name string
		argv []string
	}{
		{"--tool", []string{filepath.Join(bin, "godwarfs"), "--tool=mkdwarfs"}},
		{"link", []string{filepath.Join(links, "mkdwarfs")}},
		{"standalone", []string{filepath.Join(bin, "mkdwarfs")}},
	}
	type result struct {
		code           int
		stdout, stderr string
	}
	runAll := func(args ...string) []result {
		var res []result
		for _, w := range ways {
			cmd := exec.Command(w.argv[0], append(w.argv[1:], args...)...)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatalf("%s: %v", w.name, err)
			}
			res = append(res, result{code, out.String(), errb.String()})
		}
		return res
	}
	same := func(what string, res []result) {
		t.Helper()
		for i := range res[1:] {
			if res[i+1] != res[0] {
				t.Errorf("%s: %s gives %+v, %s gives %+v", what, ways[0].name, res[0], ways[i+1].name, res[i+1])
			}
		}
	}
	for _, args := range [][]string{{"--help"}, {"--version"}, {"--man"}, {"--bogus"}, {"-i", src}, {"-i", src, "-o", "x", "-l", "12"}} {
		res := runAll(args...)
		same(strings.Join(args, " "), res)
		if res[0].stdout == "" && res[0].stderr == "" {
			t.Errorf("%q: no output", args)
		}
	}
	out := t.TempDir()
	var images [][]byte
	for i, w := range ways {
		img := filepath.Join(out, w.name+".dwarfs")
		cmd := exec.Command(w.argv[0], append(w.argv[1:], "-i", src, "-o", img, "-l", "3", "--log-level=error",
			"--no-history-timestamps", "--no-create-timestamp", "--no-history-command-line")...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", ways[i].name, err, b)
		}
		b, err := os.ReadFile(img)
		if err != nil {
			t.Fatal(err)
		}
		images = append(images, b)
	}
	for i := range images[1:] {
		if !bytes.Equal(images[i+1], images[0]) {
			t.Errorf("the image from %s differs from the one from %s", ways[i+1].name, ways[0].name)
		}
	}
}

// TestExitStatusPartial: mkdwarfs exits 2 when it wrote the image but
// could not read some inputs (--continue-on-error), and 1 without writing
// anything when it stops at the first unreadable input.
func TestExitStatusPartial(t *testing.T) {
	bin := buildTools(t)
	base, err := os.MkdirTemp("", "godwarfs-partial")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	src := filepath.Join(base, "src")
	for name, data := range map[string]string{"ok": "readable\n", "secret": "unreadable\n", "locked/inner": "hidden\n"} {
		p := filepath.Join(src, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(filepath.Join(src, "secret"), 0))
	must(os.Chmod(filepath.Join(src, "locked"), 0))
	must(os.Chmod(base, 0o777))
	// Root reads everything: run the tools as nobody then.
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	tool := func(args ...string) (int, string) {
		cmd := exec.Command(filepath.Join(bin, "godwarfs"), args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		cmd.Env = append(os.Environ(), "HOME=/")
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	img := filepath.Join(base, "out.dwarfs")
	code, out := tool("--tool=mkdwarfs", "-i", src, "-o", img, "-l", "1", "--log-level=warn")
	if code != 1 || !strings.Contains(out, filepath.Join(src, "secret")) && !strings.Contains(out, filepath.Join(src, "locked")) {
		t.Errorf("without --continue-on-error: exit %d, want 1 naming the unreadable input:\n%s", code, out)
	}
	if _, err := os.Stat(img); err == nil {
		t.Error("an image was written although mkdwarfs failed")
	}
	code, out = tool("--tool=mkdwarfs", "-i", src, "-o", img, "-l", "1", "--log-level=warn", "--continue-on-error")
	if code != 2 || !strings.Contains(out, filepath.Join(src, "secret")) || !strings.Contains(out, filepath.Join(src, "locked")) {
		t.Errorf("--continue-on-error: exit %d, want 2 naming both unreadable inputs:\n%s", code, out)
	}
	code, out = tool("--tool=dwarfsck", "-l", img)
	if code != 0 || !strings.Contains(out, "ok\n") || strings.Contains(out, "secret") {
		t.Errorf("the image: exit %d, list:\n%s", code, out)
	}
	// dwarfsextract: the same status when some entries cannot be written.
	dst := filepath.Join(base, "dst")
	must(os.Mkdir(dst, 0o777))
	must(os.WriteFile(filepath.Join(dst, "ok"), []byte("in the way"), 0o444))
	code, out = tool("--tool=dwarfsextract", "-i", img, "-o", dst, "--continue-on-error")
	if code != 2 || !strings.Contains(out, "ok") {
		t.Errorf("dwarfsextract --continue-on-error: exit %d, want 2:\n%s", code, out)
	}
	if code, out = tool("--tool=dwarfsextract", "-i", img, "-o", dst); code != 1 {
		t.Errorf("dwarfsextract: exit %d, want 1:\n%s", code, out)
	}
}

// TestMountThroughGodwarfs mounts in the background with "godwarfs
// --tool=dwarfs" and through a link named mount.dwarfs: the driver
// re-executes itself for the daemon, which must again run as dwarfs.
func TestMountThroughGodwarfs(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		fixtures.FUSEUnusable(t, err.Error())
	}
	bin := buildTools(t)
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "f.txt"), []byte("through godwarfs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(t.TempDir(), "m.dwarfs")
	if out, err := exec.Command(filepath.Join(bin, "godwarfs"), "--tool=mkdwarfs", "-i", src, "-o", img, "-l", "1", "--log-level=error").CombinedOutput(); err != nil {
		t.Fatalf("mkdwarfs: %v\n%s", err, out)
	}
	links := t.TempDir()
	if err := os.Symlink(filepath.Join(bin, "godwarfs"), filepath.Join(links, "mount.dwarfs")); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{
		{filepath.Join(bin, "godwarfs"), "--tool=dwarfs"},
		{filepath.Join(links, "mount.dwarfs")},
	} {
		mnt := t.TempDir()
		out, err := exec.Command(argv[0], append(argv[1:], img, mnt)...).CombinedOutput()
		if err != nil {
			if strings.Contains(strings.ToLower(string(out)), "permission") {
				fixtures.FUSEUnusable(t, "cannot mount here: "+string(out))
			}
			t.Fatalf("%q: %v\n%s", argv, err, out)
		}
		b, rerr := os.ReadFile(filepath.Join(mnt, "f.txt"))
		if uout, err := exec.Command("fusermount3", "-u", mnt).CombinedOutput(); err != nil {
			if err := syscall.Unmount(mnt, 0); err != nil {
				t.Errorf("unmount %s: %s %v", mnt, uout, err)
			}
		}
		if rerr != nil || string(b) != "through godwarfs\n" {
			t.Errorf("%q: read %q, %v", argv, b, rerr)
		}
	}
}

// TestReadErrorMidFile packs a tree read through a FUSE mount of an image
// whose second data block is corrupt: reading the big file fails part way
// through (EIO), after mkdwarfs's scan read its first byte fine. Without
// --continue-on-error mkdwarfs exits 1 and writes nothing; with it the
// file is stored empty, the rest intact, and the exit status is 2.
func TestReadErrorMidFile(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		if os.Getenv("GODWARFS_REQUIRE_FUSE") == "1" {
			t.Fatalf("FUSE required but unusable: %v", err)
		}
		t.Skipf("skipped: FUSE unusable: %v", err)
	}
	bin := buildTools(t)
	godwarfs := filepath.Join(bin, "godwarfs")
	tool := func(args ...string) (int, string) {
		out, err := exec.Command(godwarfs, args...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	src := t.TempDir()
	var big strings.Builder
	for i := 0; big.Len() < 1<<20; i++ {
		fmt.Fprintf(&big, "line %d of a compressible file, %x\n", i, uint64(i)*uint64(i)*2654435761)
	}
	for name, data := range map[string]string{"big": big.String(), "small": "fine\n"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	img := filepath.Join(dir, "src.dwarfs")
	if code, out := tool("--tool=mkdwarfs", "-i", src, "-o", img, "-S", "16", "-C", "zstd:level=3", "--order=path", "--log-level=error"); code != 0 {
		t.Fatalf("mkdwarfs: %d %s", code, out)
	}
	// Corrupt the middle of the second block section.
	_, sections := tool("--tool=dwarfsck", "-d", "section_details", img)
	m := regexp.MustCompile(`(?m)^  1: BLOCK \S+, (\d+) bytes at offset (\d+)$`).FindStringSubmatch(sections)
	if m == nil {
		t.Fatalf("no second block in:\n%s", sections)
	}
	length, _ := strconv.ParseInt(m[1], 10, 64)
	off, _ := strconv.ParseInt(m[2], 10, 64)
	raw, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	for i := off + length/2; i < off+length/2+64; i++ {
		raw[i] ^= 0x5a
	}
	if err := os.WriteFile(img, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	mnt := t.TempDir()
	if code, out := tool("--tool=dwarfs", img, mnt); code != 0 {
		t.Fatalf("mount: %d %s", code, out)
	}
	defer func() {
		if out, err := exec.Command("fusermount3", "-u", mnt).CombinedOutput(); err != nil {
			if err := syscall.Unmount(mnt, 0); err != nil {
				t.Errorf("unmount: %s %v", out, err)
			}
		}
	}()
	if _, err := os.ReadFile(filepath.Join(mnt, "big")); err == nil {
		t.Fatal("reading the corrupt file through the mount succeeded")
	}
	out1 := filepath.Join(dir, "strict.dwarfs")
	code, out := tool("--tool=mkdwarfs", "-i", mnt, "-o", out1, "--file-hash=none", "--order=path", "--log-level=warn")
	if code != 1 || !strings.Contains(out, filepath.Join(mnt, "big")) {
		t.Errorf("without --continue-on-error: exit %d, want 1 naming big:\n%s", code, out)
	}
	if _, err := os.Stat(out1); err == nil {
		t.Error("an image was written although mkdwarfs failed")
	}
	out2 := filepath.Join(dir, "lenient.dwarfs")
	code, out = tool("--tool=mkdwarfs", "-i", mnt, "-o", out2, "--file-hash=none", "--order=path", "--log-level=warn", "--continue-on-error")
	if code != 2 || !strings.Contains(out, "storing it as an empty file") {
		t.Fatalf("--continue-on-error: exit %d, want 2 and the file stored empty:\n%s", code, out)
	}
	code, list := tool("--tool=dwarfsck", "-l", "-v", out2)
	if code != 0 || !regexp.MustCompile(`(?m) 0 \S+ \S+ big$`).MatchString(list) || !regexp.MustCompile(`(?m) 5 \S+ \S+ small$`).MatchString(list) {
		t.Errorf("the image: exit %d, want big empty and small intact:\n%s", code, list)
	}
}

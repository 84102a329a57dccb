package main

import (
	"crypto/sha256"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/internal/fixtures"
)

// TestMain lets the test binary act as mkdwarfs when re-executed.
func TestMain(m *testing.M) {
	if os.Getenv("GODWARFS_RUN_MKDWARFS") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func command(args ...string) *exec.Cmd {
	cmd := fixtures.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "GODWARFS_RUN_MKDWARFS=1")
	return cmd
}

func TestExitCodes(t *testing.T) {
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "f"), []byte("data"), 0o644)
	out := filepath.Join(t.TempDir(), "x.dwarfs")
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"-i", src, "-o", out, "-l", "1"}, 0},
		{[]string{"-i", src, "-o", out, "-l", "1"}, 1}, // exists
		{[]string{"-i", src, "-o", out, "--no-such-option"}, 1},
		{[]string{"-h"}, 0},
	} {
		err := command(tc.args...).Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.args, code, tc.code)
		}
	}
}

// TestInterrupt sends SIGINT mid-run: the output must not appear and the
// temporary file must be removed.
func TestInterrupt(t *testing.T) {
	src := t.TempDir()
	f, err := os.Create(filepath.Join(src, "big"))
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(8 << 30) // sparse; read as zeros with --no-sparse-files
	f.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "i.dwarfs")
	cmd := command("-i", src, "-o", out, "-l", "7", "--no-sparse-files")
	stderr, err := interruptOnceWriting(t, cmd, dir)
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("want exit 1 after SIGINT, got %v (%s)", err, stderr.String())
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		t.Errorf("left behind after SIGINT: %s", e.Name())
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr: %q", stderr.String())
	}
}

// TestInterruptRecompress sends SIGINT while an image is being
// recompressed: no output (or temporary file) may remain and the input
// must be unchanged.
func TestInterruptRecompress(t *testing.T) {
	src := t.TempDir()
	data := make([]byte, 32<<20)
	rand.NewChaCha8([32]byte{1}).Read(data) // incompressible
	if err := os.WriteFile(filepath.Join(src, "random"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), "in.dwarfs")
	if out, err := command("-i", src, "-o", in, "-l", "0", "-S", "20", "--log-level", "warn").CombinedOutput(); err != nil {
		t.Fatalf("build: %v: %s", err, out)
	}
	hash := func() [32]byte {
		b, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		return sha256.Sum256(b)
	}
	before := hash()
	dir := t.TempDir()
	out := filepath.Join(dir, "out.dwarfs")
	cmd := command("-i", in, "-o", out, "--recompress", "-C", "lzma:level=9", "-N", "1")
	stderr, err := interruptOnceWriting(t, cmd, dir)
	if err == nil {
		t.Skip("recompression finished before the interrupt")
	}
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("want exit 1 after SIGINT, got %v (%s)", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr: %q", stderr.String())
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		t.Errorf("left behind after SIGINT: %s", e.Name())
	}
	if hash() != before {
		t.Error("input image modified")
	}
}

// interruptOnceWriting starts cmd, waits until its temporary output shows
// up in dir, sends SIGINT and returns stderr and the exit error.
func interruptOnceWriting(t *testing.T, cmd *exec.Cmd, dir string) (*strings.Builder, error) {
	t.Helper()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ents, _ := os.ReadDir(dir)
		if len(ents) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	return &stderr, cmd.Wait()
}

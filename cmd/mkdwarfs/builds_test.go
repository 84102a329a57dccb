package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs"

	"github.com/godwarfs/godwarfs/block/encode"
	"github.com/godwarfs/godwarfs/internal/fixtures"
)

// TestBuildsReadBackIdentically makes images of one tree with this binary
// (libzstd and liblzma when built with cgo) and with a CGO_ENABLED=0 build,
// at the zstd and lzma levels, and reads every file of each back through
// the pure-Go reader.
func TestBuildsReadBackIdentically(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		t.Skipf("skipped: no go tool to build the pure-Go mkdwarfs: %v", err)
	}
	pure := filepath.Join(t.TempDir(), "mkdwarfs-purego")
	build := exec.Command(goTool, "build", "-o", pure, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}

	src := t.TempDir()
	want := map[string][]byte{}
	rng := rand.New(rand.NewPCG(7, 9))
	words := strings.Fields("func return if else for range package import type struct interface map chan go defer select case")
	for i := range 40 {
		var b bytes.Buffer
		for b.Len() < 2000+rng.IntN(60000) {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(" \n\t"[rng.IntN(3)])
		}
		name := filepath.Join(fmt.Sprintf("d%d", i%5), fmt.Sprintf("f%d.txt", i))
		os.MkdirAll(filepath.Join(src, filepath.Dir(name)), 0o755)
		if err := os.WriteFile(filepath.Join(src, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		want[filepath.ToSlash(name)] = b.Bytes()
	}

	var help bytes.Buffer
	h := fixtures.Command(pure, "-H")
	h.Stdout = &help
	if err := h.Run(); err != nil || !strings.Contains(help.String(), "ZSTD compression (klauspost/compress") {
		t.Errorf("pure-Go -H does not name the pure-Go zstd encoder (%v)", err)
	}

	own, err := command("-H").Output()
	if enc := encoderOf("7"); err != nil || !strings.Contains(string(own), "ZSTD compression ("+enc+")") {
		t.Errorf("-H does not name this build's zstd encoder %q (%v)", enc, err)
	}

	dir := t.TempDir()
	for _, level := range []string{"7", "9"} {
		sizes := map[string]int64{}
		for _, bin := range []string{"this", "purego"} {
			out := filepath.Join(dir, bin+"-l"+level+".dwarfs")
			args := []string{"-i", src, "-o", out, "-l", level, "--log-level=error"}
			cmd := command(args...)
			if bin == "purego" {
				cmd = fixtures.Command(pure, args...)
			}
			if msg, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s -l%s: %v\n%s", bin, level, err, msg)
			}
			st, _ := os.Stat(out)
			sizes[bin] = st.Size()
			checkImage(t, out, want)
		}
		t.Logf("-l%s: this build (%s) %d bytes, pure Go %d bytes", level, encoderOf(level), sizes["this"], sizes["purego"])
	}
}

func encoderOf(level string) string {
	algo := "zstd"
	if level == "9" {
		algo = "lzma"
	}
	for _, a := range encode.Algorithms() {
		if a.Name == algo {
			return a.Encoder
		}
	}
	return "?"
}

func checkImage(t *testing.T, path string, want map[string][]byte) {
	t.Helper()
	im, err := godwarfs.Open(path, nil)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer im.Close()
	seen := 0
	err = fs.WalkDir(im, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		got, err := fs.ReadFile(im, p)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want[p]) {
			return fmt.Errorf("%s: content differs", p)
		}
		seen++
		return nil
	})
	if err != nil || seen != len(want) {
		t.Fatalf("%s: %v (%d of %d files read back)", filepath.Base(path), err, seen, len(want))
	}
}

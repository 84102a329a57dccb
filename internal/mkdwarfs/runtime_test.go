//go:build unix

package mkdwarfs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/cli"
)

// appDir writes an application tree: an executable AppRun, an
// executable bin/tool and a plain data file.
func appDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for p, mode := range map[string]os.FileMode{"AppRun": 0o755, "bin/tool": 0o755, "share/data": 0o644} {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("#!/bin/sh\necho "+p+"\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fakeRuntime writes a stand-in for dwarfs-run: mkdwarfs only copies it,
// after checking that it is an ELF file.
func fakeRuntime(t *testing.T) (string, []byte) {
	t.Helper()
	b := append([]byte("\x7fELF"), bytes.Repeat([]byte("runtime "), 1000)...)
	p := filepath.Join(t.TempDir(), "dwarfs-run")
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return p, b
}

func TestRuntimeOptionErrors(t *testing.T) {
	app := appDir(t)
	rt, _ := fakeRuntime(t)
	notELF := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	noAppRun := t.TempDir()
	if err := os.WriteFile(filepath.Join(noAppRun, "run"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(t.TempDir(), "plain.dwarfs")
	mk(t, "-i", app, "-o", img, "-l1", "--log-level=error")
	out := filepath.Join(t.TempDir(), "app.run")
	for _, tc := range []struct {
		name  string
		args  []string
		want  string
		usage bool // a usage error, followed by the pointer to --help
	}{
		{"entry without runtime", []string{"-i", app, "-o", out, "--entry=bin/tool"}, "--entry needs --runtime", true},
		{"with header", []string{"-i", app, "-o", out, "--runtime=" + rt, "--header=" + rt}, "options '--runtime' and '--header' cannot be used together", true},
		{"with a rewrite", []string{"-i", img, "-o", out, "--runtime=" + rt, "--recompress"}, "--runtime builds an image from a tree", true},
		{"to standard output", []string{"-i", app, "-o", "-", "--runtime=" + rt}, "--runtime needs an output file, not standard output", true},
		{"entry without history", []string{"-i", app, "-o", out, "--runtime=" + rt, "--entry=bin/tool", "--no-history"}, "options '--entry' and '--no-history' cannot be used together", true},
		{"entry leaving the tree", []string{"-i", app, "-o", out, "--runtime=" + rt, "--entry=../bin/tool"}, "invalid value '../bin/tool' for option '--entry'", true},
		{"missing entry", []string{"-i", app, "-o", out, "--runtime=" + rt, "--entry=bin/none"}, "--entry bin/none: ", false},
		{"non-executable entry", []string{"-i", app, "-o", out, "--runtime=" + rt, "--entry=share/data"}, "--runtime: share/data in " + app + " is not an executable file", false},
		{"no AppRun", []string{"-i", noAppRun, "-o", out, "--runtime=" + rt}, "--runtime: " + noAppRun + " has no AppRun to run (name the program with --entry)", false},
		{"runtime not ELF", []string{"-i", app, "-o", out, "--runtime=" + notELF}, "runtime " + notELF + " is not an ELF executable", false},
		{"runtime missing", []string{"-i", app, "-o", out, "--runtime=" + rt + ".none"}, "reading the runtime: open " + rt + ".none", false},
		{"no runtime beside mkdwarfs", []string{"-i", app, "-o", out, "--runtime"}, "reading the runtime: open ", false},
		{"lzma blocks", []string{"-i", app, "-o", out, "--runtime=" + rt, "-C", "lzma"}, "--runtime: the runtime reads only zstd, lz4, lz4hc and uncompressed sections; choose one of those instead of --compression lzma (lzma)\n", false},
		{"level with lzma", []string{"-i", app, "-o", out, "--runtime=" + rt, "-l9"}, "instead of --compression lzma:level=9 (lzma), --metadata-compression lzma:level=9 (lzma)\n", false},
		{"brotli metadata", []string{"-i", app, "-o", out, "--runtime=" + rt, "--metadata-compression=brotli"}, "instead of --metadata-compression brotli (brotli)\n", false},
		{"flac category", []string{"-i", app, "-o", out, "--runtime=" + rt, "--categorize"}, "instead of --compression fits/image::ricepp (ricepp), --compression pcmaudio/waveform::flac:level=5 (flac)\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(tc.args...)
			if code != cli.ExitError || !strings.HasPrefix(stderr, "mkdwarfs: error: ") || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, cli.ExitError, tc.want)
			}
			if help := strings.Contains(stderr, "Try 'mkdwarfs --help'"); help != tc.usage {
				t.Errorf("pointer to --help: %v, want %v (%q)", help, tc.usage, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q", stdout)
			}
			if _, err := os.Lstat(out); err == nil {
				t.Errorf("%s was written", out)
			}
		})
	}
}

func TestRuntimePacked(t *testing.T) {
	app := appDir(t)
	rt, rtBytes := fakeRuntime(t)
	out := filepath.Join(t.TempDir(), "app.run")
	code, _, stderr := run("-i", app, "-o", out, "--runtime="+rt, "--entry=bin/tool", "-l1", "--no-progress")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		t.Errorf("%s has mode %v, want it executable", out, fi.Mode())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, rtBytes) {
		t.Fatalf("%s does not start with the runtime", out)
	}
	// The summary reports the image without the runtime, and the
	// runtime apart.
	image := int64(len(b) - len(rtBytes))
	if want := "-> " + human(image) + " image ("; !strings.Contains(stderr, want) {
		t.Errorf("summary %q lacks %q", stderr, want)
	}
	if want := ", after a " + human(int64(len(rtBytes))) + " runtime in "; !strings.Contains(stderr, want) {
		t.Errorf("summary %q lacks %q", stderr, want)
	}
	im, err := godwarfs.Open(out, &godwarfs.Options{ImageOffset: int64(len(rtBytes))})
	if err != nil {
		t.Fatalf("opening the image after the runtime: %v", err)
	}
	defer im.Close()
	got, err := im.ReadFile("bin/tool")
	if err != nil || string(got) != "#!/bin/sh\necho bin/tool\n" {
		t.Errorf("bin/tool in the image: %q, %v", got, err)
	}
}

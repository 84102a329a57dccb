//go:build unix

package dwarfsextract

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/internal/cli"
)

// tarMembers lists the member names of a tar stream.
func tarMembers(t *testing.T, data string) string {
	t.Helper()
	tr := tar.NewReader(strings.NewReader(data))
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	return strings.Join(names, " ")
}

// What is extracted: patterns as --pattern or plain arguments, "i:",
// --skip-devices and --skip-specials, and the reference's warning when
// no file matches (exit 0, nothing extracted).
func TestSelection(t *testing.T) {
	img := fixturesFor(t)[0].image
	bins := "data/ data/random.bin data/repeated-segments.bin data/sparse.bin"
	for _, tc := range []struct {
		name string
		args []string
		want string
		warn bool
	}{
		{"plain argument", []string{"data/*.bin"}, bins, false},
		{"option and arguments", []string{"--pattern", "bin/*", "docs/doc-v1.txt", "a/empty"}, "a/ a/empty bin/ bin/vet docs/ docs/doc-v1.txt", false},
		{"ignore case", []string{"i:DATA/*.BIN"}, bins, false},
		{"case matters", []string{"DATA/*.BIN"}, "", true},
		{"one of two matches", []string{"nothing/*", "bin/vet"}, "bin/ bin/vet", false},
		{"only a directory", []string{"empty-dir"}, "", true},
		{"skip devices", []string{"--skip-devices", "data/*"}, "data/ data/fifo data/random.bin data/repeated-segments.bin data/socket data/sparse.bin", false},
		{"skip specials", []string{"--skip-specials", "data/*"}, "data/ data/blockdev data/chardev data/random.bin data/repeated-segments.bin data/sparse.bin", false},
		{"skip both", []string{"--skip-devices", "--skip-specials", "data/*"}, "data/ data/random.bin data/repeated-segments.bin data/sparse.bin", false},
		{"devices only, skipped", []string{"--skip-devices", "data/*dev"}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, out, errs := runx(append([]string{"-i", img, "-f", "ustar", "-o", "-"}, tc.args...)...)
			if rc != 0 {
				t.Fatalf("rc %d: %s", rc, errs)
			}
			if got := tarMembers(t, out); got != tc.want {
				t.Errorf("members %q\nwant    %q", got, tc.want)
			}
			if warned := strings.Contains(errs, "dwarfsextract: warning: no matching files found\n"); warned != tc.warn {
				t.Errorf("warning %v, want %v: %q", warned, tc.warn, errs)
			}
		})
	}
	// --log-level=error silences the warning.
	if rc, _, errs := runx("-i", img, "-f", "ustar", "-o", "-", "--log-level=error", "nothing"); rc != 0 || errs != "" {
		t.Errorf("--log-level=error: rc %d %q", rc, errs)
	}
}

// Without -o, dwarfsextract extracts into the current directory, as the
// reference does; --num-disk-writers bounds the files written at once.
func TestDefaultOutputAndDiskWriters(t *testing.T) {
	img := fixturesFor(t)[0].image
	dir := t.TempDir()
	t.Chdir(dir)
	if rc, _, errs := runx("-i", img, "--num-disk-writers", "1", "docs/*", "a/hello.txt"); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errs)
	}
	for _, p := range []string{"a/hello.txt", "docs/doc-v1.txt", "docs/doc-v5.txt"} {
		if fi, err := os.Stat(filepath.Join(dir, p)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "bin")); err == nil {
		t.Error("bin was extracted")
	}
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--num-disk-writers", "x"}, "num-disk-writers"},
		{[]string{"--num-disk-writers", "-1"}, "num-disk-writers"},
		{[]string{"-o", "-"}, "needs an archive --format"},
	} {
		rc, _, errs := runx(append([]string{"-i", img}, tc.args...)...)
		if rc != 1 || !strings.Contains(errs, tc.err) {
			t.Errorf("%q: rc %d %q", tc.args, rc, errs)
		}
	}
	// Writing an archive, the option has no use; at the default log
	// level that is said.
	var out, errb bytes.Buffer
	if rc := Main(context.Background(), []string{"dwarfsextract", "-i", img, "-f", "ustar", "-o", "-", "--num-disk-writers", "2", "bin/vet"}, cli.Stdio{Out: &out, Err: &errb}); rc != 0 ||
		!strings.Contains(errb.String(), "--num-disk-writers is only used when extracting to disk") {
		t.Errorf("rc %d %q", rc, errb.String())
	}
}

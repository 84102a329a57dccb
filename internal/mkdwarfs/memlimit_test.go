package mkdwarfs

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/cli"
)

func TestPlanMemory(t *testing.T) {
	for _, tc := range []struct {
		name      string
		limit     int64
		bits      int
		workers   int
		lookback  int
		comp      string
		wantErr   bool
		minQueue  int64
		maxQueue  int64
		errSubstr string
	}{
		{name: "small blocks fit", limit: 256 << 20, bits: 20, workers: 2, lookback: 2, comp: "lz4hc:level=9", minQueue: 1 << 20, maxQueue: 4 << 20},
		{name: "queue shrinks below two per worker", limit: 240 << 20, bits: 22, workers: 8, lookback: 2, comp: "zstd:level=3", minQueue: 4 << 20, maxQueue: 8 << 20},
		{name: "big blocks do not fit", limit: 512 << 20, bits: 26, workers: 2, lookback: 3, comp: "lzma:level=9", wantErr: true, errSubstr: "blocks of 64.0 MiB (-S 26), 2 compression workers"},
		{name: "runtime alone does not fit", limit: 16 << 20, bits: 16, workers: 1, lookback: 1, comp: "lz4", wantErr: true, errSubstr: "--memory-limit=16.0 MiB is too low"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := planMemory(tc.limit, tc.bits, tc.workers, tc.lookback, tc.comp)
			if tc.wantErr {
				if !errors.Is(err, ErrMemoryLimit) || !strings.Contains(err.Error(), tc.errSubstr) || !strings.Contains(err.Error(), "need at least") {
					t.Fatalf("error %v; want ErrMemoryLimit naming %q and what is needed", err, tc.errSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.queue < tc.minQueue || p.queue > tc.maxQueue {
				t.Errorf("queue %d; want %d..%d", p.queue, tc.minQueue, tc.maxQueue)
			}
			if p.fixed+p.queue > tc.limit {
				t.Errorf("fixed %d + queue %d exceed the limit %d", p.fixed, p.queue, tc.limit)
			}
		})
	}
}

// TestMemoryLimitTooLow: a limit the options cannot meet is an error
// before anything is read or written.
func TestMemoryLimitTooLow(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.dwarfs")
	code, stderr := mkStdin(strings.NewReader(""), "-i", "-", "-o", out, "-S", "24", "--memory-limit=64m", "--log-level", "warn")
	if code == 0 || !strings.Contains(stderr, "--memory-limit=64.0 MiB is too low") || !strings.Contains(stderr, "need at least") {
		t.Fatalf("exit %d, stderr %q; want an error saying what the options need", code, stderr)
	}
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("output exists after the error: %v", err)
	}
}

// TestMemoryLimitOutgrown: an input whose tree outgrows the limit, which
// the options alone meet, ends the build with an error saying so, and
// nothing is left under the output name.
func TestMemoryLimitOutgrown(t *testing.T) {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(manyEntries(pw, 400_000)) }()
	out := filepath.Join(t.TempDir(), "out.dwarfs")
	code, stderr := mkStdin(pr, "-i", "-", "-o", out, "-S", "16", "-N", "1", "-C", "lz4", "--memory-limit=96m",
		"--tmpdir", t.TempDir(), "--log-level", "warn", "--no-progress")
	pr.CloseWithError(errors.New("the build has ended"))
	if code == 0 || !strings.Contains(stderr, "the input's tree and metadata hold") || !strings.Contains(stderr, "--memory-limit=96.0 MiB") {
		t.Fatalf("exit %d, stderr %q; want an error saying the tree outgrew the limit", code, stderr)
	}
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("output exists after the error: %v", err)
	}
}

// manyEntries writes a tar stream of n entries: n/100 directories (at
// least one) holding files, a quarter of them a few bytes long, the rest
// empty, with the content of file i being strconv.Itoa(i%1000).
func manyEntries(w io.Writer, n int) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	tw := tar.NewWriter(bw)
	mt := time.Unix(1700000000, 0)
	ndirs := max(1, n/100)
	files := n - ndirs
	i := 0
	for d := 0; d < ndirs; d++ {
		dir := fmt.Sprintf("d%05d", d)
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: mt}); err != nil {
			return err
		}
		for end := files * (d + 1) / ndirs; i < end; i++ {
			var data []byte
			if i%4 == 0 {
				data = []byte(strconv.Itoa(i % 1000))
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("%s/f%d", dir, i), Mode: 0o644, Size: int64(len(data)), ModTime: mt}); err != nil {
				return err
			}
			if _, err := tw.Write(data); err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// TestMemoryLimitTarStream builds an image of many tiny entries from a
// generated tar stream on standard input under a --memory-limit of 256 MiB
// and 700 bytes per entry, and checks that it lists exactly the stream's
// entries with their contents. GODWARFS_TEST_ENTRIES sets the number of
// entries (default 200,000, which builds in seconds; the 2,000,000
// take a minute or two of CPU).
func TestMemoryLimitTarStream(t *testing.T) {
	n := 200_000
	if v := os.Getenv("GODWARFS_TEST_ENTRIES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 2 {
			t.Fatalf("GODWARFS_TEST_ENTRIES=%q: want a number of at least 2", v)
		}
	}
	t.Logf("%d entries", n)
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(manyEntries(pw, n)) }()
	img := filepath.Join(t.TempDir(), "many.dwarfs")
	limit := fmt.Sprintf("--memory-limit=%d", 256<<20+700*n)
	code, stderr := mkStdin(pr, "-i", "-", "-o", img, "-l", "1", limit, "--tmpdir", t.TempDir(), "--log-level", "warn", "--no-progress")
	if code != 0 {
		t.Fatalf("mkdwarfs: exit %d: %s", code, stderr)
	}
	im, err := godwarfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	ndirs := max(1, n/100)
	files := n - ndirs
	seen := 0
	for d := 0; d < ndirs; d++ {
		dir := fmt.Sprintf("d%05d", d)
		ents, err := im.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := files*d/ndirs, files*(d+1)/ndirs
		if len(ents) != hi-lo {
			t.Fatalf("%s: %d entries, want %d", dir, len(ents), hi-lo)
		}
		for _, e := range ents {
			i, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "f"))
			if err != nil || i < lo || i >= hi || !strings.HasPrefix(e.Name(), "f") {
				t.Fatalf("%s/%s: not an entry of the stream", dir, e.Name())
			}
			seen++
			// Every 97th file is read back; all are checked by size.
			fi, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			want := ""
			if i%4 == 0 {
				want = strconv.Itoa(i % 1000)
			}
			if fi.Size() != int64(len(want)) || fi.Sys().(*godwarfs.Stat).Mode&syscall.S_IFMT != syscall.S_IFREG {
				t.Fatalf("%s/%s: size %d mode %o, want a regular file of %d bytes", dir, e.Name(), fi.Size(), fi.Mode(), len(want))
			}
			if i%97 == 0 {
				got, err := im.ReadFile(dir + "/" + e.Name())
				if err != nil || string(got) != want {
					t.Fatalf("%s/%s: %q %v, want %q", dir, e.Name(), got, err, want)
				}
			}
		}
	}
	root, err := im.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(root) != ndirs || seen != files {
		t.Fatalf("%d directories and %d files, want %d and %d", len(root), seen, ndirs, files)
	}
}

// mkStdin runs Main with stdin and returns its exit status and stderr.
func mkStdin(stdin io.Reader, args ...string) (int, string) {
	var stderr bytes.Buffer
	code := Main(context.Background(), append([]string{"mkdwarfs"}, args...), cli.Stdio{In: stdin, Out: &bytes.Buffer{}, Err: &stderr})
	return code, stderr.String()
}

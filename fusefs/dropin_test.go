//go:build linux && !386 && !arm

package fusefs_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/mountopts"
)

// TestMountThroughFusermount: a mount made by fusermount3, which hands
// the /dev/fuse fd back over a socket (what go-fuse's getConnection
// receives, rather than mount(2) as root does), serves and unmounts.
func TestMountThroughFusermount(t *testing.T) {
	requireFuse(t)
	if _, err := exec.LookPath("fusermount3"); err != nil {
		t.Skip("no fusermount3:", err)
	}
	m, _ := sampleSource()
	direct := false
	srv, err := fusefs.Mount(t.TempDir(), m, fusefs.Config{Options: mountopts.Defaults().MountOptions, DirectMount: &direct})
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(srv.Dir(), "a/hello.txt"))
	if err != nil || string(b) != "hello\n" {
		t.Errorf("read: %q %v", b, err)
	}
	if err := srv.Unmount(); err != nil {
		t.Fatal(err)
	}
}

// mountWith mounts src with the -o list opts and extra driver settings,
// collecting the driver's messages in the returned buffer.
func mountWith(t *testing.T, src fusefs.Source, opts string, edit func(*fusefs.MountOptions)) (*fusefs.Server, *syncBuffer) {
	t.Helper()
	requireFuse(t)
	o := mountopts.Defaults()
	if err := o.ParseString(opts); err != nil {
		t.Fatal(err)
	}
	mo := o.MountOptions
	if edit != nil {
		edit(&mo)
	}
	var stderr syncBuffer
	srv, err := fusefs.Mount(t.TempDir(), src, fusefs.Config{Options: mo, Stderr: &stderr})
	if err != nil {
		if errors.Is(err, syscall.EPERM) || strings.Contains(err.Error(), "fusermount") {
			fixtures.FUSEUnusable(t, err.Error())
		}
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return srv, &stderr
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMemReadOnlyOption: -o readonly reports every mode without write
// bits, as the reference does for overlay-free use; by default the
// stored modes are reported unchanged.
func TestMemReadOnlyOption(t *testing.T) {
	for _, opts := range []string{"", "readonly"} {
		t.Run("opts="+opts, func(t *testing.T) {
			m, paths := sampleSource()
			srv, _ := mountWith(t, m, opts, nil)
			paths["."] = 0
			for p, ino := range paths {
				fi, err := os.Lstat(filepath.Join(srv.Dir(), p))
				if err != nil {
					t.Fatal(err)
				}
				want := m.attrs[ino].Mode
				if opts == "readonly" {
					want &^= 0o222
				}
				if got := fi.Sys().(*syscall.Stat_t).Mode; got != want {
					t.Errorf("%s: mode %o, want %o", p, got, want)
				}
			}
		})
	}
}

// TestMemCaseInsensitive: lookups ignore case (Unicode simple folding);
// of entries that differ only in case the first in byte order is found,
// and each such collision is reported when mounting.
func TestMemCaseInsensitive(t *testing.T) {
	m := newMemSource()
	m.file(0, "README", []byte("upper"))
	m.file(0, "ReadMe", []byte("mixed"))
	m.file(0, "readme", []byte("lower"))
	m.file(0, "Kelvin", []byte("kelvin"))
	d := m.mkdir(0, "Dir")
	m.file(d, "Ärger.txt", []byte("umlaut"))
	m.file(d, "x", []byte("small x"))
	m.file(d, "X", []byte("big X"))
	sub := m.mkdir(d, "Sub")
	m.file(sub, "File.TXT", []byte("deep"))

	read := func(dir, p string) string {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			return "error: " + err.Error()
		}
		return string(b)
	}
	srv, stderr := mountWith(t, m, "case_insensitive", nil)
	for p, want := range map[string]string{
		"readme":           "upper",
		"ReadMe":           "upper",
		"rEaDmE":           "upper",
		"dir/sub/file.txt": "deep",
		"DIR/SUB/FILE.TXT": "deep",
		"dIr/äRGER.TXT":    "umlaut",
		"dir/x":            "big X",
		"\u212Aelvin":      "kelvin", // KELVIN SIGN folds to k
		"KELVIN":           "kelvin",
	} {
		if got := read(srv.Dir(), p); got != want {
			t.Errorf("case_insensitive %s: %q, want %q", p, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(srv.Dir(), "dir/nope")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing name: %v", err)
	}
	// Listings keep the stored names.
	ents, err := os.ReadDir(filepath.Join(srv.Dir(), "DIR"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, ","); got != "Sub,X,x,Ärger.txt" {
		t.Errorf("listing: %s", got)
	}
	want := "dwarfs: warning: case-insensitive collision in directory \"\" (inode=0): README, ReadMe, readme\n" +
		"dwarfs: warning: case-insensitive collision in directory \"Dir\" (inode=5): X, x\n"
	if got := stderr.String(); got != want {
		t.Errorf("warnings:\n%s\nwant:\n%s", got, want)
	}

	exact, stderr := mountWith(t, m, "", nil)
	if got := read(exact.Dir(), "readme"); got != "lower" {
		t.Errorf("exact readme: %q", got)
	}
	if got := read(exact.Dir(), "dir/sub/file.txt"); !strings.HasPrefix(got, "error:") {
		t.Errorf("exact lookup ignored case: %q", got)
	}
	if stderr.String() != "" {
		t.Errorf("warnings without case_insensitive: %s", stderr)
	}
}

// TestMemCacheSparse: sparse files bypass the page cache by default
// (no_cache_sparse), so every read reaches the driver; cache_sparse
// caches them like other files.
func TestMemCacheSparse(t *testing.T) {
	for _, c := range []struct {
		opts        string
		file        string
		rereadHits  bool // the second read is served by the kernel
		description string
	}{
		{"", "sparse.bin", false, "sparse file, default no_cache_sparse"},
		{"no_cache_sparse", "sparse.bin", false, "sparse file, no_cache_sparse"},
		{"cache_sparse", "sparse.bin", true, "sparse file, cache_sparse"},
		{"", "big.bin", true, "dense file, default"},
		{"cache_sparse,no_cache_files", "sparse.bin", false, "no_cache_files wins"},
	} {
		t.Run(c.description, func(t *testing.T) {
			m, paths := sampleSource()
			srv, _ := mountWith(t, m, c.opts, nil)
			p := filepath.Join(srv.Dir(), c.file)
			for i := 0; i < 2; i++ {
				before := fusefs.RequestCounts(srv)["READ"]
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(b, m.data[paths[c.file]]) {
					t.Fatalf("%s: content differs", c.file)
				}
				reads := fusefs.RequestCounts(srv)["READ"] - before
				switch {
				case i == 0 && reads == 0:
					t.Fatalf("first read of %s reached the driver 0 times", c.file)
				case i == 1 && c.rereadHits && reads != 0:
					t.Errorf("second read of %s: %d READ requests, want 0 (page cache)", c.file, reads)
				case i == 1 && !c.rereadHits && reads == 0:
					t.Errorf("second read of %s came from the page cache", c.file)
				}
			}
		})
	}
}

// TestMemAnalysis: analysis_file lists each regular file once, by the
// path it was first looked up by, in the order files were first opened;
// files only looked at are not listed.
func TestMemAnalysis(t *testing.T) {
	m, paths := sampleSource()
	m.file(paths["a"], "second.txt", []byte("2nd"))
	out, err := os.Create(filepath.Join(t.TempDir(), "analysis"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	srv, _ := mountWith(t, m, "", func(mo *fusefs.MountOptions) { mo.Analysis = out })
	dir := srv.Dir()
	if _, err := os.Stat(filepath.Join(dir, "a/hello.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sparse.bin")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"hardlink", "a/hello.txt", "big.bin", "big.bin"} {
		if _, err := os.ReadFile(filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	// A name the kernel learnt from a directory listing (READDIRPLUS)
	// rather than a lookup.
	if _, err := os.ReadDir(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(filepath.Join(dir, "a/second.txt")); err != nil {
		t.Fatal(err)
	}
	if err := srv.Unmount(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	// hello.txt was opened through "hardlink" but first looked up (by
	// the stat) as a/hello.txt.
	if got, want := string(b), "a/hello.txt\nbig.bin\na/second.txt\n"; got != want {
		t.Errorf("analysis file:\n%s\nwant:\n%s", got, want)
	}
}

// TestMemMaxThreads: with max_threads=2 no more than two requests are
// handled at once; without it four reads run side by side.
func TestMemMaxThreads(t *testing.T) {
	for _, c := range []struct {
		opts string
		peak int
	}{{"no_cache_files", 4}, {"no_cache_files,max_threads=2", 2}} {
		t.Run(c.opts, func(t *testing.T) {
			m, _ := sampleSource()
			const n = 4
			m.holdFiles(n)
			srv, _ := mountWith(t, m, c.opts, nil)
			errs := readHeld(srv.Dir(), n)
			// The bound only turns a hang into a failure.
			for range c.peak {
				select {
				case <-m.entered:
				case <-time.After(30 * time.Second):
					t.Fatal("reads did not reach the source")
				}
			}
			if c.peak < n {
				// Give a request over the limit the chance to
				// show up.
				select {
				case <-m.entered:
					t.Errorf("a read ran beside %d others with %s", c.peak, c.opts)
				case <-time.After(300 * time.Millisecond):
				}
			}
			m.releaseHeld(t, errs, n)
			m.mu.Lock()
			peak := m.peak
			m.mu.Unlock()
			if peak != c.peak {
				t.Errorf("%d reads at once, want %d", peak, c.peak)
			}
		})
	}
}

// TestMemAutoUnmount: an auto_unmount mount (made through fusermount3,
// which stays to unmount if we die) serves and unmounts normally.
func TestMemAutoUnmount(t *testing.T) {
	m, _ := sampleSource()
	srv, _ := mountWith(t, m, "auto_unmount", nil)
	b, err := os.ReadFile(filepath.Join(srv.Dir(), "a/hello.txt"))
	if err != nil || string(b) != "hello\n" {
		t.Fatalf("read: %q %v", b, err)
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mi), " "+srv.Dir()+" ") {
		t.Fatalf("%s not in mountinfo", srv.Dir())
	}
	if err := srv.Unmount(); err != nil {
		t.Fatal(err)
	}
	mi, _ = os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mi), " "+srv.Dir()+" ") {
		t.Errorf("%s still mounted", srv.Dir())
	}
}

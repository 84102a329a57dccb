//go:build unix

package mkdwarfs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/internal/cli"
)

func run(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), append([]string{"mkdwarfs"}, args...), cli.Stdio{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
	return code, stdout.String(), stderr.String()
}

func TestDeterministic(t *testing.T) {
	src := makeTree(t)
	out := t.TempDir()
	var ref []byte
	for i, n := range []string{"1", "4", "1", "3"} {
		img := filepath.Join(out, "d"+n+".dwarfs")
		os.Remove(img)
		mk(t, "-i", src, "-o", img, "-N", n, "-l", "4", "-S", "14", "--no-history-timestamps", "--no-history-command-line", "--no-create-timestamp", "--log-level", "error")
		b, err := os.ReadFile(img)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			ref = b
			continue
		}
		if !bytes.Equal(b, ref) {
			t.Fatalf("image with -N %s differs from -N 1", n)
		}
	}
}

func TestMetadataOptions(t *testing.T) {
	src := makeTree(t)
	want := expected(t, src)
	out := t.TempDir()
	owner, group := uint32(1234), uint32(5678)
	t.Run("set-owner-group-time", func(t *testing.T) {
		img := filepath.Join(out, "o.dwarfs")
		mk(t, "-i", src, "-o", img, "-l", "1", "--set-owner", "1234", "--set-group", "5678", "--set-time", "1600000000", "--log-level", "warn")
		got, md := readBack(t, img)
		compareTrees(t, want, got, cmpOpts{uid: &owner, gid: &group, skipTime: true})
		for p, g := range got {
			if g.mtime.Unix() != 1600000000 {
				t.Errorf("%q: mtime %v", p, g.mtime)
			}
		}
		if len(md.Uids) != 1 || len(md.Gids) != 1 {
			t.Errorf("uids %v gids %v", md.Uids, md.Gids)
		}
	})
	t.Run("chmod", func(t *testing.T) {
		img := filepath.Join(out, "c.dwarfs")
		mk(t, "-i", src, "-o", img, "-l", "1", "--chmod", "Fa-x,go-w,Da+rx", "--log-level", "warn")
		mc, _ := dedupChmod("Fa-x,go-w,Da+rx")
		got, _ := readBack(t, img)
		compareTrees(t, want, got, cmpOpts{modeFn: mc})
	})
	t.Run("time-resolution-ns", func(t *testing.T) {
		img := filepath.Join(out, "ns.dwarfs")
		mk(t, "-i", src, "-o", img, "-l", "1", "--time-resolution", "ns", "--log-level", "warn")
		got, _ := readBack(t, img)
		compareTrees(t, want, got, cmpOpts{subsec: true})
	})
	t.Run("time-resolution-ms", func(t *testing.T) {
		img := filepath.Join(out, "ms.dwarfs")
		mk(t, "-i", src, "-o", img, "-l", "1", "--time-resolution", "ms", "--log-level", "warn")
		got, _ := readBack(t, img)
		compareTrees(t, want, got, cmpOpts{timeRes: 1e6})
	})
	t.Run("time-resolution-min", func(t *testing.T) {
		img := filepath.Join(out, "min.dwarfs")
		mk(t, "-i", src, "-o", img, "-l", "1", "--time-resolution", "60", "--log-level", "warn")
		got, _ := readBack(t, img)
		compareTrees(t, want, got, cmpOpts{timeRes: 60e9})
	})
	t.Run("no-sparse-files", func(t *testing.T) {
		img := filepath.Join(out, "ns2.dwarfs")
		mk(t, "-i", src, "-o", img, "-l", "3", "--no-sparse-files", "--log-level", "warn")
		got, md := readBack(t, img)
		compareTrees(t, want, got, cmpOpts{})
		if md.HoleBlockIndex != nil || len(md.Features) != 0 {
			t.Errorf("holes stored despite --no-sparse-files")
		}
	})
	t.Run("header-and-stdout", func(t *testing.T) {
		hdr := filepath.Join(out, "hdr")
		os.WriteFile(hdr, []byte("#!/bin/sh\necho self-extracting\nexit 0\n"), 0o644)
		code, stdout, stderr := run("-i", src, "-o", "-", "-l", "1", "--header", hdr, "--log-level", "warn")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if !strings.HasPrefix(stdout, "#!/bin/sh\n") {
			t.Fatal("header missing")
		}
		img := filepath.Join(out, "stdout.dwarfs")
		os.WriteFile(img, []byte(stdout), 0o644)
		got, _ := readBack(t, img)
		compareTrees(t, want, got, cmpOpts{})
	})
}

func dedupChmod(spec string) (func(uint32) uint32, error) {
	// Expected modes computed independently for the spec used above.
	return func(m uint32) uint32 {
		switch m & syscall.S_IFMT {
		case syscall.S_IFDIR:
			return (m | 0o555) &^ 0o022
		case syscall.S_IFLNK:
			return m &^ 0o133 // symlinks are "files" for F clauses
		default:
			return m &^ 0o133
		}
	}, nil
}

func TestSpecialFiles(t *testing.T) {
	src := t.TempDir()
	if err := unix.Mkfifo(filepath.Join(src, "fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	os.WriteFile(filepath.Join(src, "f"), []byte("x"), 0o644)
	haveDev := false
	if os.Geteuid() == 0 {
		if err := unix.Mknod(filepath.Join(src, "null"), unix.S_IFCHR|0o666, mkdev(1, 3)); err == nil {
			haveDev = true
		}
	} else {
		t.Log("not root: device nodes not tested")
	}
	out := t.TempDir()
	img := filepath.Join(out, "s.dwarfs")
	mk(t, "-i", src, "-o", img, "-l", "0", "--with-devices", "--with-specials", "--log-level", "warn")
	got, _ := readBack(t, img)
	compareTrees(t, expected(t, src), got, cmpOpts{})
	if haveDev && got["null"].rdev != unix.Mkdev(1, 3) {
		t.Errorf("rdev %x", got["null"].rdev)
	}
	img2 := filepath.Join(out, "s2.dwarfs")
	mk(t, "-i", src, "-o", img2, "-l", "0", "--log-level", "warn")
	got, _ = readBack(t, img2)
	if _, ok := got["fifo"]; ok {
		t.Error("fifo included without --with-specials")
	}
	if _, ok := got["null"]; ok {
		t.Error("device included without --with-devices")
	}
}

func TestUsage(t *testing.T) {
	src := t.TempDir()
	for _, args := range [][]string{
		{"-i", src}, {"-o", "x"}, {"-i", src, "-o", "x", "-l", "10"}, {"-i", src, "-o", "x", "--bogus"},
		{"-i", src, "-o", "x", "-C", "nope"}, {"-i", src, "-o", "x", "--order", "random"},
		{"-i", src, "-o", "x", "-P", "names,bogus"}, {"-i", src, "-o", "x", "--chmod", "q+r"},
		{"-i", src, "-o", "x", "-F", "x y"}, {"-i", src, "-o", "x", "-S", "9"},
		{"-i", src, "-o", "x", "--time-resolution", "fortnight"}, {"-i", src, "-o", "x", "--file-hash", "crc"},
		{"-i", src, "-o", "x", "--set-owner", "root"}, {"-i", src, "-o", "x", "-L", "lots"},
	} {
		if code, _, stderr := run(args...); code != 1 || !strings.Contains(stderr, "Try 'mkdwarfs --help'") {
			t.Errorf("%v: exit %d (%q), want 1 and a pointer to --help", args, code, stderr)
		}
	}
	code, stdout, _ := run("-h")
	if code != 0 || !strings.Contains(stdout, "--compress-level") || strings.Contains(stdout, "lzma:level=9") {
		t.Errorf("-h: %d %q", code, stdout)
	}
	code, stdout, _ = run("-H")
	if code != 0 || !strings.Contains(stdout, "  9      26     lzma:level=9           zstd:level=16   lzma:level=9   12 / 4    nilsimsa\n") ||
		!strings.Contains(stdout, "  7      24     zstd:level=22:tlen=512 zstd:level=16   zstd:level=22  12 / 3    nilsimsa\n") {
		t.Errorf("-H: %d %q", code, stdout)
	}
	// Bundled and attached short options.
	cfg, err := ParseConfig([]string{"-i", src, "-o", "x", "-l1", "-N4", "-fS", "12", "-L", "512m", "--order=path"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Workers != 4 || !cfg.Force || cfg.Build.BlockSizeBits != 12 || cfg.MemLimit != 512<<20 ||
		cfg.Build.Order != dedup.OrderPath || cfg.Compression != "lz4" {
		t.Errorf("parsed %+v", cfg)
	}
}

// TestLevelCompression: the levels' block and metadata compression, and
// -C over the level's.
func TestLevelCompression(t *testing.T) {
	src := t.TempDir()
	for _, tc := range []struct {
		args        []string
		block, meta string
	}{
		{nil, "zstd:level=22:tlen=512", "zstd:level=22"},
		{[]string{"-l6"}, "zstd:level=22:tlen=512", "null"},
		{[]string{"-l5"}, "zstd:level=19", "null"},
		{[]string{"-l9"}, "lzma:level=9", "lzma:level=9"},
		{[]string{"-C", "zstd:level=22"}, "zstd:level=22", "zstd:level=22"},
	} {
		cfg, err := ParseConfig(append([]string{"-i", src, "-o", "x"}, tc.args...), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Compression != tc.block || cfg.MetaComp != tc.meta {
			t.Errorf("%v: blocks %q, metadata %q; want %q, %q", tc.args, cfg.Compression, cfg.MetaComp, tc.block, tc.meta)
		}
	}
}

func noTemps(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

func TestFailures(t *testing.T) {
	src := makeTree(t)
	out := t.TempDir()
	t.Run("exists", func(t *testing.T) {
		img := filepath.Join(out, "exists.dwarfs")
		os.WriteFile(img, []byte("keep me"), 0o644)
		code, _, stderr := run("-i", src, "-o", img, "-l", "0")
		if code != 1 || !strings.Contains(stderr, "already exists") {
			t.Errorf("exit %d: %s", code, stderr)
		}
		if b, _ := os.ReadFile(img); string(b) != "keep me" {
			t.Error("existing output modified")
		}
		mk(t, "-i", src, "-o", img, "-l", "0", "-f", "--log-level", "warn")
		readBack(t, img)
	})
	t.Run("unreadable", func(t *testing.T) {
		bad := filepath.Join(src, "text/log.txt")
		img := filepath.Join(out, "unreadable.dwarfs")
		if os.Geteuid() != 0 {
			os.Chmod(bad, 0)
			defer os.Chmod(bad, 0o644)
			code, _, stderr := run("-i", src, "-o", img, "-l", "0")
			if code != 1 || !strings.Contains(stderr, bad) {
				t.Errorf("exit %d: %s", code, stderr)
			}
		} else {
			t.Log("running as root: chmod 000 does not block reads; simulating with an open hook")
		}
		// Fail on the segmenter's (second) open, i.e. after blocks are
		// written, to check that the temporary output is removed.
		cfg, err := ParseConfig([]string{"-i", src, "-o", img, "-l", "0", "-S", "12"}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		opens := 0
		cfg.Build.OpenFile = func(name string) (*os.File, error) {
			if name == bad {
				if opens++; opens > 1 {
					return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EACCES}
				}
			}
			return os.Open(name)
		}
		cfg.Build.Order = dedup.OrderRevPath
		_, err = Run(context.Background(), cfg, nil)
		if err == nil || !strings.Contains(err.Error(), bad) {
			t.Fatalf("want error naming %s, got %v", bad, err)
		}
		if _, err := os.Stat(img); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("output exists after failure: %v", err)
		}
		noTemps(t, out)
	})
	t.Run("cancel", func(t *testing.T) {
		img := filepath.Join(out, "cancel.dwarfs")
		cfg, err := ParseConfig([]string{"-i", src, "-o", img, "-l", "0", "-S", "12"}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cfg.Build.Progress = func(dedup.Stats) { cancel() } // like SIGINT mid-run
		if _, err := Run(ctx, cfg, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
		if _, err := os.Stat(img); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("output exists after cancel")
		}
		noTemps(t, out)
	})
	t.Run("no-output-dir", func(t *testing.T) {
		code, _, stderr := run("-i", src, "-o", filepath.Join(out, "missing/dir/x.dwarfs"), "-l", "0")
		if code != 1 || !strings.Contains(stderr, "creating output") {
			t.Errorf("exit %d: %s", code, stderr)
		}
	})
	t.Run("missing-input", func(t *testing.T) {
		code, _, stderr := run("-i", filepath.Join(out, "nope"), "-o", filepath.Join(out, "y.dwarfs"), "-l", "0")
		if code != 1 || !strings.Contains(stderr, "nope") {
			t.Errorf("exit %d: %s", code, stderr)
		}
		noTemps(t, out)
	})
	t.Run("failing-writer", func(t *testing.T) {
		cfg, err := ParseConfig([]string{"-i", src, "-o", "-", "-l", "0", "-S", "12"}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		fw := &failWriter{after: 20000}
		_, err = Run(context.Background(), cfg, fw)
		if err == nil || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("want ENOSPC, got %v", err)
		}
	})
	t.Run("memory-limit", func(t *testing.T) {
		img := filepath.Join(out, "mem.dwarfs")
		// A limit that fits these options (TestMemoryLimitTooLow has
		// one that does not): the build stays within it and loses
		// nothing.
		mk(t, "-i", src, "-o", img, "-l", "1", "-S", "12", "-L", "256m", "-N", "3", "--log-level", "warn")
		got, _ := readBack(t, img)
		compareTrees(t, expected(t, src), got, cmpOpts{})
	})
	_ = time.Second
}

type failWriter struct{ n, after int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n+len(p) > f.after {
		return 0, syscall.ENOSPC
	}
	f.n += len(p)
	return len(p), nil
}

func TestInputListStdinAndSummary(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "a/b"), 0o755)
	os.WriteFile(filepath.Join(src, "a/b/f"), []byte("f"), 0o644)
	os.WriteFile(filepath.Join(src, "g"), []byte("g"), 0o644)
	os.WriteFile(filepath.Join(src, "h"), []byte("h"), 0o644)
	img := filepath.Join(t.TempDir(), "l.dwarfs")
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"mkdwarfs", "-i", src, "-o", img, "-l", "0", "--input-list", "-", "--progress", "simple"}, cli.Stdio{In: strings.NewReader("a/b/f\ng\n"), Out: &stdout, Err: &stderr})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "scanned 3 dirs") || !strings.Contains(stderr.String(), "image (") {
		t.Errorf("summary: %q", stderr.String())
	}
	got, _ := readBack(t, img)
	var names []string
	for p := range got {
		names = append(names, p)
	}
	if len(got) != 5 || got["h"].mode != 0 && len(got) != 5 {
		t.Errorf("entries %v", names)
	}
	if _, ok := got["h"]; ok {
		t.Error("unlisted file included")
	}
}

func TestDebugFilterAndUnsupported(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "obj"), 0o755)
	os.WriteFile(filepath.Join(src, "a.c"), nil, 0o644)
	os.WriteFile(filepath.Join(src, "a.o"), nil, 0o644)
	os.WriteFile(filepath.Join(src, "obj/x"), nil, 0o644)
	// As the reference: absolute paths, directories with a trailing '/'.
	abs, err := filepath.EvalSymlinks(src)
	if err != nil {
		t.Fatal(err)
	}
	for mode, want := range map[string]string{
		"all":            "+ R/a.c\n- R/a.o\n- R/obj/\n",
		"files":          "+ R/a.c\n- R/a.o\n",
		"excluded":       "R/a.o\nR/obj/\n",
		"included-files": "R/a.c\n",
	} {
		want = strings.ReplaceAll(want, "R/", abs+"/")
		code, stdout, stderr := run("-i", src, "-F", "- *.o", "-F", "- obj/", "--debug-filter="+mode)
		if code != 0 || stdout != want {
			t.Errorf("%s: exit %d %q (want %q) %s", mode, code, stdout, want, stderr)
		}
	}
	code, stdout, _ := run("-i", src, "-F", "- *.o", "--debug-filter")
	if code != 0 || !strings.Contains(stdout, "- "+abs+"/a.o\n") {
		t.Errorf("implicit all: %d %q", code, stdout)
	}
	for _, opt := range []string{"--categorize=binary", "--categorize=incompressible,pcmaudio"} {
		if code, _, stderr := run("-i", src, "-o", filepath.Join(t.TempDir(), "x"), opt); code != 0 {
			t.Errorf("%s: exit %d %q", opt, code, stderr)
		}
	}
	img := filepath.Join(t.TempDir(), "x.dwarfs")
	mk(t, "-i", src, "-o", img, "-l", "0", "--log-with-context", "--compress-niceness", "5", "--no-category-names", "--no-category-metadata", "--num-segmenter-workers", "3")
}

func TestOutputInsideInput(t *testing.T) {
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "f"), []byte("data"), 0o644)
	img := filepath.Join(src, "self.dwarfs")
	mk(t, "-i", src, "-o", img, "-l", "1", "--log-level", "warn")
	mk(t, "-i", src, "-o", img, "-l", "1", "-f", "--log-level", "warn")
	got, _ := readBack(t, img)
	if len(got) != 2 {
		t.Errorf("image contains %d entries, want root and f", len(got))
	}
}

func TestFilterMergeFileAndBadRule(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "d"), 0o755)
	os.WriteFile(filepath.Join(src, "d/a.c"), nil, 0o644)
	os.WriteFile(filepath.Join(src, "d/a.o"), nil, 0o644)
	rules := filepath.Join(t.TempDir(), "rules")
	os.WriteFile(rules, []byte("# keep sources\n+ *.c\n- *\n"), 0o644)
	abs, err := filepath.EvalSymlinks(src)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run("-i", src, "-F", ". "+rules, "--debug-filter=files")
	if want := "+ " + abs + "/d/a.c\n- " + abs + "/d/a.o\n"; code != 0 || stdout != want {
		t.Errorf("merge file: exit %d %q (want %q) %s", code, stdout, want, stderr)
	}
	code, _, stderr = run("-i", src, "-o", filepath.Join(t.TempDir(), "x"), "-F", "* oops")
	if code != 1 || !strings.Contains(stderr, "could not parse filter rule '* oops'") {
		t.Errorf("bad rule: exit %d %q", code, stderr)
	}
}

// TestLevelPackAndLookback: -P auto packs every table where the metadata
// is compressed and only names and symlinks where it is not; -l9 searches
// three blocks back, the other levels two; given options win.
func TestLevelPackAndLookback(t *testing.T) {
	src := t.TempDir()
	all, names := mustParsePack(t, "all"), mustParsePack(t, "names,symlinks")
	for _, tc := range []struct {
		args     []string
		pack     *dedup.Pack // nil: keep the input's
		lookback int
	}{
		{nil, &all, 2},
		{[]string{"-l9"}, &all, 3},
		{[]string{"-l6"}, &names, 2},
		{[]string{"--metadata-compression", "null"}, &names, 2},
		{[]string{"-l9", "-P", "auto"}, &all, 3},
		{[]string{"-l9", "-P", "names,symlinks", "-B", "1"}, &names, 1},
		{[]string{"-l6", "-P", "all"}, &all, 2},
	} {
		cfg, err := ParseConfig(append([]string{"-i", src, "-o", "x"}, tc.args...), nil, nil)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if got := cfg.Build.Pack; got == nil || *got != *tc.pack {
			t.Errorf("%q: pack %+v, want %+v", tc.args, got, *tc.pack)
		}
		if cfg.Build.Lookback != tc.lookback {
			t.Errorf("%q: lookback %d, want %d", tc.args, cfg.Build.Lookback, tc.lookback)
		}
	}
	img := filepath.Join(t.TempDir(), "in.dwarfs")
	for _, args := range [][]string{{"-i", img, "-o", "x", "--rebuild-metadata"}, {"-i", img, "-o", "x", "--append", src}} {
		cfg, err := ParseConfig(args, nil, nil)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if cfg.Build.Pack != nil {
			t.Errorf("%q: pack %+v, want the input's", args, *cfg.Build.Pack)
		}
	}
}

func mustParsePack(t *testing.T, s string) dedup.Pack {
	t.Helper()
	pk, err := dedup.ParsePack(s)
	if err != nil {
		t.Fatal(err)
	}
	return pk
}

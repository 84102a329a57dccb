//go:build linux

package mkdwarfs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/writer"
)

// openPTY opens a pseudo-terminal pair through /dev/ptmx (no extra
// dependency needed for this much), cols columns wide.
func openPTY(t *testing.T, cols uint16) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("skipped: no pseudo-terminal: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatalf("unlocking pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatalf("pty number: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatalf("opening pty slave: %v", err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: cols}); err != nil {
		t.Fatalf("setting pty size: %v", err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// bigTree writes about 100 MiB: 200 files of 512 KiB, each a distinct
// 4 KiB pattern repeated, so generating and packing it stay cheap.
func bigTree(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	pat := make([]byte, 4096)
	buf := make([]byte, 512<<10)
	for i := range 200 {
		r := rand.New(rand.NewPCG(uint64(i), 1))
		for j := range pat {
			pat[j] = byte(r.Uint32())
		}
		for off := 0; off < len(buf); off += len(pat) {
			copy(buf[off:], pat)
		}
		dir := filepath.Join(src, fmt.Sprintf("dir%02d", i/20))
		os.MkdirAll(dir, 0o755)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file-%03d.bin", i)), buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return src
}

var frameRe = regexp.MustCompile(`^(scanning|segmenting|compressing|writing) +(?:(\d+)% )?`)

// rateRe matches a throughput in whichever unit the display picks: a fast
// machine compresses the test's 100 MiB at more than 1 GiB/s.
var rateRe = regexp.MustCompile(` \d+(\.\d)? [KMGTPE]?i?B/s`)

// A terminal session: the default progress display redraws one line in
// place while a 100 MiB tree is packed, goes through the phases in order
// with percentages and file names, never grows wider than the terminal,
// and is cleared before the summary.
func TestProgressOnTerminal(t *testing.T) {
	t.Setenv("LC_ALL", "C.UTF-8")
	src := bigTree(t)
	const cols = 100
	master, slave := openPTY(t, cols)
	var term bytes.Buffer
	copied := make(chan error, 1)
	go func() { _, err := io.Copy(&term, master); copied <- err }()

	img := filepath.Join(t.TempDir(), "x.dwarfs")
	var stdout bytes.Buffer
	code := Main(context.Background(), []string{"mkdwarfs", "-i", src, "-o", img, "-l", "1", "-S", "20"}, cli.Stdio{Out: &stdout, Err: slave})
	slave.Close() // the reader then sees EIO: all output has arrived
	<-copied
	if code != 0 {
		t.Fatalf("exit %d: %q", code, term.String())
	}
	out := term.String()
	// The line discipline turns \n into \r\n; the display itself writes none.
	out = strings.ReplaceAll(out, "\r\n", "\n")
	display, summary, ok := strings.Cut(out, "\r\033[K\n")
	if !ok {
		// The final clear is "\r\033[K", followed by the summary's first line.
		i := strings.LastIndex(out, "\r\033[K")
		if i < 0 {
			t.Fatalf("display never cleared: %q", out)
		}
		display, summary = out[:i], out[i+len("\r\033[K"):]
	}
	if strings.Contains(display, "\n") {
		t.Errorf("the display printed a newline instead of redrawing: %q", display)
	}
	if !strings.HasPrefix(summary, "scanned 11 dirs, 0 symlinks, 200 files") || !strings.Contains(summary, "100.0 MiB input") {
		t.Errorf("summary: %q", summary)
	}
	var phases []string
	var frames int
	lastPct := map[string]int{}
	var withFile, compressRate bool
	for _, f := range strings.Split(display, "\r")[1:] {
		frames++
		if !strings.HasSuffix(f, "\033[K") {
			t.Errorf("frame does not clear the rest of the line after drawing: %q", f)
		}
		f = strings.TrimSuffix(f, "\033[K")
		if n := len([]rune(f)); n >= cols {
			t.Errorf("frame of %d characters would wrap at %d columns: %q", n, cols, f)
		}
		m := frameRe.FindStringSubmatch(f)
		if m == nil {
			t.Errorf("frame without a phase: %q", f)
			continue
		}
		if len(phases) == 0 || phases[len(phases)-1] != m[1] {
			phases = append(phases, m[1])
		}
		if m[2] != "" {
			pct, _ := strconv.Atoi(m[2])
			if pct < lastPct[m[1]] {
				t.Errorf("%s went back from %d%% to %d%%: %q", m[1], lastPct[m[1]], pct, f)
			}
			lastPct[m[1]] = pct
			compressRate = compressRate || m[1] == "compressing" && rateRe.MatchString(f)
		}
		if strings.Contains(f, "│ dir0") {
			withFile = true
		}
		if !strings.Contains(f, "▕") && m[2] != "" {
			t.Errorf("no unicode bar in a UTF-8 locale: %q", f)
		}
	}
	t.Logf("%d frames; last: %q", frames, strings.TrimSuffix(display[strings.LastIndex(display, "\r")+1:], "\033[K"))
	if want := []string{"scanning", "segmenting", "compressing", "writing"}; strings.Join(phases, " ") != strings.Join(want, " ") {
		t.Errorf("phases %q, want %q", phases, want)
	}
	if !withFile {
		t.Errorf("no frame names the current file: %q", display)
	}
	if !compressRate {
		t.Errorf("the compressing frame shows no throughput: %q", display)
	}
	if !strings.Contains(display, "│ 100 blocks (100.0 MiB)") {
		t.Errorf("no frame shows the final block count: %q", display)
	}
	if _, ok := lastPct["segmenting"]; !ok {
		t.Errorf("no segmenting percentage: %q", display)
	}
}

// Without a terminal the default is quiet: stderr holds the same as with
// --progress=none, the summary only. The summary's ratio is against the
// whole input tree, not what is left after removing duplicate files.
func TestProgressNotTerminal(t *testing.T) {
	src := t.TempDir()
	for i := range 20 {
		os.WriteFile(filepath.Join(src, fmt.Sprint(i)), bytes.Repeat([]byte{byte(i % 10)}, 100<<10), 0o644)
	}
	durRe := regexp.MustCompile(` in [0-9.]+m?s\n`)
	var imageSize int64
	run := func(args ...string) string {
		f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		img := filepath.Join(t.TempDir(), "x.dwarfs")
		if code := Main(context.Background(), append([]string{"mkdwarfs", "-i", src, "-o", img, "-l", "1", "--no-history"}, args...), cli.Stdio{Out: io.Discard, Err: f}); code != 0 {
			t.Fatalf("%q: exit %d", args, code)
		}
		b, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(img)
		if err != nil {
			t.Fatal(err)
		}
		imageSize = fi.Size()
		return durRe.ReplaceAllString(string(b), " in T\n")
	}
	def, none := run(), run("--progress=none")
	if def != none || strings.ContainsAny(def, "\r\033") {
		t.Errorf("stderr not a terminal:\ndefault %q\nnone    %q", def, none)
	}
	want := fmt.Sprintf("2.0 MiB input (1000.0 KiB after removing duplicate files) -> 1 blocks, 1000.0 KiB block data -> %s image (%.2f%% of the input)",
		human(imageSize), 100*float64(imageSize)/float64(20*100<<10))
	if !strings.Contains(def, want) {
		t.Errorf("summary: %q\nwant %q", def, want)
	}
	// ascii and unicode ask for a terminal, too.
	if a := run("--progress=unicode"); a != none {
		t.Errorf("--progress=unicode without a terminal: %q", a)
	}
}

func TestProgressFormat(t *testing.T) {
	for _, tc := range []struct {
		mode    string
		st      status
		inPhase time.Duration
		width   int
		want    string
	}{
		{"ascii", status{phase: phaseScanning}, 0, 80, "scanning    | 0:03"},
		{"ascii", status{phase: phaseScanning, done: 1, all: 4, bytes: 3 << 20, current: "a/b"}, time.Second, 80,
			"scanning     25% [#####---------------]   3.0 MiB/s ETA 0:03 | 0:03 | a/b"},
		{"unicode", status{phase: phaseSegmenting, done: 75, all: 100, bytes: 75 << 20, blocks: 2, blockBytes: 2 << 20, current: "f"}, 3 * time.Second, 200,
			"segmenting   75% ▕███████████████░░░░░▏  25.0 MiB/s ETA 0:01 │ 2 blocks (2.0 MiB) │ 0:03 │ f"},
		// A tar input: of a file, the share read; of a pipe, the bytes.
		{"ascii", status{phase: phaseReading, done: 1 << 20, all: 4 << 20, bytes: 1 << 20}, time.Second, 80,
			"reading      25% [#####---------------]   1.0 MiB/s ETA 0:03 | 0:03"},
		{"ascii", status{phase: phaseReading, bytes: 6 << 20}, 2 * time.Second, 80,
			"reading       6.0 MiB   3.0 MiB/s | 0:03"},
		{"ascii", status{phase: phaseCompressing, done: 4, all: 4, bytes: 4 << 20}, 2 * time.Second, 80,
			"compressing 100% [####################]   2.0 MiB/s | 0:03"},
		// The file name loses its start, the line never its end.
		{"ascii", status{phase: phaseScanning, done: 1, all: 2, current: "very/long/directory/name/file.txt"}, 0, 70,
			"scanning     50% [##########----------] | 0:03 | ...tory/name/file.txt"},
		{"ascii", status{phase: phaseScanning, done: 1, all: 2, current: "x/y"}, 0, 30,
			"scanning     50% [#########..."},
	} {
		p := &progress{mode: tc.mode}
		if got := p.format(tc.st, tc.inPhase, 3*time.Second, tc.width); got != tc.want {
			t.Errorf("%+v:\ngot  %q\nwant %q", tc.st, got, tc.want)
		}
	}
}

func TestProgressMode(t *testing.T) {
	_, slave := openPTY(t, 80)
	pipe, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer pipe.Close()
	for _, tc := range []struct {
		mode, locale string
		w            io.Writer
		want         string
	}{
		{"auto", "en_US.UTF-8", slave, "unicode"},
		{"auto", "C", slave, "ascii"},
		{"auto", "en_US.UTF-8", pipe, "none"},
		{"auto", "en_US.UTF-8", &bytes.Buffer{}, "none"},
		{"simple", "C", pipe, "simple"},
		{"ascii", "C", slave, "ascii"},
	} {
		t.Setenv("LC_ALL", tc.locale)
		if got := progressMode(tc.mode, tc.w); got != tc.want {
			t.Errorf("%s with LC_ALL=%s on %T: %s, want %s", tc.mode, tc.locale, tc.w, got, tc.want)
		}
	}
}

// A rewrite on a terminal shows its messages on one line, cleared at the
// end; without a terminal it prints nothing.
func TestRewriteProgress(t *testing.T) {
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "f"), bytes.Repeat([]byte("data"), 1000), 0o644)
	dir := t.TempDir()
	img := filepath.Join(dir, "a.dwarfs")
	if code := Main(context.Background(), []string{"mkdwarfs", "-i", src, "-o", img, "-l", "1"}, cli.Stdio{Out: io.Discard, Err: io.Discard}); code != 0 {
		t.Fatalf("build: exit %d", code)
	}
	master, slave := openPTY(t, 80)
	var term bytes.Buffer
	copied := make(chan error, 1)
	go func() { _, err := io.Copy(&term, master); copied <- err }()
	code := Main(context.Background(), []string{"mkdwarfs", "-i", img, "-o", filepath.Join(dir, "b.dwarfs"), "--recompress", "-C", "lz4", "--log-level=warn"}, cli.Stdio{Out: io.Discard, Err: slave})
	slave.Close()
	<-copied
	out := term.String()
	if code != 0 || !strings.HasPrefix(out, "\r") || !strings.HasSuffix(out, "\r\033[K") || strings.Contains(out, "\n") ||
		!strings.Contains(out, "block 1/1") {
		t.Errorf("rewrite on a terminal: exit %d %q", code, out)
	}
	var stderr bytes.Buffer
	code = Main(context.Background(), []string{"mkdwarfs", "-i", img, "-o", filepath.Join(dir, "c.dwarfs"), "--recompress", "-C", "lz4", "--log-level=warn"}, cli.Stdio{Out: io.Discard, Err: &stderr})
	if code != 0 || stderr.Len() != 0 {
		t.Errorf("rewrite without a terminal: exit %d %q", code, stderr.String())
	}
}

// TestProgressCopiedBlocks: while an append compresses its new data the
// display counts the new blocks only, the copied ones being no measure
// of the time left; a merge, which compresses none, counts the copies.
func TestProgressCopiedBlocks(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		blocks, total, copied int
		wantDone, wantAll     int64
	}{
		{"build", 3, 5, 0, 3, 5},
		{"append", 12, 15, 10, 2, 5},
		{"append, copies still being written", 4, 15, 10, 0, 5},
		{"merge", 4, 10, 10, 4, 10},
	} {
		p := &progress{}
		p.cur.Store(&writer.Progress{Phase: phaseCompressing, Blocks: tc.blocks, BlocksTotal: tc.total, BlocksCopied: tc.copied})
		st, ok := p.status()
		if !ok || st.done != tc.wantDone || st.all != tc.wantAll {
			t.Errorf("%s: %d of %d blocks, want %d of %d", tc.name, st.done, st.all, tc.wantDone, tc.wantAll)
		}
	}
}

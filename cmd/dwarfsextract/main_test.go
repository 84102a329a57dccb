package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/internal/testimage"
	"github.com/godwarfs/godwarfs/metadata"
)

// TestMain lets the test binary act as dwarfsextract when re-executed.
func TestMain(m *testing.M) {
	if os.Getenv("GODWARFS_RUN_DWARFSEXTRACT") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// gatedImage serves an image of files f0..f5 (256 KiB of random bytes
// each, one block per file) over HTTP. Once open, reads of block data
// wait until release is closed; arrived receives one value per waiting
// read. The files map holds each file's content.
type gatedImage struct {
	url     string
	files   map[string][]byte
	arrived chan struct{}
	release chan struct{}
	once    sync.Once
}

func newGatedImage(t *testing.T) *gatedImage {
	t.Helper()
	const n, size = 6, 256 << 10
	g := &gatedImage{files: map[string][]byte{}, arrived: make(chan struct{}, 64), release: make(chan struct{})}
	var names []string
	var blocks [][]byte
	var chunks [][]metadata.Chunk
	rng := rand.NewChaCha8([32]byte{7})
	for i := range n {
		b := make([]byte, size)
		rng.Read(b)
		name := fmt.Sprintf("f%d", i)
		names = append(names, name)
		blocks = append(blocks, b)
		chunks = append(chunks, []metadata.Chunk{{Block: uint32(i), Size: size}})
		g.files[name] = b
	}
	img, err := testimage.Build(testimage.Files(size, names, chunks), blocks, "null")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The tail (index, metadata) and the 64-byte section headers
		// are fetched at open; any other range is block data.
		if s, e, ok := parseRange(r.Header.Get("Range")); ok && e < int64(len(img))-1 && e-s+1 > 64 {
			g.arrived <- struct{}{}
			select {
			case <-g.release:
			case <-r.Context().Done():
				return
			}
		}
		http.ServeContent(w, r, "img", time.Time{}, bytes.NewReader(img))
	}))
	t.Cleanup(func() { g.open(); srv.Close() })
	g.url = srv.URL + "/img.dwarfs"
	return g
}

// open releases the reads waiting and all later ones.
func (g *gatedImage) open() { g.once.Do(func() { close(g.release) }) }

func parseRange(h string) (start, end int64, ok bool) {
	a, b, found := strings.Cut(strings.TrimPrefix(h, "bytes="), "-")
	if !found || !strings.HasPrefix(h, "bytes=") {
		return 0, 0, false
	}
	s, err1 := strconv.ParseInt(a, 10, 64)
	e, err2 := strconv.ParseInt(b, 10, 64)
	return s, e, err1 == nil && err2 == nil
}

// interrupt runs dwarfsextract with args, waits until a read of block
// data is held and an unfinished output shows up in dir (a name starting
// with a dot), sends sig, lets the reads go on and returns the exit
// status and stderr.
func interrupt(t *testing.T, g *gatedImage, dir string, sig syscall.Signal, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "GODWARFS_RUN_DWARFSEXTRACT=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	fail := func(format string, a ...any) {
		cmd.Process.Kill()
		<-done
		t.Fatalf(format+" (stderr %q)", append(a, stderr.String())...)
	}
	// Generous bounds against a hang, not timing assertions.
	select {
	case <-g.arrived:
	case err := <-done:
		t.Fatalf("finished before reading block data: %v (stderr %q)", err, stderr.String())
	case <-time.After(60 * time.Second):
		fail("no read of block data")
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if unfinished(dir, cmd.Process.Pid) != "" {
			break
		}
		if time.Now().After(deadline) {
			fail("no unfinished output in %s", dir)
		}
	}
	cmd.Process.Signal(sig)
	// The held read goes on only once the process had time to see the
	// signal: released at once, a small extraction could finish before
	// the signal is handled, and the test would see a complete, clean
	// run. A process that stops without the read released is fine too.
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Second):
		g.open()
		select {
		case err = <-done:
		case <-time.After(60 * time.Second):
			fail("still running after %v", sig)
		}
	}
	g.open()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stderr.String()
}

// unfinished returns the first name in dir starting with a dot, or a
// file in dir that process pid holds open without a name (created with
// O_TMPFILE, it gets one only once complete).
func unfinished(dir string, pid int) string {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			return e.Name()
		}
	}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(l, dir+"/") && strings.HasSuffix(l, " (deleted)") {
			return l
		}
	}
	return ""
}

// TestInterruptToDisk: SIGINT or SIGTERM while a file is being written
// stops the extraction with exit status 1: the unfinished file is
// removed, and every name left holds exactly its file's content.
func TestInterruptToDisk(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			g := newGatedImage(t)
			dir := t.TempDir()
			code, stderr := interrupt(t, g, dir, sig, "-i", g.url, "-o", dir, "-n", "1")
			if code != 1 || !strings.Contains(stderr, "interrupted") {
				t.Errorf("exit %d, stderr %q: want 1 and a note that it was interrupted", code, stderr)
			}
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				want, ok := g.files[e.Name()]
				if !ok {
					t.Errorf("left behind: %s", e.Name())
					continue
				}
				if got, err := os.ReadFile(filepath.Join(dir, e.Name())); err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s: wrong content under its final name (%v)", e.Name(), err)
				}
			}
			if len(ents) >= len(g.files) {
				t.Errorf("all %d files extracted: the signal did not stop the extraction", len(ents))
			}
		})
	}
}

// TestInterruptArchive: an interrupted archive is not put under its
// name, and its temporary file is removed.
func TestInterruptArchive(t *testing.T) {
	for _, tc := range []struct{ format, name string }{{"pax", "x.tar"}, {"zip", "x.zip"}, {"newc", "x.cpio"}} {
		t.Run(tc.format, func(t *testing.T) {
			g := newGatedImage(t)
			dir := t.TempDir()
			code, stderr := interrupt(t, g, dir, syscall.SIGTERM, "-i", g.url, "-f", tc.format, "-o", filepath.Join(dir, tc.name), "-n", "1")
			if code != 1 || !strings.Contains(stderr, "interrupted") {
				t.Errorf("exit %d, stderr %q: want 1 and a note that it was interrupted", code, stderr)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("left behind: %v", ents)
			}
		})
	}
}

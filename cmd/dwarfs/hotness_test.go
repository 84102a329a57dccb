//go:build linux && !386 && !arm

package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/internal/mkdwarfs"
)

// TestHotnessRoundTrip is the workflow the hotness categorizer is for:
// the files read through a mount with -o analysis_file are listed; an
// image rebuilt with mkdwarfs --categorize=hotness --hotness-list stores
// exactly their data in blocks of the category hotness; and a mount with
// -o preload_category=hotness decodes those blocks, and only those,
// before anything is read.
func TestHotnessRoundTrip(t *testing.T) {
	requireFUSE(t)
	// Compressible, distinct files (preloading skips stored blocks), each
	// over several 64 KiB blocks.
	src := t.TempDir()
	names := []string{"f0", "f1", "f2", "sub/f3", "sub/f4", "f5", "f6", "f7"}
	r := rand.New(rand.NewPCG(3, 4))
	content := map[string][]byte{}
	for _, n := range names {
		var b bytes.Buffer
		for b.Len() < 150_000 {
			fmt.Fprintf(&b, "%s word%d ", n, r.IntN(5000))
		}
		content[n] = b.Bytes()
		p := filepath.Join(src, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	work := t.TempDir()
	mk := func(img string, args ...string) {
		t.Helper()
		var stderr bytes.Buffer
		args = append([]string{"-i", src, "-o", img, "-S", "16", "-l", "1", "--log-level", "warn"}, args...)
		if code := mkdwarfs.Main(context.Background(), append([]string{"mkdwarfs"}, args...), cli.Stdio{Out: &bytes.Buffer{}, Err: &stderr}); code != 0 || stderr.Len() > 0 {
			t.Fatalf("mkdwarfs %v: exit %d: %s", args, code, stderr.String())
		}
	}
	mnt := t.TempDir()
	mount := func(img string, opts string) {
		t.Helper()
		if out, err := exec.Command(buildBinary(t, "dwarfs"), img, mnt, "-o", opts).CombinedOutput(); err != nil {
			t.Fatalf("dwarfs %s -o %s: %v\n%s", img, opts, err, out)
		}
		t.Cleanup(func() {
			if isMounted(t, mnt) {
				_ = unmount(mnt)
			}
		})
	}

	// Profile.
	plain := filepath.Join(work, "plain.dwarfs")
	mk(plain)
	list := filepath.Join(work, "hot.list")
	mount(plain, "analysis_file="+list)
	hot := []string{"f5", "sub/f3", "f1"}
	for _, p := range append(hot, "f5") {
		if _, err := os.ReadFile(filepath.Join(mnt, p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := unmount(mnt); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(list); err != nil || string(b) != strings.Join(hot, "\n")+"\n" {
		t.Fatalf("analysis file %q (%v)", b, err)
	}

	// Rebuild with the list: the listed files' data, and only theirs, is
	// in hotness blocks.
	img := filepath.Join(work, "hot.dwarfs")
	mk(img, "--categorize=hotness", "--hotness-list="+list)
	im, err := godwarfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	parts := imageaccess.Of(im)
	md := parts.FS.Tables()
	if !slices.Equal(md.CategoryNames, []string{"<default>", "hotness"}) {
		t.Fatalf("category names %q", md.CategoryNames)
	}
	hotBlocks := map[uint32]bool{}
	for _, n := range names {
		got, err := im.ReadFile(n)
		if err != nil || !bytes.Equal(got, content[n]) {
			t.Fatalf("%s: content differs (%v)", n, err)
		}
		ino, err := im.Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := parts.FS.FileChunks(ino)
		if err != nil {
			t.Fatal(err)
		}
		want := "<default>"
		if slices.Contains(hot, n) {
			want = "hotness"
		}
		for _, c := range chunks {
			if got := md.CategoryNames[md.BlockCategories[c.Block]]; got != want {
				t.Errorf("%s: chunk in block %d of category %s, want %s", n, c.Block, got, want)
			}
			if want == "hotness" {
				hotBlocks[c.Block] = true
			}
		}
	}
	nHot := 0
	for b, c := range md.BlockCategories {
		if md.CategoryNames[c] == "hotness" {
			nHot++
			if !hotBlocks[uint32(b)] {
				t.Errorf("hotness block %d holds no listed file's data", b)
			}
		}
	}
	t.Logf("%d of %d blocks are hotness blocks", nHot, len(md.BlockCategories))
	if nHot < 3 || nHot == len(md.BlockCategories) {
		t.Fatalf("%d hotness blocks of %d", nHot, len(md.BlockCategories))
	}

	// Preload: the driver decodes the hotness blocks at mount, before
	// any read, and nothing else.
	mount(img, "preload_category=hotness")
	decoded := regexp.MustCompile(`(\d+) blocks decoded`)
	var report string
	n := -1
	for deadline := time.Now().Add(30 * time.Second); n < nHot && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		buf := make([]byte, 4096)
		sz, err := unix.Getxattr(mnt, "user.dwarfs.driver.perfmon", buf)
		if err != nil {
			t.Fatal(err)
		}
		report = string(buf[:sz])
		m := decoded.FindStringSubmatch(report)
		if m == nil {
			t.Fatalf("perfmon report without a decoded block count:\n%s", report)
		}
		n, _ = strconv.Atoi(m[1])
	}
	if n != nHot {
		t.Fatalf("preload_category=hotness decoded %d blocks, want the %d hotness blocks:\n%s", n, nHot, report)
	}
	for _, p := range hot {
		got, err := os.ReadFile(filepath.Join(mnt, p))
		if err != nil || !bytes.Equal(got, content[p]) {
			t.Fatalf("%s through the mount: content differs (%v)", p, err)
		}
	}
	if err := unmount(mnt); err != nil {
		t.Fatal(err)
	}
}

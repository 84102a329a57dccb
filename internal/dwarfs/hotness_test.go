//go:build !windows && !(linux && (386 || arm))

package dwarfs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/dwarfs"
	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/mkdwarfs"
	"github.com/godwarfs/godwarfs/internal/mountopts"
)

// TestAnalysisFileOrdersMkdwarfs is the profile-guided round trip: the
// list analysis_file writes while files are read through a mount is
// what mkdwarfs --order=explicit:file= takes, and the rebuilt image
// stores those files' data first, in the order they were opened.
func TestAnalysisFileOrdersMkdwarfs(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		fixtures.FUSEUnusable(t, err.Error())
	}
	names := []string{"a", "b", "c/d", "c/e", "f", "g"}
	src := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	for i, n := range names {
		p := filepath.Join(src, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 5000+i*100)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	mk := func(args ...string) string {
		t.Helper()
		img := filepath.Join(dir, "img.dwarfs")
		var stderr bytes.Buffer
		args = append([]string{"-i", src, "-o", img, "-f", "-l", "3", "--log-level", "warn"}, args...)
		if code := mkdwarfs.Main(context.Background(), append([]string{"mkdwarfs"}, args...), cli.Stdio{Out: &bytes.Buffer{}, Err: &stderr}); code != 0 {
			t.Fatalf("mkdwarfs %v: exit %d: %s", args, code, stderr.String())
		}
		return img
	}
	open := func(img string) (fusefs.Source, func()) {
		t.Helper()
		s, c, err := dwarfs.OpenImage(img, mountopts.Defaults())
		if err != nil {
			t.Fatal(err)
		}
		return s, func() { c.Close() }
	}

	// Profile: read some files through a mount with analysis_file.
	img := mk("--order", "path")
	s, done := open(img)
	list := filepath.Join(dir, "hot.list")
	f, err := os.Create(list)
	if err != nil {
		t.Fatal(err)
	}
	mnt := t.TempDir()
	srv, err := fusefs.Mount(mnt, s, fusefs.Config{Options: fusefs.MountOptions{Analysis: f}})
	if err != nil {
		if errors.Is(err, syscall.EPERM) || strings.Contains(err.Error(), "fusermount") {
			fixtures.FUSEUnusable(t, err.Error())
		}
		t.Fatal(err)
	}
	for _, p := range []string{"g", "c/e", "a", "g"} {
		if _, err := os.ReadFile(filepath.Join(mnt, p)); err != nil {
			t.Error(err)
		}
	}
	if err := srv.Unmount(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	done()

	// Rebuild in the profiled order.
	img = mk("--order", "explicit:file="+list)
	s, done = open(img)
	defer done()
	type pos struct {
		name          string
		block, offset uint32
	}
	var order []pos
	for _, n := range names {
		ino := s.Root()
		for _, c := range strings.Split(n, "/") {
			var ok bool
			if ino, ok = s.Lookup(ino, c); !ok {
				t.Fatalf("%s missing", n)
			}
		}
		info, err := s.InodeInfo(ino)
		if err != nil {
			t.Fatal(err)
		}
		b := info
		var v struct {
			Chunks []struct{ Block, Offset *uint32 }
		}
		if err := json.Unmarshal(b, &v); err != nil || len(v.Chunks) == 0 || v.Chunks[0].Block == nil {
			t.Fatalf("%s: chunks %s (%v)", n, b, err)
		}
		order = append(order, pos{n, *v.Chunks[0].Block, *v.Chunks[0].Offset})
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].block != order[j].block {
			return order[i].block < order[j].block
		}
		return order[i].offset < order[j].offset
	})
	var got []string
	for _, p := range order {
		got = append(got, p.name)
	}
	if want := []string{"g", "c/e", "a"}; !slices.Equal(got[:3], want) {
		t.Errorf("data order %v, want %v first (list %q)", got, want, readFile(t, list))
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

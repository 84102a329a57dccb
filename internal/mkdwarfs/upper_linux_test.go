//go:build linux

package mkdwarfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/writer"
)

// tmpfsDir mounts a tmpfs for upper directories: overlayfs refuses some
// filesystems (another overlay) as its upper layer, and its xattrs
// (trusted.overlay.*) need one that stores them.
func tmpfsDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts a tmpfs and an overlayfs, makes whiteout devices")
	}
	d := t.TempDir()
	if err := unix.Mount("tmpfs", d, "tmpfs", 0, "size=64m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(d, unix.MNT_DETACH) })
	return d
}

func xattr(p, name string) (string, bool) {
	buf := make([]byte, 64)
	n, err := unix.Lgetxattr(p, name, buf)
	if err != nil {
		return "", false
	}
	return string(buf[:n]), true
}

// TestApplyUpperBad applies upper directories made by hand: a whiteout
// of a path the image lacks is a warning; redirects and metacopy files
// are refused naming the entry, leaving no output.
func TestApplyUpperBad(t *testing.T) {
	base := tmpfsDir(t)
	old := updateTree(t)
	dir := t.TempDir()
	oldImg := filepath.Join(dir, "old.dwarfs")
	mk(t, "-i", old, "-o", oldImg, "-l", "1", "-S", "16", "--log-level", "warn")
	for i, tc := range []struct {
		name  string
		setup func(t *testing.T, upper string)
		warn  string // in the log of a successful apply
		err   string // in the error
	}{
		{name: "whiteout of a missing path", setup: func(t *testing.T, upper string) {
			must(t, unix.Mknod(filepath.Join(upper, "no-such-file"), unix.S_IFCHR|0o000, 0))
			must(t, unix.Mknod(filepath.Join(upper, "keep", "c.txt"), unix.S_IFCHR|0o000, 0))
		}, warn: "whiteout for /no-such-file, which the image does not have"},
		{name: "redirect", setup: func(t *testing.T, upper string) {
			must(t, unix.Lsetxattr(filepath.Join(upper, "keep"), "trusted.overlay.redirect", []byte("/mod"), 0))
		}, err: "renamed directory"},
		{name: "metacopy", setup: func(t *testing.T, upper string) {
			p := filepath.Join(upper, "keep", "a.bin")
			write(t, p, nil)
			must(t, unix.Lsetxattr(p, "trusted.overlay.metacopy", nil, 0))
		}, err: "metadata-only copy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			upper := filepath.Join(base, "u"+string(rune('a'+i)))
			must(t, os.MkdirAll(filepath.Join(upper, "keep"), 0o755))
			tc.setup(t, upper)
			out := filepath.Join(dir, "out"+string(rune('a'+i))+".dwarfs")
			code, _, stderr := run("-i", oldImg, "--apply-upper", upper, "-o", out, "-l", "1", "--log-level", "warn")
			if tc.err != "" {
				if code == 0 || !strings.Contains(stderr, tc.err) || !strings.Contains(stderr, upper) {
					t.Errorf("exit %d, stderr %q: want an error with %q naming the entry", code, stderr, tc.err)
				}
				if _, err := os.Stat(out); !os.IsNotExist(err) {
					t.Errorf("output left after a failure: %v", err)
				}
				return
			}
			if code != 0 || !strings.Contains(stderr, tc.warn) {
				t.Errorf("exit %d, stderr %q: want a warning %q", code, stderr, tc.warn)
			}
			got, _ := readBack(t, out)
			if _, ok := got["keep/c.txt"]; ok {
				t.Error("keep/c.txt: whited out, still there")
			}
			if _, ok := got["keep/a.bin"]; !ok {
				t.Error("keep/a.bin: lost")
			}
		})
	}
	noTemps(t, dir)
}

// TestApplyUpperChanging changes a file of the upper directory while the
// update segments: the update fails naming it and leaves no output.
func TestApplyUpperChanging(t *testing.T) {
	old := updateTree(t)
	dir := t.TempDir()
	oldImg := filepath.Join(dir, "old.dwarfs")
	mk(t, "-i", old, "-o", oldImg, "-l", "1", "-S", "16", "--log-level", "warn")
	upper := t.TempDir()
	victim := filepath.Join(upper, "added.txt")
	write(t, victim, []byte("added in the upper directory\n"))
	out := filepath.Join(dir, "new.dwarfs")
	_, err := writer.Update(context.Background(), writer.UpdateOptions{
		Target: writer.Target{Output: out, BlockCompression: "zstd:level=1"}, Image: oldImg, Upper: upper, MaxDead: -1,
		Configure: func(o *dedup.Options) {
			o.Phase = func(name string) {
				if name == "segmenting" {
					// Another size: two writes within one clock tick can
					// leave the mtime as it was.
					write(t, victim, []byte("changed while the update was running\n"))
				}
			}
		},
	})
	if !errors.Is(err, dedup.ErrChanged) || !strings.Contains(err.Error(), victim) {
		t.Fatalf("got %v, want an error naming %s as changed", err, victim)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output exists after a failed update: %v", err)
	}
	noTemps(t, dir)
}

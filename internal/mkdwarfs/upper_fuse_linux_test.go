//go:build linux && !386 && !arm

package mkdwarfs

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/mountopts"
)

// TestApplyUpperOverlay changes an image's tree through a kernel
// overlayfs with the image (mounted by the FUSE driver) as its lower
// layer, then applies the upper directory: the new image must be the
// overlay's merged view.
func TestApplyUpperOverlay(t *testing.T) {
	base := tmpfsDir(t)
	if _, err := os.Stat("/dev/fuse"); err != nil {
		fixtures.FUSEUnusable(t, err.Error())
	}
	fixtures.SkipFUSEUnderEmulation(t)
	old := updateTree(t)
	dir := t.TempDir()
	oldImg := filepath.Join(dir, "old.dwarfs")
	mk(t, "-i", old, "-o", oldImg, "-l", "3", "-S", "16", "--log-level", "warn")
	oldSum := fileHash(t, oldImg)

	im, err := godwarfs.Open(oldImg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	lower := t.TempDir()
	o := mountopts.Defaults()
	o.EnableNlink = true
	srv, err := fusefs.MountImage(lower, im, fusefs.Config{Options: o.MountOptions})
	if err != nil {
		fixtures.FUSEUnusable(t, err.Error())
	}
	upper, work, merged := filepath.Join(base, "upper"), filepath.Join(base, "work"), filepath.Join(base, "merged")
	for _, d := range []string{upper, work, merged} {
		must(t, os.Mkdir(d, 0o755))
	}
	data := "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work + ",redirect_dir=off,metacopy=off,index=off"
	if err := unix.Mount("overlay", merged, "overlay", 0, data); err != nil {
		srv.Unmount()
		if errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.EPERM) {
			t.Skipf("overlayfs unavailable: %v", err)
		}
		t.Fatalf("mount overlay: %v", err)
	}
	m := func(rel string) string { return filepath.Join(merged, rel) }
	sh := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Errorf("%v: %v: %s", args, err, out)
		}
	}
	// The session: write, delete a file and a directory, replace a
	// directory (opaque), rename a file and a directory, change modes.
	write(t, m("new/added.txt"), []byte("written in the overlay\n"))
	f, err := os.OpenFile(m("mod/m.bin"), os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.WriteString("appended in the overlay")
	must(t, err)
	must(t, f.Close())
	must(t, os.Remove(m("keep/c.txt")))
	must(t, os.RemoveAll(m("gone")))
	must(t, os.RemoveAll(m("tools")))
	write(t, m("tools/other.sh"), []byte("#!/bin/sh\necho other\n"))
	sh("mv", m("ren/r.bin"), m("keep/r-moved.bin"))
	sh("mv", m("big"), m("huge"))
	must(t, os.Chmod(m("keep/a.bin"), 0o600))
	must(t, os.Chmod(m("mod"), 0o700))
	must(t, os.Symlink("a.bin", m("keep/link")))
	want := expected(t, merged)
	if err := unix.Unmount(merged, 0); err != nil {
		t.Fatalf("unmount overlay: %v", err)
	}
	if err := srv.Unmount(); err != nil {
		t.Fatalf("unmount image: %v", err)
	}
	if v, ok := xattr(filepath.Join(upper, "tools"), "trusted.overlay.opaque"); !ok || v != "y" {
		t.Fatalf("the session left no opaque directory (%q, %v): the test tests nothing", v, ok)
	}

	out := filepath.Join(dir, "new.dwarfs")
	// No compaction: the kept files must stay where they were.
	mk(t, "-i", oldImg, "--apply-upper", upper, "-o", out, "-l", "3", "--max-dead=100", "--log-level", "warn")
	got, _ := readBack(t, out)
	// The merged view's link counts are stale where the session removed
	// a hard link of a file it did not copy up (tools/b-hard of
	// keep/b.bin): the image's must be the true ones.
	for p, n := range want {
		n.inoKey, n.nlink = p, 1
		want[p] = n
	}
	for p, n := range got {
		if n.nlink > 1 {
			t.Errorf("%s: nlink %d, no other name is left", p, n.nlink)
		}
		n.inoKey = p
		got[p] = n
	}
	compareTrees(t, want, got, cmpOpts{})
	if fileHash(t, oldImg) != oldSum {
		t.Error("the old image changed")
	}
	f2, raw := imageParts(t, out)
	oldFS, oldRaw := imageParts(t, oldImg)
	for _, rel := range []string{"keep/b.bin", "huge/large.bin", "keep/r-moved.bin"} {
		oldRel := strings.NewReplacer("huge", "big", "keep/r-moved.bin", "ren/r.bin").Replace(rel)
		if !equalStrings(fileBlocks(t, oldFS, oldRaw, oldRel), fileBlocks(t, f2, raw, rel)) {
			t.Errorf("%s: not stored in the old image's blocks", rel)
		}
	}
}

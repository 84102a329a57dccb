//go:build linux && !386 && !arm

package fusefs_test

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/mountopts"
)

func requireFuse(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		fixtures.FUSEUnusable(t, err.Error())
	}
}

// mountSrc mounts src in a fresh temp dir and unmounts it at cleanup.
func mountSrc(t testing.TB, src fusefs.Source, opts string) *fusefs.Server {
	t.Helper()
	requireFuse(t)
	o := mountopts.Defaults()
	o.EnableNlink = true
	if err := o.ParseString(opts); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	srv, err := fusefs.Mount(dir, src, fusefs.Config{Options: o.MountOptions})
	if err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) ||
			strings.Contains(err.Error(), "fusermount") || strings.Contains(err.Error(), "permission") {
			fixtures.FUSEUnusable(t, err.Error())
		}
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return srv
}

// mountSrcNoCleanup is mountSrc for tests that unmount themselves.
func mountSrcNoCleanup(t testing.TB, src fusefs.Source, opts string) *fusefs.Server {
	t.Helper()
	requireFuse(t)
	o := mountopts.Defaults()
	if err := o.ParseString(opts); err != nil {
		t.Fatal(err)
	}
	srv, err := fusefs.Mount(t.TempDir(), src, fusefs.Config{Options: o.MountOptions})
	if err != nil {
		if errors.Is(err, syscall.EPERM) || strings.Contains(err.Error(), "fusermount") {
			fixtures.FUSEUnusable(t, err.Error())
		}
		t.Fatalf("mount: %v", err)
	}
	return srv
}

func fusefsImageSource(im *godwarfs.Image) *fusefs.ImageSource { return fusefs.NewImageSource(im) }

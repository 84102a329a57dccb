//go:build linux && !386 && !arm

package apprun

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/fusefs"
	"golang.org/x/sys/unix"
)

// fuseUsable says why the image cannot be mounted here, or nil.
func fuseUsable() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("FUSE is not available: %w", err)
	}
	var st unix.Stat_t
	err = unix.Fstat(int(f.Fd()), &st)
	f.Close()
	// A container may have something else there (/dev/null bound over
	// it); the FUSE device is character device 10:229.
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(st.Rdev) != 10 || unix.Minor(st.Rdev) != 229 {
		return errors.New("FUSE is not available: /dev/fuse is not the FUSE device")
	}
	if _, err := exec.LookPath("fusermount3"); err != nil {
		return fmt.Errorf("FUSE is not available: %w", err)
	}
	return nil
}

// mounted is the image mounted on a private, temporary directory.
type mounted struct {
	dir   string
	srv   *fusefs.Server
	guard *guard
}

// mount mounts im read-only on a new directory. The mount goes through
// fusermount3 with auto_unmount, also as root, and a guard process
// watches the runtime, so that it disappears, with its mount point, when
// this process ends whatever way, SIGKILL included.
func mount(im *godwarfs.Image, self string) (*mounted, error) {
	fusermount, err := exec.LookPath("fusermount3")
	if err != nil {
		return nil, fmt.Errorf("FUSE is not available: %w", err)
	}
	base := filepath.Base(self)
	if len(base) > 8 {
		base = base[:8]
	}
	dir, err := os.MkdirTemp("", ".mount_"+strings.ReplaceAll(base, "*", "_"))
	if err != nil {
		return nil, fmt.Errorf("creating a mount point: %w", err)
	}
	// The guard starts before the mount, so that no moment of the mount
	// goes unwatched.
	g, err := startGuard(dir, fusermount)
	if err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("starting the mount's guard: %w", err)
	}
	srv, err := fusefs.MountImage(dir, im, fusefs.Config{
		Options: fusefs.MountOptions{AutoUnmount: true, ReadOnly: true},
		FsName:  self,
		// This process serves one mount (see fusefs.Config).
		LimitMemory: true,
		SpareProcs:  true,
	})
	if err != nil {
		rerr := os.Remove(dir)
		g.release(rerr == nil)
		return nil, err
	}
	return &mounted{dir: dir, srv: srv, guard: g}, nil
}

// close unmounts (lazily, if programs the entry left behind still use
// the tree) and removes the mount point; what it cannot do, the guard
// does.
func (m *mounted) close() error {
	err := m.srv.Unmount()
	if rerr := os.Remove(m.dir); rerr != nil && err == nil && !errors.Is(rerr, os.ErrNotExist) {
		err = rerr
	}
	m.guard.release(err == nil)
	return err
}

//go:build !386 && !arm

package fusefs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// forceUnmount detaches a busy mount and aborts its FUSE connection.
func (s *Server) forceUnmount() error {
	var st unix.Stat_t
	conn := ""
	if err := unix.Stat(s.dir, &st); err == nil {
		// FUSE superblocks use anonymous devices (major 0); fusectl
		// names connections by the kernel dev_t, i.e. the minor.
		conn = fmt.Sprint(unix.Minor(st.Dev))
	}
	var derr error
	if os.Geteuid() == 0 {
		derr = unix.Unmount(s.dir, unix.MNT_DETACH)
	} else {
		derr = fusermount("-u", "-z", s.dir)
	}
	if derr != nil && !errors.Is(derr, syscall.EINVAL) {
		return fmt.Errorf("lazy unmount: %w", derr)
	}
	if conn != "" {
		abortConnection(conn)
	}
	return nil
}

// abortConnection writes to fusectl's abort file so pending and future
// requests on the (already detached) mount fail with ENOTCONN.
func abortConnection(conn string) {
	const ctl = "/sys/fs/fuse/connections"
	p := filepath.Join(ctl, conn, "abort")
	if _, err := os.Stat(p); err != nil && os.Geteuid() == 0 {
		// fusectl is often not mounted in containers; mounting it is
		// harmless and needs root only.
		_ = unix.Mount("fusectl", ctl, "fusectl", 0, "")
	}
	_ = os.WriteFile(p, []byte("1\n"), 0o200)
}

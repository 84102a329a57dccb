//go:build !linux && !windows

package fusefs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// forceUnmount unmounts a busy mount forcibly (macOS and FreeBSD have no
// lazy detach or fusectl).
func (s *Server) forceUnmount() error {
	if err := unix.Unmount(s.dir, unix.MNT_FORCE); err != nil {
		return fmt.Errorf("forced unmount: %w", err)
	}
	return nil
}

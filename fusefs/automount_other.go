//go:build !linux && !windows

package fusefs

import (
	"errors"

	"github.com/godwarfs/godwarfs/internal/gofuse/fuse"
)

// auto_unmount relies on fusermount3 handing over the /dev/fuse
// descriptor, which only Linux's FUSE does.
type autoUnmountHelper struct{}

func (h *autoUnmountHelper) close() {}

var errAutoUnmount = errors.New("auto_unmount is supported on Linux only")

func mountAutoUnmount(string, *fuse.MountOptions) (int, *autoUnmountHelper, error) {
	return -1, nil, errAutoUnmount
}

func unmountDir(string) error { return errAutoUnmount }

func probePoll(string) error { return nil }

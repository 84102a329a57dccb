//go:build linux

package godwarfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// adviseWillNeed asks the kernel to start reading [off, off+n) of f into
// the page cache in the background (posix_fadvise WILLNEED). It is a
// hint: errors are ignored.
func adviseWillNeed(f *os.File, off, n int64) {
	_ = unix.Fadvise(int(f.Fd()), off, n, unix.FADV_WILLNEED)
}

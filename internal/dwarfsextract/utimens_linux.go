//go:build linux && !386 && !arm

package dwarfsextract

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// utimensat is the system call: path nil sets the times of dirfd itself.
func utimensat(dirfd int, path *byte, at [2]time.Time, flags int) error {
	ts, err := timespecs(at)
	if err != nil {
		return err
	}
	if _, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(dirfd), uintptr(unsafe.Pointer(path)), uintptr(unsafe.Pointer(&ts[0])), uintptr(flags), 0, 0); e != 0 {
		return e
	}
	return nil
}

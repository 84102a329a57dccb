//go:build linux && (386 || arm)

package dwarfsextract

import (
	"errors"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// timespec64 is the kernel's struct __kernel_timespec.
type timespec64 struct{ sec, nsec int64 }

// utimensat is the system call: path nil sets the times of dirfd itself.
// Here, with 32-bit time_t, it is utimensat_time64 (Linux 5.1), which sets
// times past 2038; an older kernel gets the 32-bit call.
func utimensat(dirfd int, path *byte, at [2]time.Time, flags int) error {
	ts := [2]timespec64{{at[0].Unix(), int64(at[0].Nanosecond())}, {at[1].Unix(), int64(at[1].Nanosecond())}}
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT_TIME64, uintptr(dirfd), uintptr(unsafe.Pointer(path)), uintptr(unsafe.Pointer(&ts[0])), uintptr(flags), 0, 0)
	if e == 0 {
		return nil
	}
	if !errors.Is(e, unix.ENOSYS) {
		return e
	}
	ts32, err := timespecs(at)
	if err != nil {
		return err
	}
	if _, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(dirfd), uintptr(unsafe.Pointer(path)), uintptr(unsafe.Pointer(&ts32[0])), uintptr(flags), 0, 0); e != 0 {
		return e
	}
	return nil
}

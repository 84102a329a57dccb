//go:build linux && !386 && !arm

package fusefs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// dropExecutablePages takes the pages of the executable's read-only
// mappings (code, read-only data) out of the process's resident set once
// the mount is up. Starting the process maps far more of them than
// serving needs: every package initializer runs once, and the kernel
// maps the cached pages around each page a fault touches, so nearly the
// whole binary (9 of its 12 MiB) counted as resident while serving
// touches a small part of it. The pages stay in the page cache; the ones
// serving uses come back with minor faults. Only mappings without
// private (copied-on-write) pages are dropped: a dynamically linked
// binary's relocated read-only data must not revert to the file.
func dropExecutablePages() error {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return fmt.Errorf("executable: %w", err)
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return fmt.Errorf("mappings: %w", err)
	}
	for _, r := range readOnlyMappings(b, exe) {
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, r[0], r[1]-r[0], unix.MADV_DONTNEED); e != 0 {
			return fmt.Errorf("madvise %s %#x-%#x: %w", exe, r[0], r[1], e)
		}
	}
	return nil
}

// readOnlyMappings returns the address ranges in smaps (the text of
// /proc/PID/smaps) that map path read-only and hold no anonymous pages.
func readOnlyMappings(smaps []byte, path string) [][2]uintptr {
	var out [][2]uintptr
	var cur [2]uintptr
	match := false
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			// A mapping's header: range perms offset dev inode [path].
			match = false
			lo, hi, ok := strings.Cut(f[0], "-")
			a, err1 := strconv.ParseUint(lo, 16, 64)
			z, err2 := strconv.ParseUint(hi, 16, 64)
			if !ok || err1 != nil || err2 != nil || len(f) < 6 {
				continue
			}
			if p := strings.Join(f[5:], " "); p == path && (f[1] == "r-xp" || f[1] == "r--p") {
				cur, match = [2]uintptr{uintptr(a), uintptr(z)}, true
			}
			continue
		}
		if match && len(f) >= 2 && f[0] == "Anonymous:" {
			if f[1] == "0" {
				out = append(out, cur)
			}
			match = false
		}
	}
	return out
}

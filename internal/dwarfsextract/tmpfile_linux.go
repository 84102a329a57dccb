package dwarfsextract

import (
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// probeUnnamed sets how tn links files created with O_TMPFILE in dir, or
// leaves linkNone when they cannot be.
func probeUnnamed(tn *tempNames, dir string) {
	fd, err := openUnnamed(dir)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	probe := tn.next(filepath.Join(dir, "probe"))
	for _, m := range []linkMode{linkEmptyPath, linkProc} {
		tn.link = m
		if tn.linkFD(fd, probe) == nil {
			unix.Unlink(probe)
			return
		}
	}
	tn.link = linkNone
}

func openUnnamed(dir string) (int, error) {
	return unix.Open(dir, unix.O_WRONLY|unix.O_TMPFILE|unix.O_CLOEXEC, 0o600)
}

func (tn *tempNames) linkFD(fd int, dst string) error {
	if tn.link == linkProc {
		return unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), unix.AT_FDCWD, dst, unix.AT_SYMLINK_FOLLOW)
	}
	return unix.Linkat(fd, "", unix.AT_FDCWD, dst, unix.AT_EMPTY_PATH)
}

// futimens sets the times of fd itself (utimensat with a NULL path), which
// works for an unnamed file too.
func futimens(fd int, _ string, at [2]time.Time) error {
	return utimensat(fd, nil, at, 0)
}

// utimesNoFollow sets the times of path, not of what a symlink there
// names.
func utimesNoFollow(path string, at [2]time.Time) error {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return err
	}
	return utimensat(unix.AT_FDCWD, p, at, unix.AT_SYMLINK_NOFOLLOW)
}

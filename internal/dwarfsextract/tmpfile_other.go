//go:build unix && !linux

package dwarfsextract

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// Without O_TMPFILE every file is written under a temporary name and
// renamed (tempNames.link stays linkNone).

func probeUnnamed(*tempNames, string) {}

func openUnnamed(string) (int, error) { return -1, errors.ErrUnsupported }

func (tn *tempNames) linkFD(int, string) error { return errors.ErrUnsupported }

// futimens sets the times through the temporary name the file always has
// here.
func futimens(_ int, tmp string, at [2]time.Time) error {
	ts, err := timespecs(at)
	if err != nil {
		return err
	}
	return unix.UtimesNanoAt(unix.AT_FDCWD, tmp, ts[:], 0)
}

// utimesNoFollow sets the times of path, not of what a symlink there
// names.
func utimesNoFollow(path string, at [2]time.Time) error {
	ts, err := timespecs(at)
	if err != nil {
		return err
	}
	return unix.UtimesNanoAt(unix.AT_FDCWD, path, ts[:], unix.AT_SYMLINK_NOFOLLOW)
}

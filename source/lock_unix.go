//go:build unix

package source

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive lock on f, shared with other processes
// using the same cache directory.
func lockFile(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_EX) }

func unlockFile(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }

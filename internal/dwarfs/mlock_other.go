//go:build !linux && !windows

package dwarfs

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs/internal/mountopts"
)

// applyMlock locks the memory mapped now (without MCL_FUTURE, which
// would make later heap growth fail fatally under a finite limit).
func applyMlock(m mountopts.MlockMode) error {
	if m == mountopts.MlockNone || m == "" {
		return nil
	}
	err := unix.Mlockall(unix.MCL_CURRENT)
	if err != nil && m == mountopts.MlockMust {
		return fmt.Errorf("mlock=must: %w", err)
	}
	return nil
}

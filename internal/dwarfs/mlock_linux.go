package dwarfs

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs/internal/mountopts"
)

// applyMlock locks the process memory. MCL_FUTURE is only used when the
// lock limit cannot be hit: with a finite RLIMIT_MEMLOCK it would make
// later Go heap growth fail fatally instead of returning an error.
func applyMlock(m mountopts.MlockMode) error {
	if m == mountopts.MlockNone || m == "" {
		return nil
	}
	flags := unix.MCL_CURRENT
	var rl unix.Rlimit
	if os.Geteuid() == 0 || (unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl) == nil && rl.Cur == unix.RLIM_INFINITY) {
		// ONFAULT: lock pages as they are touched instead of populating
		// every reserved heap arena up front.
		flags |= unix.MCL_FUTURE | unix.MCL_ONFAULT
	}
	err := unix.Mlockall(flags)
	if err != nil && m == mountopts.MlockMust {
		return fmt.Errorf("mlock=must: %w", err)
	}
	return nil
}

//go:build !linux

package godwarfs

import "os"

// adviseWillNeed is a no-op where posix_fadvise is not at hand.
func adviseWillNeed(f *os.File, off, n int64) {}

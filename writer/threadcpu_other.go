//go:build !linux

package writer

import "time"

// threadCPU: no per-thread CPU accounting here; encoder CPU is not shown.
func threadCPU() (time.Duration, bool) { return 0, false }

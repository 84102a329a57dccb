//go:build !unix

package writer

import "time"

// processCPU is not measured here; the timeline then shows wall times only.
func processCPU() (time.Duration, bool) { return 0, false }

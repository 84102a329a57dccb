//go:build !linux && !windows

package fusefs

// dropExecutablePages does nothing where the driver cannot tell which of
// its mappings hold the executable.
func dropExecutablePages() error { return nil }

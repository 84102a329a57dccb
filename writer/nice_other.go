//go:build !linux

package writer

// niceThread is a no-op where threads have no nice value of their own.
func niceThread(inc int) error { return nil }

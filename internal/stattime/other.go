//go:build !(linux && (386 || arm))

package stattime

// Times reports ok false: here stat's times are 64 bits wide.
func Times(path string, follow bool) (atime, mtime, ctime Time, ok bool) {
	return atime, mtime, ctime, false
}

//go:build !linux || 386 || arm

package main

import (
	"fmt"
	"os"
	"runtime"
)

// The runtime mounts with FUSE through fusermount3 and reads its own ELF
// file, so it runs only on the Linux targets where the driver mounts.
func main() {
	fmt.Fprintf(os.Stderr, "dwarfs-run: self-mounting executables are not supported on %s/%s\n", runtime.GOOS, runtime.GOARCH)
	os.Exit(127)
}

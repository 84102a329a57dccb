//go:build linux && !386 && !arm

// Command dwarfs-run is the runtime of self-mounting executables: an
// application tree packed as a DwarFS image and appended to this
// program (mkdwarfs -i APPDIR -o APP --runtime). Run, it mounts the
// image, runs its AppRun with the arguments and unmounts when AppRun
// exits; see package apprun and --appimage-help.
package main

import (
	"os"

	"github.com/godwarfs/godwarfs/internal/apprun"
)

func main() {
	os.Exit(apprun.Main(os.Args, os.Stdout, os.Stderr))
}

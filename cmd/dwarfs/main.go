// Command dwarfs mounts a DwarFS image with FUSE:
//
//	dwarfs IMAGE MOUNTPOINT [-f] [-d] [-o OPTIONS]
//
// Installed (or linked) as mount.dwarfs or mount.fuse.dwarfs it acts as a
// mount(8) helper. Option handling lives in package fusefs.
package main

import (
	"os"

	"github.com/godwarfs/godwarfs/fusefs"
)

func main() {
	cli := &fusefs.CLI{Open: fusefs.OpenImage}
	os.Exit(cli.Run(os.Args))
}

// Command dwarfs mounts a DwarFS image with FUSE:
//
//	dwarfs IMAGE MOUNTPOINT [-f] [-d] [-o OPTIONS]
//
// Installed (or linked) as mount.dwarfs or mount.fuse.dwarfs it acts as a
// mount(8) helper. The command itself lives in internal/dwarfs.
package main

import "github.com/godwarfs/godwarfs/internal/dwarfs"

func main() { dwarfs.Tool.Exit() }

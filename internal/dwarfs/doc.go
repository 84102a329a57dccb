// Package dwarfs is the dwarfs command (also run as mount.dwarfs and by the
// godwarfs multi-call binary): it parses the command line and the -o
// mount options, opens the image as they say, and mounts it with package
// fusefs in the foreground or as a daemon.
package dwarfs

// Command mkdwarfs creates DwarFS images; see internal/mkdwarfs.
package main

import "github.com/godwarfs/godwarfs/internal/mkdwarfs"

// Interrupted by SIGINT or SIGTERM, the builder removes its temporary
// file (see cli.Tool).
func main() { mkdwarfs.Tool.Exit() }

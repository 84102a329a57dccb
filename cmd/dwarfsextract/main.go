// Command dwarfsextract extracts a DwarFS image to a directory or a tar
// archive.
package main

import "github.com/godwarfs/godwarfs/internal/dwarfsextract"

// Interrupted by SIGINT or SIGTERM, the extraction removes the files and
// the archive it has not finished (see cli.Tool).
func main() { dwarfsextract.Tool.Exit() }

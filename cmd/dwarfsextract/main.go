// Command dwarfsextract extracts a DwarFS image to a directory or a tar
// archive.
package main

import (
	"os"

	"github.com/godwarfs/godwarfs/internal/dwarfsextract"
)

func main() {
	os.Exit(dwarfsextract.Main(os.Args[1:], os.Stdout, os.Stderr))
}

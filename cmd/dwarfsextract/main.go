// Command dwarfsextract extracts a DwarFS image to a directory or a tar
// archive.
package main

import (
	"os"

	"github.com/godwarfs/godwarfs/internal/extract"
)

func main() {
	os.Exit(extract.Main(os.Args[1:], os.Stdout, os.Stderr))
}

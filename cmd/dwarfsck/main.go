// Command dwarfsck checks a DwarFS image and prints information about it.
package main

import (
	"os"

	"github.com/godwarfs/godwarfs/internal/dwarfsck"
)

func main() {
	os.Exit(dwarfsck.Main(os.Args[1:], os.Stdout, os.Stderr))
}

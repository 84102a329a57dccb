// Command dwarfsck checks a DwarFS image and prints information about it.
package main

import (
	"os"

	"github.com/godwarfs/godwarfs/internal/check"
)

func main() {
	os.Exit(check.Main(os.Args[1:], os.Stdout, os.Stderr))
}

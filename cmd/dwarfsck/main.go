// Command dwarfsck checks a DwarFS image and prints information about it.
package main

import "github.com/godwarfs/godwarfs/internal/dwarfsck"

func main() { dwarfsck.Tool.Exit() }

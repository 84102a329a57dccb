package mkdwarfs

import (
	"fmt"
	"io"
	"strings"

	"github.com/godwarfs/godwarfs/block/encode"
	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/writer"
)

// level is one row of the reference mkdwarfs level table (mkdwarfs -H).
type level struct {
	blockBits           int
	block, schema, meta string
	window, step        int
	order               dedup.Order
	orderName           string
	// lookback is -B's default, not in the reference's table: 2, and 3 at
	// level 9, whose 64 MiB blocks hold a project's releases in few
	// blocks, so that a third one still finds earlier versions (0.16%
	// smaller on a tree of many releases, and less data to compress).
	lookback int
}

// zstdMax is the block compression of levels 6 and 7: libzstd's level 22
// with a target length of 512 instead of its 999. A match of 512 bytes
// then ends the search for a longer one: after the segmenter has taken
// the long repeats, builds of trees of releases take a quarter less CPU
// for images at most 0.15% larger (see doc/architecture.md).
const zstdMax = writer.DefaultBlockCompression

var levels = [10]level{
	{20, "null", "null", "null", 0, 0, dedup.OrderNone, "none", 2},
	{20, "lz4", "zstd:level=16", "null", 0, 0, dedup.OrderPath, "path", 2},
	{20, "lz4hc:level=9", "zstd:level=16", "null", 0, 0, dedup.OrderPath, "path", 2},
	{21, "lz4hc:level=9", "zstd:level=16", "null", 12, 1, dedup.OrderSimilarity, "similarity", 2},
	{22, "zstd:level=11", "zstd:level=16", "null", 12, 2, dedup.OrderSimilarity, "similarity", 2},
	{23, "zstd:level=19", "zstd:level=16", "null", 12, 2, dedup.OrderSimilarity, "similarity", 2},
	{24, zstdMax, "zstd:level=16", "null", 12, 3, dedup.OrderNilsimsa, "nilsimsa", 2},
	{24, zstdMax, "zstd:level=16", "zstd:level=22", 12, 3, dedup.OrderNilsimsa, "nilsimsa", 2},
	{24, "lzma:level=9", "zstd:level=16", "lzma:level=9", 12, 4, dedup.OrderNilsimsa, "nilsimsa", 2},
	{26, "lzma:level=9", "zstd:level=16", "lzma:level=9", 12, 4, dedup.OrderNilsimsa, "nilsimsa", 3},
}

func printLevels(w io.Writer) {
	line := "  " + strings.Repeat("-", 88) + "\n"
	fmt.Fprint(w, "Compression level defaults:\n", line)
	fmt.Fprint(w, "  Level  Block  Compression Algorithm                                Window     Inode\n")
	fmt.Fprint(w, "         Size   Block Data             Schema/History  Metadata      Size/Step  Order\n", line)
	for i, l := range levels {
		fmt.Fprintf(w, "  %-6d %-6d %-22s %-15s %-15s%2d / %d    %s\n",
			i, l.blockBits, l.block, l.schema, l.meta, l.window, l.step, l.orderName)
	}
	fmt.Fprint(w, line)
	fmt.Fprint(w, blockLayoutHelp)
	printAlgorithms(w)
}

// blockLayoutHelp is -H's advice on block size and layout by how the
// image will be read; the manual's BLOCK SIZE AND READ PATTERNS has more.
const blockLayoutHelp = `
Block size and layout by how the image is read:
  read whole (extract, tar of the mount): large blocks (-S24 to -S26) are smallest and read fastest.
  read scattered (a few files at a time): a file costs a decode of its block up to the file, on
    average half a block; keep blocks small (-S20 to -S22), or with lzma cut them into xz blocks
    with an index (-C lzma:level=9:xz_block_size=20): a read then decodes only the 1 MiB pieces it
    needs and the cache holds only those. The reference reads such images. An xz block starts with
    an empty dictionary, so this costs size: on shared libraries at -l9 -S26, 16% larger blocks
    with 1 MiB xz blocks, 11% with 4 MiB, 4% with 16 MiB.
`

// printAlgorithms says which encoder this binary has for each algorithm:
// cgo builds use libzstd and liblzma, pure-Go builds do not.
func printAlgorithms(w io.Writer) {
	fmt.Fprint(w, "\nCompression algorithms (decoding is pure Go in every build):\n")
	for _, a := range encode.Algorithms() {
		desc := a.Description
		if a.Encoder != "" {
			desc += " (" + a.Encoder + ")"
		}
		fmt.Fprintf(w, "  %-8s %s\n", a.Name, desc)
		for _, o := range a.Options {
			fmt.Fprintf(w, "               %s\n", o)
		}
	}
}

package mkimage

import "github.com/godwarfs/godwarfs/internal/cli"

// manual is the hand-written part of the mkdwarfs manual page.
var manual = cli.Manual{
	Description: []string{
		"mkdwarfs builds a DwarFS image from a directory tree. Identical files are stored once, " +
			"similar data is deduplicated in segments across files, and the file data is compressed " +
			"in blocks. The image is written to a temporary file beside the output and renamed into " +
			"place only when complete, so a failed or interrupted run leaves nothing under the output name.",
		"Given an existing image with -i, mkdwarfs rewrites it instead: --recompress re-encodes its " +
			"sections with other compression, --rebuild-metadata re-creates the metadata (applying the " +
			"metadata options such as --set-owner and --chmod), and --change-block-size re-chunks the file data.",
		"The images are compatible with the reference DwarFS tools (format 2.5 is written; every 2.x image can be read).",
		"Examples:",
		"  mkdwarfs -i /usr/share/doc -o doc.dwarfs\n  mkdwarfs -i tree -o tree.dwarfs -l 9 -F '- *.o'\n  mkdwarfs -i old.dwarfs -o new.dwarfs --recompress -C lzma:level=9",
	},
	Sections: []cli.Section{
		{Title: "COMPRESSION", Paragraphs: []string{
			"-C and the other --*-compression options take ALGO[:OPTION=VALUE...]: null, zstd:level=N " +
				"(1 to 22), lzma:level=N (0 to 9, :extreme), lz4, lz4hc:level=N (1 to 12) and brotli:quality=N " +
				"(0 to 11). The -l level (0 to 9) chooses all of them together with block size and ordering; " +
				"mkdwarfs -H prints the table.",
		}},
		{Title: "DIFFERENCES FROM THE REFERENCE MKDWARFS", Paragraphs: []string{
			"Categorizers (--categorize and the --incompressible-* options), --hollow and --hotness-list are " +
				"refused. By default godwarfs stops at the first input it cannot read and writes no image; " +
				"with --continue-on-error it behaves as the reference does by default: it reports the input, " +
				"leaves it out (or stores it empty when reading fails only while its data is packed), and exits with status 2.",
		}},
	},
	SeeAlso: []string{"dwarfs(1)", "dwarfsck(1)", "dwarfsextract(1)"},
}

package extract

import "github.com/godwarfs/godwarfs/internal/cli"

// manual is the hand-written part of the dwarfsextract manual page.
var manual = cli.Manual{
	Description: []string{
		"dwarfsextract writes the contents of a DwarFS image to a directory, or as an archive (-f) to a " +
			"file or to standard output, keeping permissions, ownership (as root), times, hard links, " +
			"sparse files and special files. --pattern selects what to extract (shell globs, ** matches " +
			"across directories).",
		"Examples:",
		"  dwarfsextract -i image.dwarfs -o outdir\n  dwarfsextract -i image.dwarfs -f pax -o - | tar -tvf -\n  dwarfsextract -i image.dwarfs -o outdir --pattern '**/*.txt'",
	},
	SeeAlso: []string{"mkdwarfs(1)", "dwarfs(1)", "dwarfsck(1)", "tar(1)"},
}

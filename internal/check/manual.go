package check

import "github.com/godwarfs/godwarfs/internal/cli"

// manual is the hand-written part of the dwarfsck manual page.
var manual = cli.Manual{
	Description: []string{
		"dwarfsck verifies the checksums of every section of a DwarFS image and the consistency of its " +
			"metadata, then prints a summary of the image; -d chooses how much. It can also list the files " +
			"(-l), print a digest of every file (--checksum), write the image's header (-H) or export its " +
			"metadata as JSON.",
		"Examples:",
		"  dwarfsck image.dwarfs\n  dwarfsck -d3 image.dwarfs\n  dwarfsck --check-integrity -q image.dwarfs\n  dwarfsck --checksum=sha256 image.dwarfs",
	},
	SeeAlso: []string{"mkdwarfs(1)", "dwarfs(1)", "dwarfsextract(1)"},
}

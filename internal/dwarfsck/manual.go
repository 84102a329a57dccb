package dwarfsck

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
	Sections: []cli.Section{
		{Title: "DETAIL LEVELS", Paragraphs: []string{
			"-d 0 prints only the creator lines; 1 adds the version and the metadata summary; 2 (the default) " +
				"the history; 3 the list of sections; 4 every inode; 5 the chunks of every file; 6 and 7 the whole " +
				"metadata as JSON. Feature names select parts directly, e.g. -d version,history.",
		}},
		{Title: "DIFFERENCES FROM THE REFERENCE DWARFSCK", Paragraphs: []string{
			"The reference's dumps of its internal metadata encoding (the features metadata_details, " +
				"frozen_analysis, frozen_details, frozen_layout and schema_raw_dump, including the metadata memory " +
				"usage table of -d 2) are not shown; asked for by name they are refused. metadata_full_dump prints " +
				"the metadata as JSON (as --export-metadata does) instead of the reference's debug dump; --json " +
				"does not list the sections. --checksum offers no sm3, and prints the files in path order.",
		}},
	},
	SeeAlso: []string{"mkdwarfs(1)", "dwarfs(1)", "dwarfsextract(1)"},
}

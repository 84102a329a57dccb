package dwarfsextract

import "github.com/godwarfs/godwarfs/internal/cli"

// manual is the hand-written part of the dwarfsextract manual page.
var manual = cli.Manual{
	Description: []string{
		"dwarfsextract writes the contents of a DwarFS image to a directory, or as an archive (-f) to a " +
			"file or to standard output, keeping permissions, ownership (as root), times, hard links, " +
			"sparse files and special files. Without -o it extracts into the current directory.",
		"Patterns, given as plain arguments or with --pattern, select what to extract: shell globs " +
			"matched against the path below the image root, where * and ? stay within one directory, " +
			"** matches across directories and a pattern starting with i: ignores case. A file is " +
			"extracted when it or a directory above it matches, with the directories leading to it. " +
			"When no file matches, dwarfsextract warns \"no matching files found\", extracts nothing " +
			"and exits 0, as the reference does.",
		"Archive formats (-f): tar and pax (POSIX pax), gnutar, ustar, zip, and cpio or newc (the " +
			"portable SVR4 cpio format GNU cpio and the Linux initramfs read). -f auto chooses from the " +
			"output name: .tar, .tar.gz or .tgz, .tar.xz or .txz, .tar.zst or .tzst (compressed pax), " +
			".zip or .jar, .cpio. A zip archive holds no owners, hard links (each link gets the data) " +
			"or special files (devices, fifos and sockets are skipped with a warning); cpio stores files " +
			"of up to 4 GiB. An archive file is written under a temporary name and renamed when complete; " +
			"an archive whose member cannot be read whole is not written at all, even with " +
			"--continue-on-error. A name a format cannot store exactly (a NUL byte in any format, a long or " +
			"non-ASCII name in ustar, a cpio member named TRAILER!!!, a zip file " +
			"whose name ends in /) is refused with an error rather than stored under another name.",
		"Files are written under temporary names and renamed when complete. On SIGINT or SIGTERM " +
			"dwarfsextract removes what it has not finished and exits with status 1; every name it " +
			"leaves holds its whole content.",
		"Examples:",
		"  dwarfsextract -i image.dwarfs -o outdir\n  dwarfsextract -i image.dwarfs -f pax -o - | tar -tvf -\n  dwarfsextract -i image.dwarfs -o outdir --pattern '**/*.txt'\n  dwarfsextract -i image.dwarfs 'i:**/readme*'\n  dwarfsextract -i image.dwarfs -f auto -o tree.tar.zst\n  dwarfsextract -i docker://registry.example/tools:v1 -o outdir",
	},
	Sections: []cli.Section{
		{Title: "REGISTRIES", Paragraphs: cli.RegistryManual},
		{Title: "CASE-INSENSITIVE TARGETS", Paragraphs: []string{
			"Before extracting to a directory, dwarfsextract finds out whether the output directory " +
				"folds letter case, by creating a probe file with a lower-case name there and looking it " +
				"up in upper case. This is the rule on Windows and by default on macOS, and on Linux in " +
				"case-folding directories (ext4 or f2fs with casefold). Directories below the output " +
				"are taken to fold as it does. On such a target, two entries of one directory whose names " +
				"differ only in case (Case and case) would land in one file, the second overwriting the " +
				"first. The image's order decides which comes first (names sort by their bytes, so upper " +
				"case first); --case-collision says what happens to the others.",
			"skip (the default): the first keeps its name; each other is reported by name and left " +
				"out, with everything below it, and counted with the entries not extracted; the exit " +
				"status is 2. rename: each other is extracted under its name followed by ~2 (or ~3, and " +
				"so on: the first number whose name is still free in that directory) and a warning names " +
				"both. error: nothing is extracted, and the error names the first two colliding entries; " +
				"the exit status is 1. Archives (-f) hold every name and are not affected.",
		}},
		{Title: "WINDOWS", Paragraphs: []string{
			"Extracting to a directory on Windows follows these rules. An entry whose name Windows " +
				"cannot hold is reported by name and left out, with everything below it, and never written " +
				"under another name; the other entries are extracted and the exit status is 2. Such names " +
				"hold a control character or one of \\ / : * ? \" < > |, end in a dot or a space, or are " +
				"a reserved device name (CON, PRN, AUX, NUL, COM1 to COM9, LPT1 to LPT9, in any case, alone " +
				"or before a dot, as in NUL.txt).",
			"Symbolic links are created where the process may (an elevated process, or developer mode); " +
				"otherwise each is left out with a warning, which does not change the exit status. Devices " +
				"and fifos are left out with a warning; sockets become empty files, as elsewhere. Owners are " +
				"not restored; a file whose owner may not write it gets the read-only attribute; times are " +
				"restored. Hard links are extracted as links where the filesystem has them. Archives (-f) " +
				"hold every name, as on other systems.",
		}},
		{Title: "DIFFERENCES FROM THE REFERENCE DWARFSEXTRACT", Paragraphs: []string{
			"A pattern that matches a directory also extracts everything below it (the reference " +
				"matches files only, so it needs dir/**). Archives are written by Go libraries instead of " +
				"libarchive: the formats are those listed above, and --format-filters and --format-options " +
				"are not supported (-f auto chooses the compression of a tar archive from its name).",
		}},
	},
	SeeAlso: []string{"mkdwarfs(1)", "dwarfs(1)", "dwarfsck(1)", "tar(1)"},
}

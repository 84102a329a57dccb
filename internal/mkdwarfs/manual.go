package mkdwarfs

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
		{Title: "ENVIRONMENT", Paragraphs: []string{
			"SOURCE_DATE_EPOCH (seconds since 1970, see reproducible-builds.org) replaces the current " +
				"time in the creation timestamp, the history entry and --set-time now, so two builds of the " +
				"same tree with the same arguments by the same binary are byte-identical whenever they run. " +
				"A value that is not a non-negative integer is an error.",
		}},
		{Title: "COMPRESSION", Paragraphs: []string{
			"-C and the other --*-compression options take ALGO[:OPTION=VALUE...]: null; zstd:level=N " +
				"(-131072 to 22; levels below 1 are faster and weaker) with :long for long-distance matching; " +
				"lzma:level=N (0 to 9) with :extreme, :dict_size=N (12 to 30, the log2 of the dictionary), " +
				":binary=NAME, :mode=fast|normal, :mf=hc3|hc4|bt2|bt3|bt4, :nice=N (2 to 273; 0 keeps the " +
				"preset's) and :depth=N (0 to 4294967295); lz4; lz4hc:level=N (0 to 12); brotli:quality=N " +
				"(0 to 11) with :lgwin=N (10 to 24). The -l level (0 to 9) chooses all of them together with " +
				"block size and ordering; mkdwarfs -H prints the table and the encoders of this build.",
			"lzma:binary=NAME puts a BCJ filter for executables of one architecture (x86, powerpc, ia64, " +
				"arm, armthumb or sparc) before LZMA2: it turns relative call targets into absolute ones, " +
				"which repeat more. As with the reference, each block is compressed with and without the " +
				"filter and the smaller stream is kept, so data that is not such code costs only time. " +
				"Images with these filters, and with arm64 from newer xz tools, are read in every build.",
		}},
		{Title: "LOGGING", Paragraphs: []string{
			"--log-level sets what is reported on standard error: error, warn (also unreadable inputs " +
				"and other warnings), info (the default: also the summary), verbose (also the settings in " +
				"effect and each phase with its time, as lines starting with V and the time of day), debug " +
				"(D lines: duplicate files, each file's place in the order, and how each file was segmented) " +
				"and trace (T lines: every segment match).",
		}},
		{Title: "NILSIMSA ORDER", Paragraphs: []string{
			"--order=nilsimsa groups files whose nilsimsa digests are alike. The digests are clustered " +
				"around centroids (each bit set when most members have it): a file joins the first cluster " +
				"within a distance limit, starting at 128 of the 256 bits, or starts a new one while there are " +
				"fewer than max-children clusters, else joins the nearest. Clusters larger than max-cluster-size " +
				"are clustered again with half the limit; smaller ones are ordered by a nearest neighbour " +
				"search, which takes time quadratic in max-cluster-size. Sibling clusters follow each other " +
				"largest first, each next to the one whose first file is nearest its last. max-children=1 with " +
				"a max-cluster-size above the number of files orders all files in one search. Files without a " +
				"digest (larger than --max-similarity-size) come first, largest first. The result does not " +
				"depend on --num-segmenter-workers, which sets how many clusters are worked on at once.",
		}},
		{Title: "CATEGORIZERS", Paragraphs: []string{
			"--categorize[=LIST] runs categorizers on the input while it is scanned, in the order of LIST; " +
				"the first that claims a file decides its category. godwarfs has two categorizers. The " +
				"incompressible categorizer compresses each file (at least --incompressible-min-input-size " +
				"bytes) in --incompressible-block-size pieces with a fast zstd level (--incompressible-zstd-level), " +
				"and files whose output is at least --incompressible-ratio of the input go to the category " +
				"'incompressible'; with --incompressible-fragments each piece is categorized on its own, so one " +
				"file can have data in both categories. --categorize alone means --categorize=incompressible.",
			"The hotness categorizer puts the files named in --hotness-list into the category 'hotness', so " +
				"that their data is stored together, in blocks of its own. The list has one path a line, " +
				"relative to the input directory; leading slashes are ignored, nothing else is normalised, " +
				"paths that name no file are ignored, and a path listed twice is an error. Mounting an image " +
				"with dwarfs -o analysis_file=FILE writes such a list of the files opened; rebuilding with " +
				"--categorize=hotness --hotness-list=FILE and mounting with -o preload_category=hotness then " +
				"loads those blocks at mount time. Without a list (or with an empty one) the categorizer " +
				"claims nothing, with a warning; --hotness-list without hotness in --categorize has no effect " +
				"(godwarfs warns). Like the reference, the hotness categorizer must be named: --categorize " +
				"alone does not enable it.",
			"Order matters: with --categorize=hotness,incompressible a listed file always goes to hotness " +
				"(the incompressible test is not run on it); with incompressible,hotness a listed file that " +
				"the incompressible categorizer claims stays there, as with the reference: in whole-file mode " +
				"when it is incompressible or sparse, and with --incompressible-fragments every file it " +
				"examines, so that only files below --incompressible-min-input-size can still go to hotness. " +
				"Data stored once for several paths (identical files, hard links) is hot when any of them is listed.",
			"The data of each category is ordered, segmented and stored in blocks of its own, and the image " +
				"records the category of every block (dwarfsck shows them; the dwarfs preload_category option " +
				"and mkdwarfs --recompress-categories use them). -C, --order, -B, -W, -w and --bloom-filter-size " +
				"take CAT[,CAT...]::VALUE to set a value for categories only, e.g. -C incompressible::lz4 or " +
				"--order=incompressible::none; the category <default> is everything not categorized. " +
				"--categorize implies -C incompressible::null unless -C sets that category, so already " +
				"compressed data is stored as it is instead of being compressed again, which is faster and " +
				"rarely bigger. When rewriting an image with --recompress, -C CAT::ALGO applies to the " +
				"blocks of that category in the image.",
		}},
		{Title: "FILTER RULES", Paragraphs: []string{
			"Each -F rule is '+ PATTERN' (include), '- PATTERN' (exclude) or '. FILE' (read more rules " +
				"from FILE, one a line; blank lines and lines starting with # are skipped; FILE may merge " +
				"others). Rules are tried in the order given and the first one that matches an entry decides; " +
				"an entry no rule matches is included. An excluded directory is not scanned. A letter i after " +
				"the sign ('+i *.jpg') makes the rule ignore case.",
			"A pattern starting with / is anchored at the input directory; any other pattern matches at " +
				"any depth. A pattern ending in / matches only directories; any other pattern matches only " +
				"files, links and other non-directories, unless it ends in **. ? and * match any one and any " +
				"number of characters except /, ** matches across directories, [abc], [a-h] and [!a-h] are " +
				"character classes, {a,b} alternatives, and \\ quotes the next character.",
			"For example, these rules keep the File/Spec/E*.pm and M*.pm modules at any depth and all .pl " +
				"files except those below a unicore directory, and leave out every other file (the " +
				"directories stay; --remove-empty-dirs drops the empty ones); --debug-filter lists the result " +
				"without building an image:",
			"  mkdwarfs -i perl -o perl.dwarfs --remove-empty-dirs \\\n    -F '+ File/Spec/[EM]*.pm' -F '- unicore/**.pl' -F '+ *.pl' -F '- *'",
		}},
		{Title: "DIFFERENCES FROM THE REFERENCE MKDWARFS", Paragraphs: []string{
			"Of the reference's categorizers incompressible and hotness are implemented; naming fits, " +
				"pcmaudio or binary in --categorize is refused, and --categorize without a list enables " +
				"incompressible only (the reference: fits,pcmaudio,binary,incompressible). With " +
				"--incompressible-fragments a file's similarity (for --order) is computed over the whole file, " +
				"not per category. Empty lines in a hotness list are skipped (the reference takes one as the " +
				"path '' and fails on a second as a duplicate). Data stored once for several paths is hot when " +
				"any of them is listed; the reference only looks at the path its scan met first, which depends " +
				"on the order of directory entries on disk. By default godwarfs stops at the first input it cannot read and writes no image; " +
				"with --continue-on-error it behaves as the reference does by default: it reports the input, " +
				"leaves it out (or stores it empty when reading fails only while its data is packed), and exits with status 2.",
			"A filter pattern that does not start with / is matched against the path below the input " +
				"directory only; the reference also lets it match directories above the input, so its " +
				"result can depend on where the tree lives. ? and * match one character, not one byte.",
			"--debug-filter lists the same paths as the reference, sorted; the reference lists them in " +
				"the order its scanner reads the directories.",
			"Builds without cgo (make build-static) encode zstd and lzma in pure Go: zstd levels below 1 " +
				"all use the Go encoder's fastest level (level 1), zstd:long and lzma:extreme have no effect, " +
				"and the lzma options mode, mf, nice and depth are refused with an error; lzma:binary works.",
		}},
	},
	SeeAlso: []string{"dwarfs(1)", "dwarfsck(1)", "dwarfsextract(1)"},
}

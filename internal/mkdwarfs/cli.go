package mkdwarfs

import "github.com/godwarfs/godwarfs/internal/cli"

func usagef(format string, args ...any) error { return cli.Usagef(format, args...) }

// options are mkdwarfs's command line options; --help, --version and --man
// come from package cli.
var options = []cli.Option{
	{Long: "input", Short: "i", HasValue: true, Arg: "DIR", Help: "path to root directory, or a tar archive (- for standard input; see --input-format), or an image with --recompress, --rebuild-metadata, --change-block-size or --append"},
	{Long: "input-format", HasValue: true, Arg: "FMT", Default: "auto", Help: "what -i is: dir, tar (plain, or compressed with gzip, xz, zstd or bzip2, told by its first bytes), or auto (a directory, else a file with a tar header or a compression's magic; - is a tar)"},
	{Long: "tmpdir", HasValue: true, Arg: "DIR", Help: "where a compressed or piped tar input is decoded to (default: $TMPDIR or /tmp); the first 16 MiB stay in memory"},
	{Long: "input-list", HasValue: true, Arg: "FILE", Help: "file with the paths to include, one a line, or - for stdin: relative to -i DIR (default: the current directory), or absolute below it; includes devices and specials; not with -F"},
	{Long: "output", Short: "o", HasValue: true, Arg: "FILE", Help: "image output name, or - for stdout"},
	{Long: "force", Short: "f", Help: "overwrite an existing output image"},
	{Long: "sign", HasValue: true, Arg: "KEY_FILE", Help: "sign the output image, once written, with the SSH private key in KEY_FILE (unencrypted; ed25519, ecdsa or rsa), writing OUTPUT.sig; check it with dwarfsck --verify (see SIGNATURES in dwarfsck(1))"},
	{Long: "compress-level", Short: "l", HasValue: true, Arg: "N", Default: "7", Help: "compression level (0=fast, 9=best, see -H)"},
	cli.LogLevelOption(),
	{Long: "long-help", Short: "H", Help: "print full help including the level table and exit"},
	{Long: "block-size-bits", Short: "S", HasValue: true, Arg: "N", Default: "24", Help: "block size bits (size = 2^N bytes)"},
	{Long: "num-workers", Short: "N", HasValue: true, Arg: "N", Default: "2", Help: "number of compression workers"},
	{Long: "compress-niceness", HasValue: true, Arg: "N", Default: "5", Help: "raise the nice value of the compression threads by N (0 or less: leave it), so that scanning and segmenting, which feed them, get the CPU first"},
	{Long: "num-scanner-workers", HasValue: true, Arg: "N", Default: "num-workers", Help: "number of scanner (hashing) workers"},
	{Long: "num-segmenter-workers", HasValue: true, Arg: "N", Default: "num-workers", Help: "number of workers ordering files for the segmenter (nilsimsa clustering); segmenting itself is sequential"},
	{Long: "memory-limit", Short: "L", HasValue: true, Arg: "SIZE", Default: "auto", Help: "limit for block data waiting for compression or writing (e.g. 512m, 1g; auto: two blocks per worker)"},
	{Long: "order", HasValue: true, Arg: "[CAT::]MODE", Default: "nilsimsa", Help: "file data order: none (scan order, or the --input-list order), path, revpath, similarity, nilsimsa[:max-children=N][:max-cluster-size=N][:families=0|1] (defaults 16384 and 1; see NILSIMSA ORDER in the manual), or explicit:file=FILE (the paths in FILE first, in that order, then the rest)"},
	{Long: "max-similarity-size", HasValue: true, Arg: "SIZE", Help: "maximum file size to compute similarity for"},
	{Long: "file-hash", HasValue: true, Default: "xxh3-128", Help: "whole-file hash (none, xxh3-128, xxh3-64, md5, sha1, sha224, sha256, sha384, sha512, sha512-224, sha512-256, sha3-224, sha3-256, sha3-384, sha3-512)"},
	{Long: "progress", HasValue: true, Help: "progress mode (ascii, none, simple, unicode; default: unicode, or ascii outside a UTF-8 locale, on a terminal, else none)"},
	{Long: "no-progress", Help: "don't show progress"},
	{Long: "filter", Short: "F", HasValue: true, Arg: "RULE", Help: "add filter rule: '+ PATTERN' include, '- PATTERN' exclude, '. FILE' merge rules from FILE; first match wins (see FILTER RULES in the manual)"},
	{Long: "remove-empty-dirs", Help: "remove empty directories"},
	{Long: "continue-on-error", Help: "report unreadable inputs and go on, as the reference does by default: they are left out (stored empty when reading fails only while the data is packed), and the exit status is 2"},
	{Long: "max-lookback-blocks", Short: "B", HasValue: true, Arg: "[CAT::]N", Default: "1", Help: "how many of the most recent blocks to search for repeated segments, the one being filled included (1: only that one, 0: no segment search)"},
	{Long: "window-size", Short: "W", HasValue: true, Arg: "[CAT::]N", Default: "12", Help: "window size bits for block hashing (0 disables; --append defaults to 7)"},
	{Long: "window-step", Short: "w", HasValue: true, Arg: "[CAT::]N", Default: "3", Help: "window step (as right shift of size)"},
	{Long: "bloom-filter-size", HasValue: true, Arg: "[CAT::]N", Default: "4", Help: "bloom filter size (2^N*values bits, N at most 10, the filter at most 2^28 bits: 32 MiB)"},
	{Long: "compression", Short: "C", HasValue: true, Arg: "[CAT::]ALGO", Default: "zstd:level=22", Help: "block compression (null, zstd, lzma, lz4, lz4hc, brotli with :options); CAT,...::ALGO sets it for categories"},
	{Long: "schema-compression", HasValue: true, Default: "zstd:level=16", Help: "metadata schema compression"},
	{Long: "metadata-compression", HasValue: true, Default: "zstd:level=22", Help: "metadata compression"},
	{Long: "history-compression", HasValue: true, Default: "zstd:level=16", Help: "history compression"},
	{Long: "with-devices", Help: "include block and character devices"},
	{Long: "with-specials", Help: "include named fifos and sockets"},
	{Long: "no-sparse-files", Help: "don't store sparse files as sparse"},
	{Long: "hollow", Help: "store no file data: every file becomes a hole of its size, reading as zeros (not with --no-sparse-files; --file-hash=none skips reading the files)"},
	{Long: "header", HasValue: true, Arg: "FILE", Help: "prepend the image with the contents of this file"},
	{Long: "no-section-index", Help: "don't add a section index"},
	{Long: "no-history", Help: "don't add history"},
	{Long: "no-history-timestamps", Help: "don't add timestamps to the history"},
	{Long: "no-history-command-line", Help: "don't add the command line to the history"},
	{Long: "set-owner", HasValue: true, Arg: "UID", Help: "set owner (uid) for the whole file system"},
	{Long: "set-group", HasValue: true, Arg: "GID", Help: "set group (gid) for the whole file system"},
	{Long: "chmod", HasValue: true, Arg: "MODE", Help: "apply permission changes as chmod(1) (e.g. a+r,u-w; D or F in front: directories or other files only, e.g. Fa-x, D755), or norm for ug-st,=Xr (all readable, none writable)"},
	{Long: "no-create-timestamp", Help: "don't add a create timestamp"},
	{Long: "set-time", HasValue: true, Arg: "TIME", Help: "set timestamp for the whole file system (unix time or 'now')"},
	{Long: "keep-all-times", Help: "save atime and ctime in addition to mtime"},
	{Long: "time-resolution", HasValue: true, Arg: "RES", Help: "resolution of inode timestamps: sec, ms, us, ns, min, hour, day or seconds (default: 1s)"},
	{Long: "no-hardlink-table", Help: "don't add the hardlink count table"},
	{Long: "pack-metadata", Short: "P", HasValue: true, Default: "auto", Help: "pack metadata elements (auto, all, none, chunk_table, directories, shared_files, names, names_index, symlinks, symlinks_index, force, plain)"},
	{Long: "debug-filter", HasValue: true, Optional: true, Implicit: "all", Help: "show effect of filter rules without producing an image (all, excluded, excluded-files, files, included, included-files); paths are listed sorted"},
	// Accepted for command line compatibility; they have no effect here.
	{Long: "log-with-context", Help: "accepted, no effect"},
	{Long: "no-category-names", Help: "don't add category names (and category metadata) to the image"},
	{Long: "no-category-metadata", Help: "don't add category metadata to the image"},
	// Rewriting an existing image (-i IMAGE): see rewrite.go.
	{Long: "recompress", HasValue: true, Optional: true, Implicit: "all", Arg: "MODE", Help: "rewrite the image given with -i, recompressing all (default), block, metadata or none of its sections (compression from -C/--*-compression, else the -l level)"},
	{Long: "rebuild-metadata", Help: "with -i IMAGE: rebuild the metadata (applies -P, --set-owner, --set-group, --set-time, --chmod, --time-resolution (coarser only), --keep-all-times)"},
	{Long: "change-block-size", Help: "with -i IMAGE: re-chunk all file data into blocks of 2^S bytes (-S) and rebuild the metadata"},
	{Long: "recompress-categories", HasValue: true, Arg: "[!]CAT,...", Help: "with --recompress: only recompress blocks of these categories (a leading ! excludes them)"},
	{Long: "remove-header", Help: "with -i IMAGE: drop any header before the image"},
	{Long: "no-metadata-version-history", Help: "with --rebuild-metadata: don't record the previous metadata version"},
	{Long: "no-check", Help: "with -i IMAGE or --merge: skip the integrity check of the input and of rebuilt metadata"},
	// Growing images (see grow.go).
	{Long: "append", HasValue: true, Arg: "DIR", Help: "with -i IMAGE: add DIR's tree to the image, copying its blocks as they are; only data the image does not hold is compressed"},
	{Long: "append-at", HasValue: true, Arg: "PATH", Help: "with --append: put DIR's tree at PATH in the image (default: its entries join the root)"},
	{Long: "append-index-size", HasValue: true, Arg: "SIZE", Default: "1g", Help: "with --append: how much of the image's block data (its last blocks) is decoded and indexed so that new data can refer to matching segments in it; held in memory while segmenting (0: match whole files only)"},
	{Long: "merge", Help: "join the images given as arguments ([NAME=]IMAGE, files or URLs) into one, copying their blocks as they are; each tree goes to the directory NAME (default: the file name without .dwarfs)"},
	{Long: "merge-into-root", Help: "with --merge: put the trees of the images given without NAME= into the root"},
	{Long: "no-merge-dedup", Help: "with --merge: keep files of different images apart even when their contents are equal (without it, files of a size two images have are read and hashed, which decodes their blocks; no block is changed either way)"},
	{Long: "replace", Help: "with --append or --merge: a path in a later tree replaces the same path in an earlier one (default: an error, unless both are directories)"},
	// Categorizers (see CATEGORIZERS in the manual).
	{Long: "categorize", HasValue: true, Optional: true, Implicit: implicitCategorizers, Arg: "LIST", Help: "enable categorizers in the given order, the first to claim a file wins (binary, fits, hotness, incompressible, pcmaudio); without a list: fits,pcmaudio,binary,incompressible, with -C incompressible::null and the level's pcmaudio/waveform and fits/image settings unless set"},
	{Long: "hotness-list", HasValue: true, Arg: "FILE", Help: "with --categorize=hotness: file listing the hot files, one path a line relative to -i (a leading / is ignored; the dwarfs driver's -o analysis_file writes such a list); their data goes into the category hotness"},
	{Long: "incompressible-min-input-size", HasValue: true, Arg: "SIZE", Default: "256", Help: "minimum file size to check for incompressibility"},
	{Long: "incompressible-block-size", HasValue: true, Arg: "SIZE", Default: "1m", Help: "block size to use for zstd compression (and fragment size with --incompressible-fragments)"},
	{Long: "incompressible-fragments", Help: "generate individual incompressible fragments instead of categorizing whole files"},
	{Long: "incompressible-ratio", HasValue: true, Arg: "RATIO", Default: "0.99", Help: "compression ratio above which files or fragments are considered incompressible"},
	{Long: "incompressible-zstd-level", HasValue: true, Arg: "N", Default: "-1", Help: "zstd compression level for the incompressibility test (pure-Go builds use level 1 for levels below 1)"},
}

// Program describes mkdwarfs's command line, help and manual page.
func Program() *cli.Program {
	return &cli.Program{
		Name:    "mkdwarfs",
		Summary: "create a DwarFS image",
		Synopsis: []string{
			"-i DIR -o IMAGE [OPTIONS...]",
			"-i ARCHIVE.tar[.gz|.xz|.zst|.bz2]|- [--input-format=tar] -o IMAGE [OPTIONS...]",
			"--input-list FILE|- [-i DIR] -o IMAGE [OPTIONS...]",
			"-i IMAGE -o NEW --recompress[=MODE] | --rebuild-metadata | --change-block-size [OPTIONS...]",
			"-i IMAGE --append DIR [--append-at PATH] -o NEW [OPTIONS...]",
			"--merge [NAME=]IMAGE... [--merge-into-root] -o NEW [OPTIONS...]",
		},
		Options:  options,
		LongHelp: "long-help",
		MoreHelp: moreHelp,
		Exit: []cli.ExitStatus{
			{Code: cli.ExitOK, Meaning: "the image was written"},
			{Code: cli.ExitError, Meaning: "a usage error, or a failure; no image is left under the output name"},
			{Code: cli.ExitPartial, Meaning: "the image was written, but some inputs could not be read (--continue-on-error)"},
		},
		Manual: manual,
	}
}

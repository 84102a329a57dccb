package dwarfsextract

import "github.com/godwarfs/godwarfs/internal/cli"

// options are dwarfsextract's command line options; --help, --version and
// --man come from package cli.
var options = []cli.Option{
	{Long: "input", Short: "i", HasValue: true, Arg: "IMAGE", Help: "image file"},
	{Long: "output", Short: "o", HasValue: true, Arg: "PATH", Help: "output directory (default: the current directory), or archive file ('-' = stdout, the default) with --format"},
	{Long: "format", Short: "f", HasValue: true, Arg: "FMT", Help: "write an archive: tar (pax), gnutar, pax, ustar, zip, cpio (newc), or auto: from the output name (.tar, .tar.gz, .tgz, .tar.xz, .tar.zst, .zip, .cpio)"},
	{Long: "pattern", HasValue: true, Arg: "GLOB", Help: "only extract matching paths (repeatable, also as plain arguments; ** allowed, i: ignores case)"},
	{Long: "skip-devices", Help: "do not extract block and character devices"},
	{Long: "skip-specials", Help: "do not extract sockets and fifos"},
	{Long: "verify", HasValue: true, Arg: "SIGNERS_FILE", Help: "extract only an image signed by a key of SIGNERS_FILE (an ssh-keygen allowed signers file), with the signature in IMAGE.sig beside it (also for a URL) or --signature (see dwarfsck --sign); every block is checked against the signed digest as it is read, and one that differs fails its entries"},
	{Long: "signature", HasValue: true, Arg: "FILE|URL", Help: "with --verify: the signature file or URL (a local path, http://, https:// or s3://; default: IMAGE.sig beside the image, for s3://BUCKET/KEY the object KEY.sig)"},
	{Long: "image-offset", Short: "O", HasValue: true, Arg: "auto|N", Help: "image offset"},
	{Long: "stdout-progress", Help: "print progress lines to stdout"},
	{Long: "continue-on-error", Help: "warn about failed entries and go on"},
	{Long: "case-collision", HasValue: true, Arg: "skip|rename|error", Help: "on a target that folds letter case, entries whose names differ only in case from one already extracted: skip them with a warning (default, exit status 2), rename them NAME~2, NAME~3..., or refuse to extract"},
	{Long: "num-workers", Short: "n", HasValue: true, Arg: "N", Help: "worker threads (default 4)"},
	{Long: "num-disk-writers", HasValue: true, Arg: "N", Help: "files written to disk at once (default 0: the number of workers)"},
	cli.LogLevelOption(),
	{Long: "cache-size", Short: "s", HasValue: true, Arg: "SIZE", Help: "block cache size (default 512m)"},
}

// Program describes dwarfsextract's command line, help and manual page.
func Program() *cli.Program {
	return &cli.Program{
		Name:     "dwarfsextract",
		Summary:  "extract a DwarFS image",
		Synopsis: []string{"-i IMAGE [-o DIR] [OPTIONS...] [PATTERN...]", "-i IMAGE -f FORMAT [-o FILE|-] [OPTIONS...] [PATTERN...]"},
		Options:  options,
		Exit: []cli.ExitStatus{
			{Code: cli.ExitOK, Meaning: "everything was extracted"},
			{Code: cli.ExitError, Meaning: "a usage error, an unreadable image, or a failed extraction"},
			{Code: cli.ExitPartial, Meaning: "the extraction finished, but some entries failed (--continue-on-error) or were left out because the target cannot hold their names"},
		},
		Manual: manual,
	}
}

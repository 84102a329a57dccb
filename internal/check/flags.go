package check

import (
	"strings"

	"github.com/godwarfs/godwarfs/internal/cli"
)

// options are dwarfsck's command line options; --help, --version and --man
// come from package cli.
var options = []cli.Option{
	{Long: "input", Short: "i", HasValue: true, Arg: "IMAGE", Help: "image file"},
	{Long: "detail", Short: "d", HasValue: true, Arg: "N", Help: "detail level (0..6, default 2)"},
	{Long: "json", Short: "j", Help: "print a JSON summary"},
	{Long: "list", Short: "l", Help: "list all paths"},
	{Long: "check-integrity", Help: "verify SHA-512/256 of every section"},
	{Long: "no-check", Help: "skip the xxh3 check of all sections"},
	{Long: "print-header", Short: "H", Help: "write the image's prefix to stdout"},
	{Long: "checksum", HasValue: true, Arg: "ALGO", Help: "print file digests (" + strings.Join(algoNames(), ", ") + ")"},
	{Long: "export-metadata", HasValue: true, Arg: "FILE", Help: "write the metadata as decoded (not normalised) as JSON to FILE (- for stdout) and exit"},
	{Long: "image-offset", Short: "O", HasValue: true, Arg: "auto|N", Help: "image offset"},
	cli.LogLevelOption,
}

// Program describes dwarfsck's command line, help and manual page.
func Program() *cli.Program {
	return &cli.Program{
		Name:     "dwarfsck",
		Summary:  "check a DwarFS image and show information about it",
		Synopsis: []string{"[OPTIONS...] IMAGE", "-i IMAGE [OPTIONS...]"},
		Options:  options,
		Exit: []cli.ExitStatus{
			{Code: cli.ExitOK, Meaning: "the image is intact (or the requested information was printed)"},
			{Code: cli.ExitError, Meaning: "a usage error, an unreadable image, or a failed check"},
			{Code: cli.ExitPartial, Meaning: "--print-header on an image that has no header"},
		},
		Manual: manual,
	}
}

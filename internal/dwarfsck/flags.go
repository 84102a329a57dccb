package dwarfsck

import (
	"strconv"
	"strings"

	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/ociartifact"
)

// options are dwarfsck's command line options; --help, --version and --man
// come from package cli.
var options = []cli.Option{
	{Long: "input", Short: "i", HasValue: true, Arg: "IMAGE", Help: "image file"},
	{Long: "detail", Short: "d", HasValue: true, Arg: "N|FEATURES", Default: "2",
		Help: "detail level (0 to " + strconv.Itoa(MaxDetail) + "), or a comma-separated list of features: " + strings.Join(implementedNames(), ", ")},
	{Long: "quiet", Short: "q", Help: "print nothing unless an error occurs"},
	{Long: "verbose", Short: "v", Help: "with --list: mode, owner, size and mtime of each entry"},
	{Long: "json", Short: "j", Help: "print the summary as JSON"},
	{Long: "list", Short: "l", Help: "list all paths instead of the summary"},
	{Long: "checksum", HasValue: true, Arg: "ALGO", Help: "print a digest of every file instead of the summary (" + strings.Join(algoNames(), ", ") + ")"},
	{Long: "check-integrity", Help: "verify the SHA-512/256 of every section"},
	{Long: "no-check", Help: "skip the xxh3 check of all sections and the full check of the metadata (it is checked as for mounting: each directory when read)"},
	{Long: "sign", HasValue: true, Arg: "KEY_FILE", Help: "sign the image with the SSH private key in KEY_FILE (unencrypted; ed25519, ecdsa or rsa), writing IMAGE.sig (or --signature), and exit; see SIGNATURES"},
	{Long: "verify", HasValue: true, Arg: "SIGNERS_FILE", Help: "check the image's signature (IMAGE.sig beside it, also for a URL, or --signature) against SIGNERS_FILE, an ssh-keygen allowed signers file, then every section against the signed digest, and exit"},
	{Long: "signature", HasValue: true, Arg: "FILE|URL", Help: "with --sign or --verify: the signature file, or for --verify its URL (default: IMAGE.sig beside the image, for s3://BUCKET/KEY the object KEY.sig; --verify also takes an http://, https:// or s3:// URL)"},
	{Long: "push", HasValue: true, Arg: "docker://REGISTRY/REPO:TAG", Help: "check every section's SHA-512/256 of the local image, then push it to a container registry as an OCI artifact (media type " + ociartifact.MediaType + "; credentials from the docker or podman auth files), with its signature (IMAGE.sig if it exists, or --signature) as TAG.sig, and exit; see REGISTRIES"},
	{Long: "print-signed-digest", Help: "write the digest a signature covers (binary) to stdout and exit, e.g. for ssh-keygen -Y sign or -Y verify"},
	{Long: "print-header", Short: "H", Help: "write the image's header (the data before it) to stdout and exit"},
	{Long: "export-metadata", HasValue: true, Arg: "FILE", Help: "write the metadata as decoded (not normalised) as JSON to FILE (- for stdout) and exit"},
	{Long: "image-offset", Short: "O", HasValue: true, Arg: "auto|N", Default: "auto", Help: "image offset in bytes"},
	{Long: "num-workers", Short: "n", HasValue: true, Arg: "N", Default: "2", Help: "block decompression workers"},
	{Long: "cache-size", Short: "s", HasValue: true, Arg: "SIZE", Default: "512m", Help: "block cache size"},
	cli.LogLevelOption(),
}

// implementedNames are the -d features godwarfs shows.
func implementedNames() []string {
	var names []string
	for i, n := range featureNames {
		if implemented&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return names
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

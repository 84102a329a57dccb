package dwarfsextract

import (
	"context"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/imagesig"
	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/glob"
	_ "github.com/godwarfs/godwarfs/source/remote" // images at http(s)://, s3:// and docker://
)

// Tool is dwarfsextract for the commands: interrupted, it removes what it
// was writing.
var Tool = cli.Tool{Name: "dwarfsextract", Main: Main, CancelOnSignal: true}

// Main runs dwarfsextract with the command line args (args[0] is the
// program name) and returns the exit status: cli.ExitPartial when some
// entries failed under --continue-on-error. It stops when ctx is done:
// what was being written is removed, so an interrupted run leaves only
// complete entries under their names.
func Main(ctx context.Context, args []string, stdio cli.Stdio) int {
	args = args[min(1, len(args)):]
	stdout, stderr := stdio.Out, stdio.Err
	tool := Program()
	res, code, done := tool.Parse(args, stdout, stderr)
	if done {
		return code
	}
	usage := func(err error) int { return tool.Fail(stderr, err) }
	var err error
	img := res.Get("input", "")
	if img == "" {
		return usage(cli.Missing("input"))
	}
	cfg := Config{
		Output: res.Get("output", ""),
		Format: res.Get("format", ""),
		// Plain arguments are patterns too, as with the reference.
		Patterns:        append(res.All("pattern"), res.Args...),
		ContinueOnError: res.Has("continue-on-error"),
		SkipDevices:     res.Has("skip-devices"),
		SkipSpecials:    res.Has("skip-specials"),
		Workers:         4,
		Stdout:          stdout,
		Stderr:          stderr,
		Owners:          os.Geteuid() == 0,
	}
	switch cfg.CaseCollision = res.Get("case-collision", CaseSkip); cfg.CaseCollision {
	case CaseSkip, CaseRename, CaseError:
	default:
		return usage(cli.Usagef("invalid --case-collision %q (skip, rename or error)", cfg.CaseCollision))
	}
	if cfg.Format != "" {
		if _, err := resolveFormat(cfg.Format, cfg.Output); err != nil {
			return usage(cli.Usagef("%v", err))
		}
		if cfg.Output == "" {
			cfg.Output = "-"
		}
	} else if cfg.Output == "-" {
		return usage(cli.Usagef("'-o -' (standard output) needs an archive --format"))
	} else if cfg.Output == "" {
		cfg.Output = "." // as the reference: the current directory
	}
	opts := godwarfs.Options{}
	if opts.ImageOffset, err = res.ImageOffset(); err != nil {
		return usage(err)
	}
	// ImageOffset is -1 for --image-offset=auto; an explicit 0 is exact.
	opts.ExactOffset = opts.ImageOffset == 0
	if n, ok, err := res.Int("num-workers", 1, 1024); err != nil {
		return usage(err)
	} else if ok {
		cfg.Workers, opts.Workers = n, n
	}
	if n, ok, err := res.Size("cache-size", false); err != nil {
		return usage(err)
	} else if ok {
		opts.CacheSize = n
	}
	if n, ok, err := res.Int("num-disk-writers", 0, 1024); err != nil {
		return usage(err)
	} else if ok {
		cfg.DiskWriters = n
	}
	lvl, err := res.LogLevel()
	if err != nil {
		return usage(err)
	} else if lvl < cli.LogWarn {
		cfg.Stderr = io.Discard // warnings: entries skipped with --continue-on-error, no match
	}
	if cfg.DiskWriters > 0 && cfg.Format != "" && lvl >= cli.LogInfo {
		fmt.Fprintln(stderr, "dwarfsextract: --num-disk-writers is only used when extracting to disk")
	}
	if _, err := glob.CompileAll(cfg.Patterns); err != nil {
		return usage(cli.Usagef("%v", err))
	}
	var prog *Progress
	if res.Has("stdout-progress") {
		if cfg.Format != "" && cfg.Output == "-" {
			return usage(cli.Usagef("option '--stdout-progress' cannot be used while writing the archive to stdout"))
		}
		prog = &Progress{Lines: stdout}
	}
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if prog == nil {
			prog = &Progress{}
		}
		prog.Term = stderr
	}
	cfg.Progress = prog

	if opts.Verify, err = verifyOptions(res); err != nil {
		return tool.Fail(stderr, err)
	}
	im, err := godwarfs.Open(img, &opts)
	if err != nil {
		return tool.Fail(stderr, err)
	}
	if s := im.Signer(); s != nil && lvl >= cli.LogInfo {
		fmt.Fprintf(stderr, "dwarfsextract: %s: %s\n", img, s)
	}
	defer im.Close()
	st, err := ExtractContext(ctx, im, cfg)
	if err != nil && ctx.Err() != nil {
		fmt.Fprintln(stderr, "dwarfsextract: interrupted; entries not finished were removed")
		return cli.ExitError
	}
	if err != nil {
		return tool.Fail(stderr, err)
	}
	if st.Errors > 0 {
		fmt.Fprintf(stderr, "dwarfsextract: %s: %d entries could not be extracted\n", img, st.Errors)
		return cli.ExitPartial
	}
	return cli.ExitOK
}

// verifyOptions reads the allowed signers file --verify names; the
// signature is read by the image's open from --signature (a path or URL)
// or IMAGE.sig beside the image, wherever it is stored.
func verifyOptions(res *cli.Result) (*godwarfs.Verify, error) {
	allowed, ok := res.Lookup("verify")
	if !ok {
		if res.Has("signature") {
			return nil, cli.Usagef("option '--signature' needs '--verify'")
		}
		return nil, nil
	}
	as, err := imagesig.ReadAllowedSigners(allowed)
	if err != nil {
		return nil, err
	}
	return &godwarfs.Verify{AllowedSigners: as, SignatureFile: res.Get("signature", "")}, nil
}

package extract

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/term"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/check"
	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/glob"
)

var options = []cli.Option{
	{Long: "input", Short: "i", HasValue: true, Arg: "IMAGE", Help: "image file"},
	{Long: "output", Short: "o", HasValue: true, Arg: "PATH", Help: "output directory, or archive file ('-' = stdout) with --format"},
	{Long: "format", Short: "f", HasValue: true, Arg: "FMT", Help: "write an archive: tar, gnutar, pax, ustar"},
	{Long: "pattern", HasValue: true, Arg: "GLOB", Help: "only extract matching paths (repeatable, ** allowed)"},
	{Long: "image-offset", Short: "O", HasValue: true, Arg: "auto|N", Help: "image offset"},
	{Long: "stdout-progress", Help: "print progress lines to stdout"},
	{Long: "continue-on-error", Help: "warn about failed entries and go on"},
	{Long: "num-workers", Short: "n", HasValue: true, Arg: "N", Help: "worker threads (default 4)"},
	{Long: "cache-size", Short: "s", HasValue: true, Arg: "SIZE", Help: "block cache size (default 512m)"},
	{Long: "help", Short: "h", Help: "show this help"},
}

// Main runs dwarfsextract with args (without the program name).
func Main(args []string, stdout, stderr io.Writer) int {
	usage := func(msg string) int {
		fmt.Fprintf(stderr, "dwarfsextract: %s\nUsage: dwarfsextract -i IMAGE -o DIR [options]\n", msg)
		return check.ExitUsage
	}
	res, err := cli.Parse(options, args)
	if err != nil {
		return usage(err.Error())
	}
	if res.Has("help") {
		fmt.Fprintf(stdout, "Usage: dwarfsextract -i IMAGE -o DIR [options]\n       dwarfsextract -i IMAGE -f FORMAT [-o FILE|-]\n\nOptions:\n%s", cli.Usage(options))
		return check.ExitOK
	}
	img := res.Get("input", "")
	if img == "" || len(res.Args) > 0 {
		return usage("expected -i IMAGE and no positional arguments")
	}
	cfg := Config{
		Output:          res.Get("output", ""),
		Format:          res.Get("format", ""),
		Patterns:        res.All("pattern"),
		ContinueOnError: res.Has("continue-on-error"),
		Workers:         4,
		Stdout:          stdout,
		Stderr:          stderr,
		Owners:          os.Geteuid() == 0,
	}
	if cfg.Format != "" {
		if _, err := TarFormat(cfg.Format); err != nil {
			return usage(err.Error())
		}
		if cfg.Output == "" {
			cfg.Output = "-"
		}
	} else if cfg.Output == "" || cfg.Output == "-" {
		return usage("-o DIR is required without --format")
	}
	opts := godwarfs.DefaultOptions()
	if opts.ImageOffset, err = check.ParseOffset(res.Get("image-offset", "auto")); err != nil {
		return usage(err.Error())
	}
	if v := res.Get("num-workers", ""); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return usage(fmt.Sprintf("invalid worker count %q", v))
		}
		cfg.Workers, opts.Workers = n, n
	}
	if v := res.Get("cache-size", ""); v != "" {
		if opts.CacheSize, err = cli.ParseSize(v); err != nil || opts.CacheSize == 0 {
			return usage(fmt.Sprintf("invalid cache size %q", v))
		}
	}
	if _, err := glob.CompileAll(cfg.Patterns); err != nil {
		return usage(err.Error())
	}
	var prog *Progress
	if res.Has("stdout-progress") {
		if cfg.Format != "" && cfg.Output == "-" {
			return usage("--stdout-progress cannot be used while writing the archive to stdout")
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

	im, err := godwarfs.Open(img, &opts)
	if err != nil {
		fmt.Fprintf(stderr, "dwarfsextract: %v\n", err)
		return check.ExitImage
	}
	defer im.Close()
	st, err := Extract(im, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "dwarfsextract: %v\n", err)
		return check.ExitImage
	}
	if st.Errors > 0 {
		fmt.Fprintf(stderr, "dwarfsextract: %s: %d entries could not be extracted\n", img, st.Errors)
	}
	return check.ExitOK
}

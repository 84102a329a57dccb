package mkdwarfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"

	"golang.org/x/term"

	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/writer"
)

const recompressHelp = `
Rewriting an existing image (mkdwarfs -i OLD.dwarfs -o NEW.dwarfs ...):
  --recompress[=all|block|metadata|none] re-encodes the selected sections;
  block data uses -C, metadata --metadata-compression, schema and history
  --schema-compression / --history-compression; options not given come from
  the -l level (default 7). --rebuild-metadata decodes and re-encodes the
  metadata, applying -P, --set-owner, --set-group, --set-time, --chmod,
  --time-resolution (coarsening only) and --keep-all-times (without it only
  mtimes are kept). --change-block-size re-chunks all file data into blocks
  of 2^S bytes (-S, default from the level) and rebuilds the metadata; the
  new blocks use -C, or the input's first block's algorithm. Sections that
  are not recompressed but must be re-encoded keep their algorithm (with
  default parameters). The output is always a v2.5 image; -o - writes it
  to standard output.
`

// isRecompress reports whether the command line rewrites an image.
func isRecompress(p *cli.Result) bool {
	return p.Has("recompress") || p.Has("rebuild-metadata") || p.Has("change-block-size")
}

// recompressOptions fills cfg.Recompress from the parsed command line;
// cfg already holds the level defaults overridden by explicit options.
func recompressOptions(cfg *Config, p *cli.Result) error {
	if cfg.DebugFilter != "" {
		return usagef("--debug-filter cannot be combined with --recompress, --rebuild-metadata or --change-block-size")
	}
	if cfg.Build.InputList != nil {
		return usagef("--input-list cannot be combined with --recompress, --rebuild-metadata or --change-block-size")
	}
	if st, err := os.Stat(cfg.Build.Input); err == nil && st.IsDir() {
		return usagef("input %s is a directory; --recompress, --rebuild-metadata and --change-block-size need an image (-i IMAGE)", cfg.Build.Input)
	}
	mode := "none"
	if v, ok := p.Lookup("recompress"); ok {
		switch v {
		case "all", "block", "metadata", "none":
			mode = v
		default:
			return usagef("invalid --recompress mode %q (all, block, metadata, none)", v)
		}
	}
	if !p.Has("recompress") && p.Has("compression") && p.Has("change-block-size") {
		mode = "block" // re-chunked blocks are encoded with -C
	}
	blocks := mode == "all" || mode == "block"
	meta := mode == "all" || mode == "metadata"
	for _, c := range []struct {
		name string
		ok   bool
	}{{"compression", blocks}, {"metadata-compression", meta}, {"schema-compression", meta}, {"history-compression", meta}} {
		if p.Has(c.name) && !c.ok {
			return usagef("--%s has no effect with --recompress=%s", c.name, mode)
		}
	}
	rebuild := p.Has("rebuild-metadata")
	if !rebuild {
		for _, n := range []string{"pack-metadata", "set-owner", "set-group", "set-time", "chmod", "time-resolution", "keep-all-times", "no-metadata-version-history", "no-category-names", "no-category-metadata"} {
			if p.Has(n) {
				return usagef("--%s needs --rebuild-metadata when rewriting an image", n)
			}
		}
	}
	o := cfg.Build
	ro := &writer.RewriteOptions{
		Target:                   cfg.target(nil),
		Input:                    o.Input,
		Mode:                     mode,
		RebuildMetadata:          rebuild,
		RemoveHeader:             p.Has("remove-header"),
		NoMetadataVersionHistory: p.Has("no-metadata-version-history"),
		NoCheck:                  p.Has("no-check"),
		Now:                      o.Now,
	}
	ro.BlockCompression, ro.MetadataCompression, ro.SchemaCompression, ro.HistoryCompression = "", "", "", ""
	// cfg.Compression etc. are the explicit option if given, else the
	// level's default; the library only applies them to the sections the
	// mode selects ("" would keep the stored bytes).
	if blocks {
		ro.BlockCompression = cfg.Compression
	}
	if meta {
		ro.MetadataCompression = cfg.MetaComp
		ro.SchemaCompression = cfg.SchemaComp
		ro.HistoryCompression = cfg.HistoryComp
	}
	if v, ok := p.Lookup("recompress-categories"); ok {
		if !blocks {
			return usagef("--recompress-categories needs --recompress=all or --recompress=block")
		}
		neg := strings.HasPrefix(v, "!")
		for _, c := range strings.Split(strings.TrimPrefix(v, "!"), ",") {
			if c == "" || c == "!" {
				return usagef("invalid --recompress-categories %q", v)
			}
			if neg && !strings.HasPrefix(c, "!") {
				c = "!" + c
			}
			ro.Categories = append(ro.Categories, c)
		}
	}
	if p.Has("change-block-size") {
		ro.ChangeBlockSizeBits = o.BlockSizeBits
	} else if p.Has("block-size-bits") {
		return usagef("-S/--block-size-bits needs --change-block-size when rewriting an image")
	}
	if rebuild {
		// What the command line leaves unset (-P, --time-resolution)
		// keeps the image's value.
		ro.Rebuild = o.Policy
	}
	cfg.Rewrite = ro
	return nil
}

// mainRewrite runs a rewrite and returns the exit status.
func mainRewrite(ctx context.Context, cfg *Config, stdout, stderr io.Writer) int {
	ro := *cfg.Rewrite
	ro.Stdout = stdout
	clear := func() {}
	switch fd := terminalFd(stderr); {
	case cfg.Progress == "simple":
		ro.Progress = func(p writer.Progress) { fmt.Fprintln(stderr, p.Message) }
	case (cfg.Progress == "ascii" || cfg.Progress == "unicode") && fd >= 0:
		// On a terminal the messages replace each other on one line.
		var mu sync.Mutex
		ro.Progress = func(p writer.Progress) {
			width := 80
			if w, _, err := term.GetSize(fd); err == nil && w > 0 {
				width = w
			}
			mu.Lock()
			defer mu.Unlock()
			io.WriteString(stderr, "\r"+fit(p.Message, width-1)+"\033[K")
		}
		clear = func() { io.WriteString(stderr, "\r\033[K") }
	}
	defer collectOften()()
	err := writer.Rewrite(ctx, ro)
	clear()
	switch {
	case err == nil:
		if err := signOutput(cfg, nil, stderr); err != nil {
			return Program().Fail(stderr, err)
		}
		return cli.ExitOK
	case ctx.Err() != nil:
		fmt.Fprintln(stderr, "mkdwarfs: interrupted, no image written")
		return cli.ExitError
	case errors.Is(err, fs.ErrExist):
		return Program().Fail(stderr, fmt.Errorf("%w (use -f to overwrite)", err))
	case errors.Is(err, writer.ErrUsage), errors.Is(err, writer.ErrSameFile):
		return Program().Fail(stderr, &cli.UsageError{Msg: err.Error()})
	}
	return Program().Fail(stderr, err)
}

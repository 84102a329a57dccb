package mkdwarfs

import (
	"context"
	"io"
	"os"
	"strings"

	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/source/s3source"
	"github.com/godwarfs/godwarfs/writer"
)

const growHelp = `
Growing images without recompressing them:
  mkdwarfs -i OLD.dwarfs --append DIR [--append-at PATH] -o NEW.dwarfs
    adds DIR's tree to OLD's, at PATH (default: DIR's entries join the
    root). OLD's blocks are copied as they are; files OLD already holds
    (same whole-file hash) are stored once, the rest are ordered,
    segmented (also against OLD's last --append-index-size of data) and
    compressed into new blocks (-C, -l, --order, -F, ...).
  mkdwarfs --merge [NAME=]A.dwarfs [NAME=]B.dwarfs ... -o OUT.dwarfs
    joins images, copying every block as it is; each image's tree goes to
    the directory NAME (default: its file name without .dwarfs, or with
    --merge-into-root the root).
  A path in two trees is an error naming it unless both are directories
  (their entries merge) or --replace is given (the later one wins).
  Images may be files or http(s):// or s3:// URLs; an s3:// URL may be
  a pattern (s3://BUCKET/shards/shard-*.dwarfs) over the listing. The metadata is made
  with the (first) image's block size, time resolution, packing and
  times unless -S, --time-resolution, -P, --keep-all-times, ... are given.
`

// isGrow reports whether the command line appends to or merges images.
func isGrow(p *cli.Result) bool {
	return p.Has("append") || p.Has("merge") || p.Has("append-at") || p.Has("merge-into-root") || p.Has("append-index-size") || p.Has("no-merge-dedup") || isUpdate(p)
}

// growOptions fills cfg.Append or cfg.Merge from the parsed command line.
func growOptions(cfg *Config, p *cli.Result) error {
	for _, n := range []string{"recompress", "rebuild-metadata", "change-block-size", "recompress-categories", "remove-header", "no-metadata-version-history", "debug-filter"} {
		if p.Has(n) {
			if p.Has("merge") {
				return cli.Conflict("merge", n)
			}
			if u := updateMode(p); u != "" {
				return cli.Conflict(u, n)
			}
			return cli.Conflict("append", n)
		}
	}
	if p.Has("append-at") && !p.Has("append") {
		return usagef("--append-at needs --append")
	}
	if p.Has("append-index-size") && !p.Has("append") {
		return usagef("--append-index-size needs --append")
	}
	if p.Has("merge-into-root") && !p.Has("merge") {
		return usagef("--merge-into-root needs --merge")
	}
	if p.Has("no-merge-dedup") && !p.Has("merge") {
		return usagef("--no-merge-dedup needs --merge")
	}
	// The image's options (dedup.ImageOptions) stay unless these are
	// given.
	overrides := map[string]func(dst, src *dedup.Options){
		"block-size-bits":     func(d, s *dedup.Options) { d.BlockSizeBits = s.BlockSizeBits },
		"time-resolution":     func(d, s *dedup.Options) { d.TimeResolution = s.TimeResolution },
		"keep-all-times":      func(d, s *dedup.Options) { d.KeepAllTimes = s.KeepAllTimes },
		"no-hardlink-table":   func(d, s *dedup.Options) { d.NoHardlinks = s.NoHardlinks },
		"pack-metadata":       func(d, s *dedup.Options) { d.Pack = s.Pack },
		"no-create-timestamp": func(d, s *dedup.Options) { d.NoCreateTime = s.NoCreateTime },
	}
	// The closures run at build time, when cfg.Build has its loggers.
	mergeImage := func(img *dedup.Options) {
		for name, set := range overrides {
			if p.Has(name) {
				set(img, &cfg.Build)
			}
		}
	}
	t := cfg.target(nil)
	if isUpdate(p) {
		return updateOptions(cfg, p, t, mergeImage)
	}
	if p.Has("merge") {
		if p.Has("input") {
			return cli.Conflict("merge", "input")
		}
		if p.Has("input-list") {
			return cli.Conflict("merge", "input-list")
		}
		if len(p.Args) == 0 {
			return usagef("--merge needs the images to merge")
		}
		mo := &writer.MergeOptions{Target: t, Replace: p.Has("replace"), NoCheck: p.Has("no-check"), Header: cfg.Header,
			KeepApart: p.Has("no-merge-dedup")}
		cfg.mergeIntoRoot = p.Has("merge-into-root")
		for _, a := range p.Args {
			in := writer.MergeInput{Image: a}
			name, img, named := explicitName(a)
			if named {
				in = writer.MergeInput{Image: img, At: name}
			} else if !cfg.mergeIntoRoot {
				in.At = writer.DefaultMergeAt(a)
			}
			// s3://BUCKET/PREFIX/shard-*.dwarfs: expanded when the merge
			// runs, from the listing.
			if s3source.HasGlob(in.Image) {
				if cfg.mergeGlobs == nil {
					cfg.mergeGlobs = map[int]bool{}
				}
				cfg.mergeGlobs[len(mo.Inputs)] = named
			}
			mo.Inputs = append(mo.Inputs, in)
		}
		mo.Configure = func(o *dedup.Options) {
			mergeImage(o)
			given := &cfg.Build
			o.Policy = mergePolicy(o.Policy, given.Policy, p)
			o.Now, o.NoCategoryNames, o.NoCategoryMetadata = given.Now, given.NoCategoryNames, given.NoCategoryMetadata
			o.Log, o.Verbosef, o.Debugf, o.Tracef = given.Log, given.Verbosef, given.Debugf, given.Tracef
		}
		cfg.Merge = mo
		return nil
	}
	if len(p.Args) > 0 {
		return cli.Unexpected(p.Args[0])
	}
	if st, err := os.Stat(cfg.Build.Input); err == nil && st.IsDir() {
		return usagef("input %s is a directory; --append needs an image (-i IMAGE)", cfg.Build.Input)
	}
	dir, _ := p.Lookup("append")
	at, _ := p.Lookup("append-at")
	ao := &writer.AppendOptions{Target: t, Image: cfg.Build.Input, Input: dir, At: at,
		Replace: p.Has("replace"), NoCheck: p.Has("no-check"), MemoryLimit: cfg.MemLimit, Header: cfg.Header}
	ao.Configure = func(o *dedup.Options) {
		img := *o
		*o = cfg.Build // the scanning, ordering and segmenting options, loggers included
		o.Input = dir
		o.BlockSizeBits, o.TimeResolution, o.KeepAllTimes = img.BlockSizeBits, img.TimeResolution, img.KeepAllTimes
		o.NoHardlinks, o.Pack, o.NoCreateTime = img.NoHardlinks, img.Pack, img.NoCreateTime
		if !p.Has("window-size") {
			o.WindowBits = writer.AppendWindowBits
		}
		mergeImage(o)
	}
	if v, ok := p.Lookup("append-index-size"); ok {
		n, err := cli.ParseSize(v)
		if err != nil || n < 0 {
			return usagef("invalid --append-index-size %q", v)
		}
		ao.SegmentIndex = n
		if n == 0 {
			ao.SegmentIndex = -1
		}
	}
	cfg.Append = ao
	return nil
}

// mergePolicy applies the attribute options given on the command line.
func mergePolicy(img, given dedup.Policy, p *cli.Result) dedup.Policy {
	if p.Has("set-owner") {
		img.SetOwner = given.SetOwner
	}
	if p.Has("set-group") {
		img.SetGroup = given.SetGroup
	}
	if p.Has("set-time") {
		img.SetTime = given.SetTime
	}
	if p.Has("chmod") {
		img.Chmod = given.Chmod
	}
	return img
}

// explicitName splits a --merge argument NAME=IMAGE. NAME must not start
// with . or / and must not contain a colon, so that paths (./a=b.dwarfs)
// and URLs (s3://bucket/key?x=y) are taken whole.
func explicitName(arg string) (name, image string, ok bool) {
	name, image, ok = strings.Cut(arg, "=")
	if !ok || name == "" || image == "" || strings.ContainsAny(name[:1], "./") || strings.Contains(name, ":") {
		return "", "", false
	}
	return name, image, true
}

// runGrow appends or merges as cfg says.
func runGrow(ctx context.Context, cfg *Config, stdout io.Writer, progress func(writer.Progress)) (*Result, error) {
	if cfg.Update != nil {
		uo := *cfg.Update
		uo.Stdout, uo.Progress = stdout, progress
		return writer.Update(ctx, uo)
	}
	if cfg.Merge != nil {
		mo := *cfg.Merge
		mo.Stdout, mo.Progress = stdout, progress
		if err := expandMergeGlobs(ctx, cfg, &mo); err != nil {
			return nil, err
		}
		return writer.Merge(ctx, mo)
	}
	ao := *cfg.Append
	ao.Stdout, ao.Progress = stdout, progress
	return writer.Append(ctx, ao)
}

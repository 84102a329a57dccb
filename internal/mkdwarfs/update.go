package mkdwarfs

import (
	"os"
	"strconv"

	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/writer"
)

const updateHelp = `
Updating images:
  mkdwarfs -i OLD.dwarfs --update DIR -o NEW.dwarfs
    makes an image of DIR's tree. Files with the path, size and mtime
    they have in OLD (or its contents, with --update-check=hash) keep
    OLD's blocks, copied as they are; changed and new files are ordered,
    segmented (also against OLD's data) and compressed into new blocks.
    OLD's blocks that no file refers to any more are dropped.
  mkdwarfs -i OLD.dwarfs --apply-upper UPPER -o NEW.dwarfs
    applies an overlayfs upper directory (of a mount with OLD's tree as
    its lower layer, e.g. dwarfs OLD.dwarfs MNT -o upper=UPPER) the same
    way: whiteouts delete, opaque directories replace, other entries add
    or replace.
  The kept blocks' bytes that no file refers to are dead; above
  --max-dead percent of them (or with --compact) the blocks with dead
  data are rewritten. dwarfsck shows an image's dead bytes.
`

// isUpdate reports whether the command line updates an image.
func isUpdate(p *cli.Result) bool {
	return updateMode(p) != "" || p.Has("update-check") || p.Has("max-dead") || p.Has("compact")
}

// updateMode names the option that makes the command line an update
// ("" for none).
func updateMode(p *cli.Result) string {
	switch {
	case p.Has("update"):
		return "update"
	case p.Has("apply-upper"):
		return "apply-upper"
	}
	return ""
}

// updateOptions fills cfg.Update from the parsed command line; mergeImage
// applies the image options given on it.
func updateOptions(cfg *Config, p *cli.Result, t writer.Target, mergeImage func(*dedup.Options)) error {
	mode := updateMode(p)
	if mode == "" {
		for _, n := range []string{"update-check", "max-dead", "compact"} {
			if p.Has(n) {
				return usagef("--%s needs --update or --apply-upper", n)
			}
		}
	}
	for _, n := range []string{"append", "append-at", "merge", "merge-into-root", "no-merge-dedup", "replace"} {
		if p.Has(n) {
			return cli.Conflict(mode, n)
		}
	}
	if p.Has("update") && p.Has("apply-upper") {
		return cli.Conflict("update", "apply-upper")
	}
	if len(p.Args) > 0 {
		return cli.Unexpected(p.Args[0])
	}
	if st, err := os.Stat(cfg.Build.Input); err == nil && st.IsDir() {
		return usagef("input %s is a directory; --%s needs an image (-i IMAGE)", cfg.Build.Input, mode)
	}
	uo := &writer.UpdateOptions{Target: t, Image: cfg.Build.Input, NoCheck: p.Has("no-check"), MemoryLimit: cfg.MemLimit,
		Header: cfg.Header, MaxDead: writer.DefaultMaxDead, Compact: p.Has("compact")}
	uo.Input, _ = p.Lookup("update")
	uo.Upper, _ = p.Lookup("apply-upper")
	if v, ok := p.Lookup("update-check"); ok {
		switch v {
		case "path":
		case "hash":
			uo.Hash = true
		default:
			return usagef("invalid --update-check %q (path or hash)", v)
		}
	}
	if v, ok := p.Lookup("max-dead"); ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 100 {
			return usagef("invalid --max-dead %q (a percentage, 0 to 100)", v)
		}
		uo.MaxDead = f / 100
		if f == 100 {
			uo.MaxDead = -1
		}
	}
	if v, ok := p.Lookup("append-index-size"); ok {
		n, err := cli.ParseSize(v)
		if err != nil || n < 0 {
			return usagef("invalid --append-index-size %q", v)
		}
		uo.SegmentIndex = n
		if n == 0 {
			uo.SegmentIndex = -1
		}
	}
	dir := uo.Input
	uo.Configure = func(o *dedup.Options) {
		img := *o
		*o = cfg.Build // the scanning, ordering and segmenting options, loggers included
		o.Input = dir
		o.BlockSizeBits, o.TimeResolution, o.KeepAllTimes = img.BlockSizeBits, img.TimeResolution, img.KeepAllTimes
		o.NoHardlinks, o.Pack, o.NoCreateTime = img.NoHardlinks, img.Pack, img.NoCreateTime
		if !p.Has("window-size") && !p.Has("compact") {
			// Compaction segments most of the data again: a build's window.
			o.WindowBits = writer.AppendWindowBits
		}
		mergeImage(o)
	}
	cfg.Update = uo
	return nil
}

package mkimage

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// usageError makes Main exit with status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// optSpec describes one command line option.
type optSpec struct {
	long     string
	short    byte
	arg      bool   // takes a value
	implicit string // value used for --opt without =value (optional-arg options)
	optional bool
	// unsupported options exist in the reference but not here.
	unsupported bool
	help        string
	argName     string
	def         string
}

var optSpecs = []optSpec{
	{long: "input", short: 'i', arg: true, argName: "DIR", help: "path to root directory (an image with --recompress, --rebuild-metadata or --change-block-size)"},
	{long: "input-list", arg: true, argName: "FILE", help: "file with paths relative to the root directory, or - for stdin"},
	{long: "output", short: 'o', arg: true, argName: "FILE", help: "image output name, or - for stdout"},
	{long: "force", short: 'f', help: "overwrite an existing output image"},
	{long: "compress-level", short: 'l', arg: true, argName: "N", def: "7", help: "compression level (0=fast, 9=best, see -H)"},
	{long: "log-level", arg: true, def: "info", help: "log level (error, warn, info, verbose, debug, trace)"},
	{long: "help", short: 'h', help: "print this help and exit"},
	{long: "long-help", short: 'H', help: "print full help including the level table and exit"},
	{long: "block-size-bits", short: 'S', arg: true, argName: "N", def: "24", help: "block size bits (size = 2^N bytes)"},
	{long: "num-workers", short: 'N', arg: true, argName: "N", def: "2", help: "number of compression workers"},
	{long: "num-scanner-workers", arg: true, argName: "N", def: "num-workers", help: "number of scanner (hashing) workers"},
	{long: "num-segmenter-workers", arg: true, argName: "N", help: "accepted for compatibility (segmenting is sequential)"},
	{long: "memory-limit", short: 'L', arg: true, argName: "SIZE", def: "auto", help: "limit for block data waiting for compression (e.g. 512m, 1g)"},
	{long: "order", arg: true, def: "nilsimsa", help: "file order (none, path, revpath, similarity, nilsimsa)"},
	{long: "max-similarity-size", arg: true, argName: "SIZE", help: "maximum file size to compute similarity for"},
	{long: "file-hash", arg: true, def: "xxh3-128", help: "whole-file hash (none, xxh3-128, xxh3-64, md5, sha1, sha224, sha256, sha384, sha512, sha512-224, sha512-256, sha3-224, sha3-256, sha3-384, sha3-512)"},
	{long: "progress", arg: true, def: "none", help: "progress mode (ascii, none, simple, unicode)"},
	{long: "no-progress", help: "don't show progress"},
	{long: "filter", short: 'F', arg: true, argName: "RULE", help: "add rsync-style filter rule ('- *.o', '+ dir/**'), first match wins"},
	{long: "remove-empty-dirs", help: "remove empty directories"},
	{long: "continue-on-error", help: "skip unreadable entries instead of failing (godwarfs extension)"},
	{long: "max-lookback-blocks", short: 'B', arg: true, argName: "N", def: "1", help: "how many blocks to scan for segments"},
	{long: "window-size", short: 'W', arg: true, argName: "N", def: "12", help: "window size bits for block hashing (0 disables)"},
	{long: "window-step", short: 'w', arg: true, argName: "N", def: "3", help: "window step (as right shift of size)"},
	{long: "bloom-filter-size", arg: true, argName: "N", def: "4", help: "bloom filter size (2^N*values bits)"},
	{long: "compression", short: 'C', arg: true, argName: "ALGO", def: "zstd:level=22", help: "block compression (null, zstd, lzma, lz4, lz4hc, brotli with :options)"},
	{long: "schema-compression", arg: true, def: "zstd:level=16", help: "metadata schema compression"},
	{long: "metadata-compression", arg: true, def: "zstd:level=22", help: "metadata compression"},
	{long: "history-compression", arg: true, def: "zstd:level=16", help: "history compression"},
	{long: "with-devices", help: "include block and character devices"},
	{long: "with-specials", help: "include named fifos and sockets"},
	{long: "no-sparse-files", help: "don't store sparse files as sparse"},
	{long: "header", arg: true, argName: "FILE", help: "prepend the image with the contents of this file"},
	{long: "no-section-index", help: "don't add a section index"},
	{long: "no-history", help: "don't add history"},
	{long: "no-history-timestamps", help: "don't add timestamps to the history"},
	{long: "no-history-command-line", help: "don't add the command line to the history"},
	{long: "set-owner", arg: true, argName: "UID", help: "set owner (uid) for the whole file system"},
	{long: "set-group", arg: true, argName: "GID", help: "set group (gid) for the whole file system"},
	{long: "chmod", arg: true, argName: "MODE", help: "apply permission changes (e.g. a+r,u-w, Fa-x, D755)"},
	{long: "no-create-timestamp", help: "don't add a create timestamp"},
	{long: "set-time", arg: true, argName: "TIME", help: "set timestamp for the whole file system (unix time or 'now')"},
	{long: "keep-all-times", help: "save atime and ctime in addition to mtime"},
	{long: "time-resolution", arg: true, argName: "RES", help: "resolution of inode timestamps: sec, ms, us, ns, min, hour, day or seconds (default: 1s)"},
	{long: "no-hardlink-table", help: "don't add the hardlink count table"},
	{long: "pack-metadata", short: 'P', arg: true, def: "auto", help: "pack metadata elements (auto, all, none, chunk_table, directories, shared_files, names, names_index, symlinks, symlinks_index, force, plain)"},
	{long: "debug-filter", arg: true, optional: true, implicit: "all", help: "show effect of filter rules without producing an image (all, excluded, excluded-files, files, included, included-files)"},
	{long: "man", help: "show the help text (no manual page is built in)"},
	// Accepted for command line compatibility; they have no effect here.
	{long: "log-with-context", help: "accepted, no effect"},
	{long: "compress-niceness", arg: true, help: "accepted, no effect"},
	{long: "no-category-names", help: "accepted, no effect (no categorizers)"},
	{long: "no-category-metadata", help: "accepted, no effect (no categorizers)"},
	// Rewriting an existing image (-i IMAGE): see recompress.go.
	{long: "recompress", arg: true, optional: true, implicit: "all", argName: "MODE", help: "rewrite the image given with -i, recompressing all (default), block, metadata or none of its sections (compression from -C/--*-compression, else the -l level)"},
	{long: "rebuild-metadata", help: "with -i IMAGE: rebuild the metadata (applies -P, --set-owner, --set-group, --set-time, --chmod, --time-resolution (coarser only), --keep-all-times)"},
	{long: "change-block-size", help: "with -i IMAGE: re-chunk all file data into blocks of 2^S bytes (-S) and rebuild the metadata"},
	{long: "recompress-categories", arg: true, argName: "[!]CAT,...", help: "with --recompress: only recompress blocks of these categories (a leading ! excludes them)"},
	{long: "remove-header", help: "with -i IMAGE: drop any header before the image"},
	{long: "no-metadata-version-history", help: "with --rebuild-metadata: don't record the previous metadata version"},
	{long: "no-check", help: "with -i IMAGE: skip the integrity check of the input and of rebuilt metadata"},
	// Reference features godwarfs does not implement: refused clearly.
	{long: "categorize", arg: true, optional: true, implicit: "fits,pcmaudio,binary,incompressible", unsupported: true},
	{long: "hollow", unsupported: true},
	{long: "hotness-list", arg: true, unsupported: true},
	{long: "incompressible-min-input-size", arg: true, unsupported: true},
	{long: "incompressible-block-size", arg: true, unsupported: true},
	{long: "incompressible-fragments", unsupported: true},
	{long: "incompressible-ratio", arg: true, unsupported: true},
	{long: "incompressible-zstd-level", arg: true, unsupported: true},
}

// parsed holds option values; multi-valued options keep every occurrence.
type parsed struct {
	vals map[string][]string
}

func (p *parsed) has(name string) bool { return len(p.vals[name]) > 0 }

func (p *parsed) get(name string) (string, bool) {
	v := p.vals[name]
	if len(v) == 0 {
		return "", false
	}
	return v[len(v)-1], true
}

func parseArgs(args []string) (*parsed, error) {
	p := &parsed{vals: map[string][]string{}}
	byLong := map[string]*optSpec{}
	byShort := map[byte]*optSpec{}
	for i := range optSpecs {
		s := &optSpecs[i]
		byLong[s.long] = s
		if s.short != 0 {
			byShort[s.short] = s
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				return nil, usagef("unexpected argument %q", args[i+1])
			}
			return p, nil
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			s, ok := byLong[name]
			if !ok {
				return nil, usagef("unrecognised option '--%s'", name)
			}
			if s.unsupported {
				return nil, usagef("option '--%s' is not supported by godwarfs mkdwarfs", name)
			}
			if s.optional && !hasVal {
				// Optional-value options never consume the next argument.
				p.vals[s.long] = append(p.vals[s.long], s.implicit)
				continue
			}
			if !s.arg {
				if hasVal {
					return nil, usagef("option '--%s' does not take a value", name)
				}
				p.vals[s.long] = append(p.vals[s.long], "")
				continue
			}
			if !hasVal {
				if i+1 >= len(args) {
					return nil, usagef("option '--%s' requires an argument", name)
				}
				i++
				val = args[i]
			}
			p.vals[s.long] = append(p.vals[s.long], val)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			// Bundled short flags (-fH) and attached values (-l7, -N4).
			for j := 1; j < len(a); j++ {
				s, ok := byShort[a[j]]
				if !ok {
					return nil, usagef("unrecognised option '-%c'", a[j])
				}
				if !s.arg {
					p.vals[s.long] = append(p.vals[s.long], "")
					continue
				}
				val := a[j+1:]
				if val == "" {
					if i+1 >= len(args) {
						return nil, usagef("option '-%c' requires an argument", a[j])
					}
					i++
					val = args[i]
				}
				p.vals[s.long] = append(p.vals[s.long], val)
				break
			}
		default:
			return nil, usagef("unexpected argument %q", a)
		}
	}
	return p, nil
}

// parseTimeRes returns a resolution in nanoseconds.
func parseTimeRes(s string) (int64, error) {
	switch s {
	case "ns", "nsec":
		return 1, nil
	case "us", "usec":
		return 1e3, nil
	case "ms", "msec":
		return 1e6, nil
	case "s", "sec", "1s":
		return 1e9, nil
	case "m", "min":
		return 60e9, nil
	case "h", "hour":
		return 3600e9, nil
	case "d", "day":
		return 86400e9, nil
	}
	t := strings.TrimSuffix(s, "s")
	v, err := strconv.ParseUint(t, 10, 32)
	if err != nil || v == 0 {
		return 0, errors.New("invalid time resolution " + strconv.Quote(s))
	}
	return int64(v) * 1e9, nil
}

package mountopts

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/cli"
)

// option is one -o option.
type option struct {
	name string
	// arg names the value in the help ("SIZE", "none|try|must"); a flag
	// has none and refuses one.
	arg string
	// optional options take a value or none (perfmon, perfmon=...).
	optional bool
	// def is the value Defaults applies and the help shows; for a flag,
	// "on" means Defaults sets it.
	def string
	// note is the default the help shows when it is not a value of the
	// option, e.g. one decided where the option is used.
	note string
	// help is the help text; "" shares the line of the option before,
	// as for the two spellings of a switch.
	help string
	// set applies a value ("" for a flag) to the options.
	set func(o *Options, val string) error
}

// into returns a setter that stores parse's result in the field field
// points to.
func into[T any](parse func(string) (T, error), field func(*Options) *T) func(*Options, string) error {
	return func(o *Options, v string) error {
		x, err := parse(v)
		if err != nil {
			return err
		}
		*field(o) = x
		return nil
	}
}

// str takes the value as it is.
func str(v string) (string, error) { return v, nil }

// flag returns a setter that stores on in the field field points to.
func flag(field func(*Options) *bool, on bool) func(*Options, string) error {
	return func(o *Options, _ string) error {
		*field(o) = on
		return nil
	}
}

// kernelFlag is a flag passed through to the kernel mount as it is.
func kernelFlag(name, help string) option {
	return option{name: name, help: help, set: func(o *Options, _ string) error {
		o.KernelFlags = append(o.KernelFlags, name)
		return nil
	}}
}

// oneOf parses one of the words in vals.
func oneOf[T ~string](vals ...T) func(string) (T, error) {
	return func(v string) (T, error) {
		for _, w := range vals {
			if v == string(w) {
				return w, nil
			}
		}
		words := make([]string, len(vals))
		for i, w := range vals {
			words[i] = string(w)
		}
		return "", fmt.Errorf("%q is not one of %s", v, strings.Join(words, ", "))
	}
}

func parseTidy(v string) (fusefs.TidyStrategy, error) {
	s, err := oneOf("none", "time", "swap")(v)
	if s == "none" {
		return fusefs.TidyNone, err
	}
	return fusefs.TidyStrategy(s), err
}

// parseSeqDetector maps 0 ("never prefetch") to the driver's -1.
func parseSeqDetector(v string) (int, error) {
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		return 0, err
	case n < 0:
		return 0, errors.New("must not be negative")
	case n == 0:
		return -1, nil
	}
	return n, nil
}

func parseDecRatio(v string) (float64, error) {
	r, err := strconv.ParseFloat(v, 64)
	if err == nil && (r < 0 || r > 1 || math.IsNaN(r)) {
		err = errors.New("must be between 0 and 1")
	}
	return r, err
}

func parseOffset(v string) (int64, error) {
	if v == "auto" {
		return -1, nil
	}
	return cli.ParseSize(v)
}

func parseID(v string) (*uint32, error) {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return nil, err
	}
	id := uint32(n)
	return &id, nil
}

func parseAllocator(v string) (string, error) {
	if v != "malloc" && v != "mmap" {
		return "", fmt.Errorf("no such block allocator: %q (malloc, mmap)", v)
	}
	return v, nil
}

var logLevels = []string{"error", "warn", "info", "verbose", "debug", "trace"}

func parseLogLevel(v string) (string, error) {
	for _, l := range logLevels {
		if v == l {
			return v, nil
		}
	}
	return "", fmt.Errorf("%q is not a log level", v)
}

func parseMaxThreads(v string) (int, error) {
	n, err := parsePositive(v)
	if err == nil && n > 100000 {
		err = errors.New("must be at most 100000")
	}
	return n, err
}

// checkIdleThreads checks max_idle_threads, libfuse's limit on idle
// worker threads. go-fuse keeps a fixed, small number of goroutines
// waiting for requests and lets the others end, so it has no effect.
func checkIdleThreads(_ *Options, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("not a number: %w", err)
	}
	if n < -1 {
		return errors.New("must be -1 (no limit) or more")
	}
	return nil
}

func noEffect(*Options, string) error { return nil }

// table is every -o option, in the order of the help.
var table = []option{
	{name: "cachesize", arg: "SIZE", def: "512m", help: "block cache size",
		set: into(cli.ParseSize, func(o *Options) *int64 { return &o.CacheSize })},
	{name: "blocksize", arg: "SIZE", def: "512k", help: "st_blksize / I/O size hint",
		set: into(cli.ParseSize, func(o *Options) *int64 { return &o.BlockSize })},
	{name: "readahead", arg: "SIZE", note: "a block per worker", help: "bytes to prefetch for sequential readers",
		set: into(cli.ParseSize, func(o *Options) *int64 { return &o.Readahead })},
	{name: "workers", arg: "N", def: "2", help: "decompression workers",
		set: into(parsePositive, func(o *Options) *int { return &o.Workers })},
	{name: "mlock", arg: "none|try|must", def: "none", help: "lock the process memory",
		set: into(oneOf(MlockNone, MlockTry, MlockMust), func(o *Options) *MlockMode { return &o.Mlock })},
	{name: "decratio", arg: "R", def: "0.8", help: "ratio to keep partially decompressed blocks",
		set: into(parseDecRatio, func(o *Options) *float64 { return &o.DecRatio })},
	{name: "offset", arg: "auto|N", def: "auto", help: "image offset in the file",
		set: into(parseOffset, func(o *Options) *int64 { return &o.ImageOffset })},
	{name: "imagesize", arg: "SIZE", note: "up to the end of the file", help: "image size in the file",
		set: into(cli.ParseSize, func(o *Options) *int64 { return &o.ImageSize })},
	{name: "enable_nlink", help: "report hard link counts",
		set: flag(func(o *Options) *bool { return &o.EnableNlink }, true)},
	{name: "readonly", help: "report no write permission bits (the mount itself is always read-only)",
		set: flag(func(o *Options) *bool { return &o.ReadOnly }, true)},
	{name: "case_insensitive", help: "look names up ignoring case; of names that differ only in case the first in byte order is found (each such collision is reported at mount)",
		set: flag(func(o *Options) *bool { return &o.CaseInsensitive }, true)},
	{name: "cache_image", help: "read the whole image into memory",
		set: flag(func(o *Options) *bool { return &o.CacheImage }, true)},
	{name: "no_cache_image", def: "on",
		set: flag(func(o *Options) *bool { return &o.CacheImage }, false)},
	{name: "cache_files", def: "on", help: "keep file data in the page cache",
		set: flag(func(o *Options) *bool { return &o.NoCacheFiles }, false)},
	{name: "no_cache_files",
		set: flag(func(o *Options) *bool { return &o.NoCacheFiles }, true)},
	{name: "cache_sparse", help: "keep sparse files in the page cache too; without it they are read with direct I/O",
		set: flag(func(o *Options) *bool { return &o.CacheSparse }, true)},
	{name: "no_cache_sparse", def: "on",
		set: flag(func(o *Options) *bool { return &o.CacheSparse }, false)},
	{name: "no_xattr", help: "refuse all extended attributes (the kernel then stops asking); the user.dwarfs.* attributes are unavailable",
		set: flag(func(o *Options) *bool { return &o.NoXattr }, true)},
	{name: "tidy_strategy", arg: "none|time|swap", def: "none", help: "how to drop cached blocks in the background: by age (time), when swapped out (swap), or not at all",
		set: into(parseTidy, func(o *Options) *fusefs.TidyStrategy { return &o.Tidy })},
	{name: "tidy_interval", arg: "TIME", def: "5m", help: "how often tidy_strategy looks at the cache",
		set: into(ParseDuration, func(o *Options) *time.Duration { return &o.TidyInterval })},
	{name: "tidy_max_age", arg: "TIME", def: "10m", help: "age at which tidy_strategy=time drops a block",
		set: into(ParseDuration, func(o *Options) *time.Duration { return &o.TidyMaxAge })},
	{name: "seq_detector", arg: "N", def: "4", help: "sequential reads before prefetching; 0: never prefetch",
		set: into(parseSeqDetector, func(o *Options) *int { return &o.SeqDetector })},
	{name: "uid", arg: "N", help: "override owner and group",
		set: into(parseID, func(o *Options) **uint32 { return &o.UID })},
	{name: "gid", arg: "N",
		set: into(parseID, func(o *Options) **uint32 { return &o.GID })},
	{name: "preload_category", arg: "NAME", help: "load the blocks of a category into the cache at mount time, for each time the option is given; a category the image does not have is an error (the reference ignores it)",
		set: func(o *Options, v string) error { o.PreloadCategory = append(o.PreloadCategory, v); return nil }},
	{name: "preload_all", help: "load all blocks into the cache at mount time",
		set: flag(func(o *Options) *bool { return &o.PreloadAll }, true)},
	{name: "upper", arg: "DIR", help: "mount writable: the image becomes the lower layer of a kernel overlayfs whose changes go to DIR (an overlayfs upper directory; mkdwarfs --apply-upper DIR makes a new image of the result); needs root or a user namespace where the kernel allows overlay mounts",
		set: into(str, func(o *Options) *string { return &o.Upper })},
	{name: "work", arg: "DIR", help: "with upper: overlayfs's work directory, on the filesystem of upper (default: .NAME.work beside upper DIR/NAME)",
		set: into(str, func(o *Options) *string { return &o.Work })},
	{name: "analysis_file", arg: "FILE", help: "write the path of each file opened, once, in the order of first opens (input for mkdwarfs --hotness-list)",
		set: into(str, func(o *Options) *string { return &o.AnalysisFile })},
	{name: "verify", arg: "SIGNERS_FILE", help: "mount only an image signed by a key of SIGNERS_FILE (an ssh-keygen allowed signers file) with the signature in FILE or at an http(s):// or s3:// URL (default: IMAGE.sig beside the image, also for an image at a URL: URL.sig, for s3://BUCKET/KEY the object KEY.sig, for docker://R/REPO:TAG the tag TAG.sig; a signature that cannot be fetched, e.g. a 404, fails the mount; see dwarfsck --sign): the section headers must match what was signed (a block's header is compared when the block is first read, so a large image mounts as fast as without verify=), and every block is checked against its signed BLAKE3 each time it is loaded, so a changed block fails its reads (EIO) instead of returning changed data",
		set: into(str, func(o *Options) *string { return &o.Verify })},
	{name: "signature", arg: "FILE|URL",
		set: into(str, func(o *Options) *string { return &o.Signature })},
	{name: "nocheck", help: "skip the checksum pass over the image's sections at mount (the metadata is always checked)",
		set: flag(func(o *Options) *bool { return &o.NoCheck }, true)},
	{name: "block_allocator", arg: "malloc|mmap", def: "malloc", help: "accepted for compatibility: decoded blocks are always memory mapped for them alone and returned to the system when they leave the cache (mmap)",
		set: into(parseAllocator, func(o *Options) *string { return &o.BlockAllocator })},
	{name: "perfmon", optional: true, help: "print performance statistics at unmount",
		set: func(o *Options, v string) error { o.Perfmon, o.PerfmonTrace = true, v; return nil }},
	{name: "debuglevel", arg: "LEVEL", help: "log level (" + strings.Join(logLevels, ", ") + ")",
		set: into(parseLogLevel, func(o *Options) *string { return &o.DebugLevel })},
	{name: "remote_workers", arg: "N", note: "4", help: "parallel range requests for an image at a URL",
		set: into(parsePositive, func(o *Options) *int { return &o.RemoteWorkers })},
	{name: "remote_timeout", arg: "TIME", note: "60s", help: "time budget of one remote read, retries included",
		set: into(ParseDuration, func(o *Options) *time.Duration { return &o.RemoteTimeout })},
	{name: "remote_attempts", arg: "N", note: "5", help: "tries per remote read",
		set: into(parsePositive, func(o *Options) *int { return &o.RemoteAttempts })},
	{name: "disk_cache", arg: "DIR", note: "none", help: "keep fetched blocks of remote images on disk, in DIR",
		set: into(str, func(o *Options) *string { return &o.DiskCache })},
	{name: "disk_cache_size", arg: "SIZE", note: "1g", help: "size bound of the disk cache",
		set: into(cli.ParseSize, func(o *Options) *int64 { return &o.DiskCacheSize })},
	{name: "s3_endpoint", arg: "URL", help: "S3 service (default from AWS_* and ~/.aws)",
		set: into(str, func(o *Options) *string { return &o.S3Endpoint })},
	{name: "s3_region", arg: "R",
		set: into(str, func(o *Options) *string { return &o.S3Region })},
	{name: "s3_path_style",
		set: flag(func(o *Options) *bool { return &o.S3PathStyle }, true)},
	{name: "allow_other", help: "passed to FUSE",
		set: flag(func(o *Options) *bool { return &o.AllowOther }, true)},
	{name: "allow_root",
		set: flag(func(o *Options) *bool { return &o.AllowRoot }, true)},
	{name: "default_permissions",
		set: flag(func(o *Options) *bool { return &o.DefaultPermissions }, true)},
	{name: "fsname", arg: "NAME",
		set: into(str, func(o *Options) *string { return &o.FsName })},
	{name: "subtype", arg: "NAME",
		set: into(str, func(o *Options) *string { return &o.Subtype })},
	kernelFlag("nosuid", "passed to the kernel mount"),
	kernelFlag("suid", ""), kernelFlag("nodev", ""), kernelFlag("dev", ""),
	kernelFlag("noexec", ""), kernelFlag("exec", ""), kernelFlag("ro", ""),
	{name: "auto_unmount", help: "unmount when the driver process dies, even by SIGKILL (fusermount3 stays to do it)",
		set: flag(func(o *Options) *bool { return &o.AutoUnmount }, true)},
	{name: "max_threads", arg: "N", note: "no limit: each request has its own goroutine", help: "handle at most N FUSE requests at once",
		set: into(parseMaxThreads, func(o *Options) *int { return &o.MaxThreads })},
	{name: "attach", arg: "MOUNTPOINT", help: "dwarfs multi only: have the driver serving MOUNTPOINT mount the images too, at the new mount point, on its block cache (see SEVERAL IMAGES IN ONE MOUNT)",
		set: into(str, func(o *Options) *string { return &o.Attach })},
	// libfuse gives each worker thread a /dev/fuse descriptor of its
	// own with clone_fd; go-fuse reads all requests from one.
	{name: "clone_fd", help: "libfuse thread pool tuning, accepted for compatibility with no effect: the driver reads all requests from one /dev/fuse descriptor, with one goroutine waiting and another started for each read",
		set: noEffect},
	{name: "max_idle_threads", arg: "N", set: checkIdleThreads},
}

// ignored are generic mount(8) options that have no meaning here; mount(8)
// and fstab hand them to helpers, so they must not fail the mount. So
// are "comment" and "x-*", which take a value.
var ignored = map[string]bool{}

var ignoredNames = []string{
	"rw", "defaults", "auto", "noauto", "user", "users", "nouser", "owner",
	"_netdev", "nofail", "async", "sync", "atime", "noatime", "relatime", "norelatime",
	"strictatime", "diratime", "nodiratime", "lazytime", "nolazytime", "silent", "loud",
}

// byName indexes table.
var byName = map[string]*option{}

func init() {
	for i := range table {
		byName[table[i].name] = &table[i]
	}
	for _, n := range ignoredNames {
		ignored[n] = true
	}
}

// term is how the help writes an option: "cachesize=SIZE", "enable_nlink".
func (opt *option) term() string {
	if opt.arg == "" {
		return opt.name
	}
	return opt.name + "=" + opt.arg
}

// Items returns the help and manual text of the options: a line per
// option, or per group of options that share their help.
func Items() []cli.Item {
	var items []cli.Item
	for i := 0; i < len(table); {
		j := i + 1
		for j < len(table) && table[j].help == "" {
			j++
		}
		group := table[i:j]
		var terms, defs []string
		for k := range group {
			opt := &group[k]
			terms = append(terms, opt.term())
			switch {
			case opt.arg == "" && opt.def != "":
				defs = append(defs, opt.name)
			case opt.def != "" && len(group) > 1:
				defs = append(defs, opt.name+"="+opt.def)
			case opt.def != "":
				defs = append(defs, opt.def)
			case opt.note != "":
				defs = append(defs, opt.note)
			}
		}
		text := group[0].help
		if len(defs) > 0 {
			text += " (default: " + strings.Join(defs, ", ") + ")"
		}
		items = append(items, cli.Item{Term: strings.Join(terms, ", "), Text: text})
		i = j
	}
	return append(items, cli.Item{Term: "rw, defaults, noauto, ...",
		Text: "options of mount(8) and fstab, accepted with no effect: " + strings.Join(ignoredNames, ", ") + ", comment=TEXT and x-*"})
}

// Words returns the options as shell completion words: "cachesize=" for
// an option with a value, "enable_nlink" for a flag.
func Words() []string {
	words := make([]string, len(table))
	for i := range table {
		words[i] = table[i].name
		if table[i].arg != "" {
			words[i] += "="
		}
	}
	return words
}

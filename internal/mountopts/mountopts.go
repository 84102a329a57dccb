// Package mountopts parses the "-o" option list of the dwarfs FUSE driver.
// Names and defaults follow the reference dwarfs(1) driver so existing
// fstab lines and scripts keep working.
package mountopts

import (
	"errors"
	"fmt"
	"github.com/godwarfs/godwarfs/internal/cli"
	"math"
	"strconv"
	"strings"
	"time"
)

// MlockMode says whether the image should be locked into memory.
type MlockMode string

// Mlock modes accepted by -o mlock=.
const (
	MlockNone MlockMode = "none"
	MlockTry  MlockMode = "try"
	MlockMust MlockMode = "must"
)

// TidyStrategy selects how the block cache is trimmed in the background.
type TidyStrategy string

// Tidy strategies accepted by -o tidy_strategy=.
const (
	TidyNone TidyStrategy = "none"
	TidyTime TidyStrategy = "time"
	TidySwap TidyStrategy = "swap"
)

// Options is the parsed form of a dwarfs -o list.
type Options struct {
	CacheSize       int64
	BlockSize       int64 // I/O block size hint
	Readahead       int64
	Workers         int
	Mlock           MlockMode
	DecRatio        float64
	ImageOffset     int64 // -1: auto-detect
	ImageSize       int64 // 0: up to end of file
	EnableNlink     bool
	ReadOnly        bool // report no write permission bits
	CaseInsensitive bool // case-insensitive lookups
	CacheSparse     bool // keep sparse files in the kernel page cache too
	NoXattr         bool // refuse extended attribute requests (ENOSYS)
	AnalysisFile    string
	BlockAllocator  string // malloc or mmap: accepted, see --help
	CacheImage      bool
	CacheFiles      bool
	TidyStrategy    TidyStrategy
	TidyInterval    time.Duration
	TidyMaxAge      time.Duration
	SeqDetector     int
	UID             *uint32
	GID             *uint32
	PreloadCategory []string
	PreloadAll      bool
	Perfmon         bool
	PerfmonTrace    string
	DebugLevel      string
	NoCheck         bool
	// Verify is an allowed signers file: the image must be signed (see
	// package imagesig) by one of its keys; Signature is the signature
	// file ("": IMAGE.sig).
	Verify    string
	Signature string

	// Images at http://, https:// and s3:// URLs.
	RemoteWorkers  int           // concurrent range requests (0 = default)
	RemoteTimeout  time.Duration // budget of one read, retries included (0 = default)
	RemoteAttempts int           // tries per range (0 = default)
	DiskCache      string        // directory of the persistent block cache ("" = none)
	DiskCacheSize  int64         // its size bound (0 = default)
	S3Endpoint     string
	S3Region       string
	S3PathStyle    bool

	// FUSE/kernel options passed through to the mount.
	AllowOther         bool
	AllowRoot          bool
	DefaultPermissions bool
	FsName             string
	Subtype            string
	// KernelFlags holds generic flags (nosuid, nodev, noexec, ...) that
	// are forwarded verbatim to the mount.
	KernelFlags []string
	// AutoUnmount has fusermount3 unmount the file system when the
	// driver process dies.
	AutoUnmount bool
	// MaxThreads bounds the FUSE requests handled at once (0: no bound).
	MaxThreads int

	// Attach (dwarfs multi only) is the mount point of a running dwarfs
	// multi driver that is to serve this mount too, sharing its cache.
	Attach string
}

// Defaults returns the option values used when nothing is given.
func Defaults() Options {
	return Options{
		CacheSize:      512 << 20,
		BlockSize:      512 << 10,
		Readahead:      0,
		Workers:        2,
		Mlock:          MlockNone,
		DecRatio:       0.8,
		ImageOffset:    -1,
		CacheFiles:     true,
		TidyStrategy:   TidyNone,
		TidyInterval:   5 * time.Minute,
		TidyMaxAge:     10 * time.Minute,
		SeqDetector:    4,
		BlockAllocator: "malloc",
	}
}

// Error reports a bad option. Option is the offending name (or the whole
// item if it has no name).
type Error struct {
	Option string
	Err    error
}

func (e *Error) Error() string {
	if e.Err == nil || errors.Is(e.Err, ErrUnknown) {
		return fmt.Sprintf("unknown option: %s", e.Option)
	}
	return fmt.Sprintf("invalid value for option %s: %v", e.Option, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ErrUnknown is wrapped by errors for option names that are not recognised.
var ErrUnknown = errors.New("unknown option")

// passthrough options accepted without a value and forwarded to the
// kernel mount.
var kernelFlags = map[string]bool{
	"nosuid": true, "suid": true, "nodev": true, "dev": true,
	"noexec": true, "exec": true, "ro": true,
}

// generic mount(8) options that have no meaning for us; mount(8) and fstab
// hand them to helpers, so they must not fail the mount.
var ignored = map[string]bool{
	"rw": true, "defaults": true, "auto": true, "noauto": true,
	"user": true, "users": true, "nouser": true, "owner": true,
	"_netdev": true, "nofail": true, "async": true, "sync": true,
	"atime": true, "noatime": true, "relatime": true, "norelatime": true,
	"strictatime": true, "diratime": true, "nodiratime": true,
	"lazytime": true, "nolazytime": true, "silent": true, "loud": true,
	"comment": true, "x-systemd.automount": true,
}

// Split splits a comma separated option string, honouring backslash
// escapes of commas (as libfuse does) so values can contain commas.
func Split(s string) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case c == ',':
			if cur.Len() > 0 {
				out = append(out, cur.String())
			}
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// Parse applies the items (already split at commas) to o, returning an
// *Error for the first unknown or malformed item.
func (o *Options) Parse(items []string) error {
	for _, it := range items {
		if err := o.parseOne(it); err != nil {
			return err
		}
	}
	return nil
}

// ParseString is Parse(Split(s)).
func (o *Options) ParseString(s string) error { return o.Parse(Split(s)) }

func (o *Options) parseOne(item string) error {
	name, val, hasVal := strings.Cut(item, "=")
	bad := func(err error) error { return &Error{Option: name, Err: err} }
	needVal := func() error {
		if !hasVal || val == "" {
			return bad(errors.New("missing value"))
		}
		return nil
	}
	noVal := func() error {
		if hasVal {
			return bad(errors.New("takes no value"))
		}
		return nil
	}
	if strings.HasPrefix(name, "x-") || name == "comment" {
		return nil // userspace-only fstab annotations
	}
	if ignored[name] {
		return noVal()
	}
	if kernelFlags[name] {
		if err := noVal(); err != nil {
			return err
		}
		o.KernelFlags = append(o.KernelFlags, name)
		return nil
	}
	var err error
	switch name {
	case "cachesize":
		if err = needVal(); err == nil {
			o.CacheSize, err = cli.ParseSize(val)
		}
	case "blocksize":
		if err = needVal(); err == nil {
			o.BlockSize, err = cli.ParseSize(val)
		}
	case "readahead":
		if err = needVal(); err == nil {
			o.Readahead, err = cli.ParseSize(val)
		}
	case "imagesize":
		if err = needVal(); err == nil {
			o.ImageSize, err = cli.ParseSize(val)
		}
	case "workers":
		if err = needVal(); err == nil {
			o.Workers, err = parsePositive(val)
		}
	case "remote_workers":
		if err = needVal(); err == nil {
			o.RemoteWorkers, err = parsePositive(val)
		}
	case "remote_timeout":
		if err = needVal(); err == nil {
			o.RemoteTimeout, err = ParseDuration(val)
		}
	case "remote_attempts":
		if err = needVal(); err == nil {
			o.RemoteAttempts, err = parsePositive(val)
		}
	case "disk_cache":
		if err = needVal(); err == nil {
			o.DiskCache = val
		}
	case "disk_cache_size":
		if err = needVal(); err == nil {
			o.DiskCacheSize, err = cli.ParseSize(val)
		}
	case "s3_endpoint":
		if err = needVal(); err == nil {
			o.S3Endpoint = val
		}
	case "s3_region":
		if err = needVal(); err == nil {
			o.S3Region = val
		}
	case "seq_detector":
		if err = needVal(); err == nil {
			o.SeqDetector, err = strconv.Atoi(val)
			if err == nil && o.SeqDetector < 0 {
				err = errors.New("must not be negative")
			}
		}
	case "mlock":
		if err = needVal(); err == nil {
			switch m := MlockMode(val); m {
			case MlockNone, MlockTry, MlockMust:
				o.Mlock = m
			default:
				err = fmt.Errorf("%q is not one of none, try, must", val)
			}
		}
	case "decratio":
		if err = needVal(); err == nil {
			o.DecRatio, err = strconv.ParseFloat(val, 64)
			if err == nil && (o.DecRatio < 0 || o.DecRatio > 1 || math.IsNaN(o.DecRatio)) {
				err = errors.New("must be between 0 and 1")
			}
		}
	case "offset":
		if err = needVal(); err == nil {
			if val == "auto" {
				o.ImageOffset = -1
			} else {
				o.ImageOffset, err = cli.ParseSize(val)
			}
		}
	case "tidy_strategy":
		if err = needVal(); err == nil {
			switch s := TidyStrategy(val); s {
			case TidyNone, TidyTime, TidySwap:
				o.TidyStrategy = s
			default:
				err = fmt.Errorf("%q is not one of none, time, swap", val)
			}
		}
	case "tidy_interval":
		if err = needVal(); err == nil {
			o.TidyInterval, err = ParseDuration(val)
		}
	case "tidy_max_age":
		if err = needVal(); err == nil {
			o.TidyMaxAge, err = ParseDuration(val)
		}
	case "uid", "gid":
		if err = needVal(); err == nil {
			var n uint64
			n, err = strconv.ParseUint(val, 10, 32)
			v := uint32(n)
			if name == "uid" {
				o.UID = &v
			} else {
				o.GID = &v
			}
		}
	case "analysis_file":
		if err = needVal(); err == nil {
			o.AnalysisFile = val
		}
	case "verify":
		if err = needVal(); err == nil {
			o.Verify = val
		}
	case "signature":
		if err = needVal(); err == nil {
			o.Signature = val
		}
	case "block_allocator":
		if err = needVal(); err == nil {
			switch val {
			case "malloc", "mmap":
				o.BlockAllocator = val
			default:
				err = fmt.Errorf("no such block allocator: %q (malloc, mmap)", val)
			}
		}
	case "max_threads":
		if err = needVal(); err == nil {
			o.MaxThreads, err = parsePositive(val)
			if err == nil && o.MaxThreads > 100000 {
				err = errors.New("must be at most 100000")
			}
		}
	case "max_idle_threads":
		// libfuse's limit on idle worker threads. go-fuse keeps a
		// fixed, small number of goroutines waiting for requests and
		// lets the others end, so the value is checked and has no effect.
		if err = needVal(); err == nil {
			if n, perr := strconv.Atoi(val); perr != nil {
				err = fmt.Errorf("not a number: %w", perr)
			} else if n < -1 {
				err = errors.New("must be -1 (no limit) or more")
			}
		}
	case "preload_category":
		if err = needVal(); err == nil {
			o.PreloadCategory = append(o.PreloadCategory, val)
		}
	case "perfmon":
		o.Perfmon = true
		o.PerfmonTrace = val
	case "debuglevel":
		if err = needVal(); err == nil {
			switch val {
			case "error", "warn", "info", "verbose", "debug", "trace":
				o.DebugLevel = val
			default:
				err = fmt.Errorf("%q is not a log level", val)
			}
		}
	case "fsname":
		if err = needVal(); err == nil {
			o.FsName = val
		}
	case "attach":
		if err = needVal(); err == nil {
			o.Attach = val
		}
	case "subtype":
		if err = needVal(); err == nil {
			o.Subtype = val
		}
	case "enable_nlink", "readonly", "cache_image", "no_cache_image",
		"cache_files", "no_cache_files", "preload_all", "allow_other",
		"allow_root", "default_permissions", "nocheck", "s3_path_style",
		"case_insensitive", "cache_sparse", "no_cache_sparse", "auto_unmount",
		"clone_fd", "no_xattr":
		if err = noVal(); err != nil {
			return err
		}
		o.setFlag(name)
	default:
		return &Error{Option: name, Err: ErrUnknown}
	}
	if err != nil {
		var oe *Error
		if errors.As(err, &oe) {
			return err
		}
		return bad(err)
	}
	return nil
}

func (o *Options) setFlag(name string) {
	switch name {
	case "enable_nlink":
		o.EnableNlink = true
	case "readonly":
		o.ReadOnly = true
	case "no_xattr":
		o.NoXattr = true
	case "cache_image":
		o.CacheImage = true
	case "no_cache_image":
		o.CacheImage = false
	case "cache_files":
		o.CacheFiles = true
	case "no_cache_files":
		o.CacheFiles = false
	case "preload_all":
		o.PreloadAll = true
	case "allow_other":
		o.AllowOther = true
	case "allow_root":
		o.AllowRoot = true
	case "s3_path_style":
		o.S3PathStyle = true
	case "default_permissions":
		o.DefaultPermissions = true
	case "nocheck":
		o.NoCheck = true
	case "case_insensitive":
		o.CaseInsensitive = true
	case "cache_sparse":
		o.CacheSparse = true
	case "no_cache_sparse":
		o.CacheSparse = false
	case "auto_unmount":
		o.AutoUnmount = true
	case "clone_fd":
		// libfuse gives each worker thread a /dev/fuse descriptor of
		// its own; go-fuse reads all requests from one, so the flag is
		// accepted with no effect.
	}
}

func parsePositive(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("not a number: %w", err)
	}
	if n < 1 {
		return 0, errors.New("must be at least 1")
	}
	return n, nil
}

// ParseDuration accepts Go durations ("90s", "5m") and bare numbers of
// seconds, as the reference driver does.
func ParseDuration(s string) (time.Duration, error) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("duration %q must be positive", s)
	}
	return d, nil
}

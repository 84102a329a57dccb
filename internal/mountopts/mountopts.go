// Package mountopts parses the "-o" option list of the dwarfs FUSE driver.
// Names and defaults follow the reference dwarfs(1) driver so existing
// fstab lines and scripts keep working.
//
// Every option is declared once, in the table of table.go: its name, its
// value, its default, its help text and the field it sets. Parsing,
// Defaults, the help and manual text (Items) and the shell completion
// words (Words) all come from that table.
package mountopts

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/godwarfs/godwarfs/fusefs"
)

// MlockMode says whether the image should be locked into memory.
type MlockMode string

// Mlock modes accepted by -o mlock=.
const (
	MlockNone MlockMode = "none"
	MlockTry  MlockMode = "try"
	MlockMust MlockMode = "must"
)

// Options is the parsed form of a dwarfs -o list.
type Options struct {
	// MountOptions are the FUSE driver's settings, which the options set
	// in place (Analysis excepted: the driver opens AnalysisFile).
	fusefs.MountOptions

	// How the image is opened.
	CacheSize       int64
	Workers         int
	Mlock           MlockMode
	DecRatio        float64
	ImageOffset     int64 // -1: auto-detect
	ImageSize       int64 // 0: up to end of file
	CacheImage      bool
	NoCheck         bool
	PreloadCategory []string
	PreloadAll      bool
	AnalysisFile    string
	// Upper and Work make the mount writable (upper=, work=): the image
	// is the lower layer of an overlayfs with these upper and work
	// directories.
	Upper, Work    string
	BlockAllocator string // malloc or mmap: accepted, see --help
	PerfmonTrace   string // perfmon=VALUE: accepted, no effect
	DebugLevel     string
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

	// Attach (dwarfs multi only) is the mount point of a running dwarfs
	// multi driver that is to serve this mount too, sharing its cache.
	Attach string
}

// Defaults returns the option values used when nothing is given: each
// option's declared default, applied as if given.
func Defaults() Options {
	var o Options
	for i := range table {
		opt := &table[i]
		if opt.def == "" {
			continue
		}
		if err := opt.set(&o, opt.def); err != nil {
			panic(fmt.Sprintf("mountopts: default of %s: %v", opt.name, err))
		}
	}
	return o
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
	if strings.HasPrefix(name, "x-") || name == "comment" {
		return nil // userspace-only fstab annotations
	}
	if ignored[name] {
		if hasVal {
			return &Error{Option: name, Err: errors.New("takes no value")}
		}
		return nil
	}
	opt := byName[name]
	if opt == nil {
		return &Error{Option: name, Err: ErrUnknown}
	}
	switch {
	case opt.optional:
	case opt.arg == "" && hasVal:
		return &Error{Option: name, Err: errors.New("takes no value")}
	case opt.arg != "" && (!hasVal || val == ""):
		return &Error{Option: name, Err: errors.New("missing value")}
	}
	if err := opt.set(o, val); err != nil {
		return &Error{Option: name, Err: err}
	}
	return nil
}

// The value parsers of the table.

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

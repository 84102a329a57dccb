package fusefs

// This file builds on every platform, unlike the driver: the dwarfs
// command parses its options into a MountOptions wherever it runs.

import (
	"io"
	"time"
)

// Defaults for zero MountOptions fields; they match the dwarfs driver.
const (
	DefaultBlockSize    = 512 << 10 // st_blksize reported for files
	DefaultSeqDetector  = 4         // sequential reads before prefetching starts
	DefaultTidyInterval = 5 * time.Minute
	DefaultTidyMaxAge   = 10 * time.Minute
)

// TidyStrategy selects how the block cache is trimmed in the background.
type TidyStrategy string

// The tidy strategies of the dwarfs driver's tidy_strategy option.
const (
	TidyNone TidyStrategy = ""     // never trim
	TidyTime TidyStrategy = "time" // drop blocks idle for longer than TidyMaxAge
	TidySwap TidyStrategy = "swap" // drop idle blocks while memory is short
)

// MountOptions are the driver settings of one mount. The zero value gives
// the dwarfs driver's defaults. The settings that concern opening the
// image (cache size, workers, offset) belong to godwarfs.Options instead.
type MountOptions struct {
	// BlockSize is the st_blksize reported for files (DefaultBlockSize
	// if zero).
	BlockSize int64
	// Readahead is how many bytes are prefetched ahead of a sequential
	// reader (one image block if zero).
	Readahead int64
	// SeqDetector is how many reads must each continue the previous one
	// before prefetching starts (DefaultSeqDetector if zero; negative
	// disables prefetching).
	SeqDetector int
	// NoCacheFiles makes reads bypass the kernel page cache (direct I/O),
	// so every read reaches the driver.
	NoCacheFiles bool
	// EnableNlink reports the image's link counts instead of 1.
	EnableNlink bool
	// UID and GID, when set, replace every file's owner and group.
	UID, GID *uint32
	// Tidy trims the block cache every TidyInterval (DefaultTidyInterval
	// if zero); TidyTime drops blocks idle for longer than TidyMaxAge
	// (DefaultTidyMaxAge if zero).
	Tidy         TidyStrategy
	TidyInterval time.Duration
	TidyMaxAge   time.Duration
	// Perfmon prints performance counters to Config.Stderr at unmount.
	Perfmon bool
	// ReadOnly reports every mode without its write permission bits.
	ReadOnly bool
	// CaseInsensitive looks names up ignoring case (Unicode simple case
	// folding). Of entries that differ only in case, the first in
	// directory (byte) order is found; Mount warns about each such
	// collision on Config.Stderr.
	CaseInsensitive bool
	// CacheSparse lets sparse files use the kernel page cache like
	// other files; without it they are read with direct I/O, since
	// caching mostly-zero files wastes memory.
	CacheSparse bool
	// NoXattr answers extended attribute requests with ENOSYS, after
	// which the kernel stops sending them for the life of the mount and
	// fails them itself (EOPNOTSUPP). The kernel never caches attributes
	// for FUSE, so this helps tools that ask for one of every file and,
	// unlike ls, do not stop at the first "unsupported". The
	// user.dwarfs.* attributes are then unavailable.
	NoXattr bool
	// Analysis, if set, receives the path (relative to the root) of
	// every regular file the first time it is opened, one per line: a
	// list for mkdwarfs --hotness-list.
	Analysis io.Writer
	// MaxThreads bounds the FUSE requests handled at once (0: no bound).
	MaxThreads int
	// AutoUnmount mounts through fusermount3 with auto_unmount, which
	// keeps a helper process that unmounts when the driver process dies.
	AutoUnmount bool

	// Options of the kernel mount.
	AllowOther         bool     // let other users access the mount
	AllowRoot          bool     // let root (and the owner) access it
	DefaultPermissions bool     // let the kernel check permissions
	FsName             string   // the "source" in /proc/mounts (overrides Config.FsName)
	Subtype            string   // the type shown as fuse.SUBTYPE (default "dwarfs")
	KernelFlags        []string // nosuid, nodev, noexec, ... passed through
}

// withDefaults returns o with zero fields set to their defaults and
// SeqDetector normalised to 0 for "disabled".
func (o MountOptions) withDefaults() MountOptions {
	if o.BlockSize <= 0 {
		o.BlockSize = DefaultBlockSize
	}
	switch {
	case o.SeqDetector == 0:
		o.SeqDetector = DefaultSeqDetector
	case o.SeqDetector < 0:
		o.SeqDetector = 0
	}
	if o.TidyInterval <= 0 {
		o.TidyInterval = DefaultTidyInterval
	}
	if o.TidyMaxAge <= 0 {
		o.TidyMaxAge = DefaultTidyMaxAge
	}
	return o
}

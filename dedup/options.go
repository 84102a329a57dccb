// Package dedup is the front half of the image builder, one file per
// stage: it scans an input tree (scan.go, filter.go), hashes files to find
// duplicate and similar contents (hash.go), orders the contents (order.go),
// segments their data into blocks, sharing repeated byte ranges
// (segment.go), and assembles the metadata model (assemble.go) as a Policy
// says (policy.go). RebuildMetadata (rebuild.go) applies the same policy
// to an existing image's metadata. Build (build.go) runs the stages;
// package writer compresses the blocks and writes the image.
package dedup

import (
	"fmt"
	"hash"
	"io"
	"os"
	"time"

	"github.com/godwarfs/godwarfs/shard"
)

// Order selects how file contents are arranged in the block stream.
type Order int

// The supported inode orders (--order).
const (
	OrderNone Order = iota
	OrderPath
	OrderRevPath
	OrderSimilarity
	OrderNilsimsa
	OrderExplicit // Options.ExplicitOrder
)

var orderNames = [...]string{"none", "path", "revpath", "similarity", "nilsimsa", "explicit"}

// String is the order's --order name.
func (o Order) String() string {
	if o >= 0 && int(o) < len(orderNames) {
		return orderNames[o]
	}
	return fmt.Sprintf("Order(%d)", int(o))
}

// ParseOrder maps an --order argument to an Order.
func ParseOrder(s string) (Order, bool) {
	switch s {
	case "none":
		return OrderNone, true
	case "path":
		return OrderPath, true
	case "revpath":
		return OrderRevPath, true
	case "similarity":
		return OrderSimilarity, true
	case "nilsimsa":
		return OrderNilsimsa, true
	case "explicit":
		return OrderExplicit, true
	}
	return 0, false
}

// Pack is a set of -P/--pack-metadata flags.
type Pack struct {
	ChunkTable    bool
	Directories   bool
	SharedFiles   bool
	Names         bool // compact names table (FSST when available)
	NamesIndex    bool // packed (length) index for names
	Symlinks      bool
	SymlinksIndex bool
	Force         bool // use FSST even if it does not save space
	Plain         bool // plain string lists instead of compact tables
}

// Options configure one build. The zero value is not useful; start from
// DefaultOptions.
type Options struct {
	Input     string   // root directory
	InputList []string // optional: paths relative to Input (nil: walk everything)
	// Tree, if set, supplies the input tree instead of the directory
	// Input (an archive; Input then only names it in messages).
	Tree TreeSource
	// Base, if set, are existing images the build grows from: their
	// trees and blocks come first, Input (if not "") is added at
	// InputAt, a slash separated path ("" for the root).
	Base    *Base
	InputAt string

	// Select, if set, is given the scanned tree (after the filters and
	// RemoveEmpty) as the shard planner takes it: every entry but the
	// root, in path order. The entries for which the returned keep
	// reports false are left out, a directory with everything below it:
	// a shard build (see package shard) keeps the paths its shard holds.
	Select func([]shard.Entry) (keep func(path string) bool, err error)

	// Exclude lists OS paths never to include (the output image and its
	// temporary file when they are written inside the input tree).
	Exclude []string

	ScannerWorkers int
	Filters        []FilterRule
	RemoveEmpty    bool
	WithDevices    bool
	WithSpecials   bool
	NoSparse       bool
	// Hollow stores every regular file as one hole of its size: the image
	// has the tree's names, sizes and attributes but no data (--hollow).
	// Files are still read for the whole-file hash unless FileHash is nil.
	Hollow        bool
	ContinueOnErr bool

	// FileHash makes the whole-file hash that finds duplicate files (see
	// NewFileHash); nil turns whole-file deduplication off.
	FileHash func() hash.Hash

	Order    Order
	Nilsimsa NilsimsaOptions // OrderNilsimsa's limits
	// ExplicitOrder lists paths relative to Input for OrderExplicit:
	// their contents come first, in this order, the rest after them in
	// scan order.
	ExplicitOrder     []string
	OrderWorkers      int   // goroutines for ordering (0: 1)
	MaxSimilaritySize int64 // 0: unlimited

	BlockSizeBits  int
	WindowBits     int // 0 disables the segmenter
	WindowStep     int // step = window >> WindowStep
	Lookback       int // blocks searched for matches, the current one included; 0: none
	BloomSizeShift int

	// Categorize enables categorizers (mkdwarfs --categorize), named as in
	// Categorizers, in the order given: the data a categorizer claims
	// goes into blocks of its category, and the first to claim a file
	// wins, as with the reference. Empty: no categories.
	Categorize []string
	// Incompressible configures the incompressible categorizer (nil: the
	// defaults).
	Incompressible *IncompressibleOptions
	// Hotness is the hotness categorizer's list (nil: no list given, so
	// it claims nothing).
	Hotness *HotnessOptions
	// AcceptCategory, if set, is asked by the pcmaudio and fits
	// categorizers whether data of a category with the given metadata
	// (JSON) can be stored: the reference rejects a file whose layout its
	// compressor for the category cannot take (it then stays in the
	// default category, with a warning). The writer answers it from the
	// category's block compressor.
	AcceptCategory func(category, metadataJSON string) error
	// Granularity, if set, returns the frame size in bytes that the
	// segmenter must respect in the blocks of a category with the given
	// metadata (1 or less: none): matches and block ends fall on whole
	// frames, as the reference's segmenter does for compressors with a
	// granularity constraint (FLAC: channels times bytes per sample).
	Granularity func(category, metadataJSON string) int
	// PerCategory overrides the order and segmenter settings per category
	// name (CATEGORY::VALUE options).
	PerCategory map[string]CategoryOptions
	// Policy says how attributes and tables are stored.
	Policy
	NoHardlinks  bool // --no-hardlink-table
	NoCreateTime bool
	Now          func() time.Time // for create_timestamp and --set-time now

	// OpenFile opens regular files for reading (nil: read-only, with the
	// errors os.Open gives). Tests use it to simulate unreadable or
	// changing files.
	OpenFile func(name string) (*os.File, error)

	// Log receives warnings (unreadable files with ContinueOnErr, ...).
	Log io.Writer
	// Verbosef, Debugf and Tracef, when set, receive notes of growing
	// detail (mkdwarfs --log-level verbose, debug, trace): the phases
	// with their times; each file's ordering and segmenting; each
	// segment match.
	Verbosef, Debugf, Tracef func(format string, args ...any)
	// Progress, if set, is called now and then with running totals: at
	// least when a phase starts, and after each file. Calls do not overlap.
	Progress func(Stats)
	// Phase, if set, is called as each phase of a build begins: "reading"
	// (PhaseReading: a Tree's archive, when there is one), "scanning"
	// (walking the tree, reading and hashing files), "ordering" (whole-file
	// dedup and the order of the contents), "segmenting" (the segmenter
	// fills blocks and hands them to the sink) and "metadata" (the last,
	// until Build returns). With categories, each category's contents are
	// ordered and then segmented in turn, so the two alternate. For a
	// timeline of the build.
	Phase func(name string)
	// BeforeSegmenting, if set, runs once the tree is scanned and
	// hashed, before the first block is made: what scanning left behind
	// is garbage then (the writer returns it to the system there).
	BeforeSegmenting func()
	// BeforeMetadata, if set, runs once the data is segmented, before
	// the metadata is assembled: the segmenter's state is garbage then,
	// and the metadata's tables are the last large allocation beside
	// the scan's records.
	BeforeMetadata func()
}

// DefaultOptions returns the level-7 defaults of the reference mkdwarfs,
// but for Lookback: 2 where the reference has 1, so that a file at the
// start of a block can still match its versions at the end of the block
// before (see doc/architecture.md, Ordering).
func DefaultOptions() Options {
	return Options{
		ScannerWorkers: 2,
		FileHash:       newXXH3128,
		Order:          OrderNilsimsa,
		BlockSizeBits:  24,
		WindowBits:     12,
		WindowStep:     3,
		Lookback:       2,
		BloomSizeShift: 4,
		Now:            time.Now,
	}
}

// Stats summarise a build.
type Stats struct {
	Dirs, Symlinks, Files, Devices, Specials int
	Hardlinks                                int   // extra dir entries for already seen inodes
	DupFiles                                 int   // inodes whose content equals an earlier one
	DupBytes                                 int64 // bytes saved by whole-file dedup
	ScannedBytes                             int64 // bytes read while scanning
	InputBytes                               int64 // total size of unique regular inodes
	SegMatches                               int   // segmenter matches
	SegMatchBytes                            int64 // bytes saved by segment matches
	BlockBytes                               int64 // uncompressed block data
	Blocks                                   int
	HoleBytes                                int64
	Errors                                   int   // skipped entries (ContinueOnErr)
	TreeBytes                                int64 // size of all regular files, hard links once
	ArchiveBytes                             int64 // input read by a TreeSource (PhaseReading)
	// An update's files (Base.Update): regular files whose path the base
	// has with the same contents, with other contents, that it lacks, and
	// its files whose path the tree lacks; the base blocks rewritten
	// (compaction) and dropped (nothing refers to them), and the dead
	// bytes of the base blocks kept.
	Unchanged, Changed, New, Deleted int
	RewrittenBlocks, DroppedBlocks   int
	DeadBytes                        int64

	// Running state for progress displays.
	Phase          string // PhaseReading (Options.Tree only), "scanning" (reading and hashing files), then "segmenting"
	Current        string // the file last started, relative to the input
	FilesToScan    int    // regular files the scanning phase reads
	FilesScanned   int
	SegmentedBytes int64 // unique file data through the segmenter so far
}

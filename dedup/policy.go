package dedup

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/godwarfs/godwarfs/internal/chmod"
	"github.com/godwarfs/godwarfs/metadata"
)

// Policy says how the metadata builder stores inode attributes and tables,
// the same for a build from a directory and for a rebuild of an existing
// image's metadata. Every field's zero value keeps what was scanned (or
// read from the image).
type Policy struct {
	// Pack selects packed table representations (-P). nil is the default:
	// "auto" for a build, the input's packing for a rebuild.
	Pack *Pack
	// TimeResolution is the granularity of stored timestamps: it divides
	// one second, or is a whole number of seconds. 0 is one second for a
	// build and the input's resolution for a rebuild, which can only make
	// it coarser (a multiple of the input's).
	TimeResolution time.Duration
	// KeepAllTimes stores atime and ctime besides mtime.
	KeepAllTimes bool
	// SetTime replaces every timestamp (seconds since the epoch).
	SetTime *int64
	// SetOwner and SetGroup replace every uid and gid.
	SetOwner, SetGroup *uint32
	// Chmod maps every inode's mode (see ParseChmod).
	Chmod func(mode uint32) uint32
	// NoCategoryNames leaves category_names and block_categories out of
	// the metadata, and with them the category metadata, which
	// NoCategoryMetadata alone leaves out.
	NoCategoryNames, NoCategoryMetadata bool
}

// dropCategories applies NoCategoryNames and NoCategoryMetadata to md.
func (p *Policy) dropCategories(md *metadata.Metadata) {
	if p.NoCategoryNames {
		md.CategoryNames, md.HasCategoryNames = nil, false
		md.BlockCategories, md.HasBlockCategories = nil, false
	}
	if p.NoCategoryNames || p.NoCategoryMetadata {
		md.CategoryMetadataJSON, md.HasCategoryMetadataJSON = nil, false
		md.BlockCategoryMetadata, md.HasBlockCategoryMetadata = nil, false
	}
}

// ErrPolicy is wrapped by the errors of policy values that cannot apply.
var ErrPolicy = errors.New("invalid option")

// PackAuto is the default packing of a build: compact name and symlink
// tables.
var PackAuto = Pack{Names: true, Symlinks: true}

// ParsePack parses a -P/--pack-metadata list: auto, all, none,
// chunk_table, directories, shared_files, names, names_index, symlinks,
// symlinks_index, force, plain.
func ParsePack(s string) (Pack, error) {
	var pk Pack
	for _, w := range strings.Split(s, ",") {
		switch strings.TrimSpace(w) {
		case "auto":
			pk.Names, pk.Symlinks = true, true
		case "all":
			pk = Pack{ChunkTable: true, Directories: true, SharedFiles: true, Names: true,
				NamesIndex: true, Symlinks: true, SymlinksIndex: true, Force: pk.Force, Plain: pk.Plain}
		case "none":
			pk = Pack{Force: pk.Force, Plain: pk.Plain}
		case "chunk_table":
			pk.ChunkTable = true
		case "directories":
			pk.Directories = true
		case "shared_files":
			pk.SharedFiles = true
		case "names":
			pk.Names = true
		case "names_index":
			pk.NamesIndex = true
		case "symlinks":
			pk.Symlinks = true
		case "symlinks_index":
			pk.SymlinksIndex = true
		case "force":
			pk.Force = true
		case "plain":
			pk.Plain = true
		default:
			return pk, fmt.Errorf("invalid --pack-metadata element %q: %w", w, ErrPolicy)
		}
	}
	return pk, nil
}

// ParseTimeResolution parses a --time-resolution value: a unit (ns, us,
// ms, s, m, h, d, or nsec, usec, msec, sec, min, hour, day), a number of
// one of these units ("100ms", "2m"), or a bare number of seconds.
func ParseTimeResolution(s string) (time.Duration, error) {
	names := map[string]time.Duration{"nsec": time.Nanosecond, "usec": time.Microsecond,
		"msec": time.Millisecond, "sec": time.Second, "min": time.Minute, "hour": time.Hour, "day": 24 * time.Hour}
	if d, ok := names[s]; ok {
		return d, nil
	}
	units := []struct {
		suffix string
		unit   time.Duration
	}{{"ns", time.Nanosecond}, {"us", time.Microsecond}, {"ms", time.Millisecond},
		{"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour}}
	num, unit := s, time.Second
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			num, unit = strings.TrimSuffix(s, u.suffix), u.unit
			break
		}
	}
	if num == "" && s != "" {
		num = "1" // a bare unit
	}
	n, err := strconv.ParseUint(num, 10, 32)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("invalid time resolution %q: %w", s, ErrPolicy)
	}
	d := time.Duration(n) * unit
	if err := checkTimeResolution(d); err != nil {
		return 0, fmt.Errorf("time resolution %q: %w", s, err)
	}
	return d, nil
}

// checkTimeResolution accepts what the format can store: a divisor of one
// second or a whole number of seconds.
func checkTimeResolution(d time.Duration) error {
	switch {
	case d <= 0:
		return fmt.Errorf("%v is not positive: %w", d, ErrPolicy)
	case d < time.Second && time.Second%d != 0:
		return fmt.Errorf("%v must divide one second: %w", d, ErrPolicy)
	case d > time.Second && d%time.Second != 0:
		return fmt.Errorf("%v: resolutions above one second must be whole seconds: %w", d, ErrPolicy)
	case d/time.Second > 1<<32-1:
		return fmt.Errorf("%v is too coarse: %w", d, ErrPolicy)
	}
	return nil
}

// ParseChmod parses chmod(1)-style clauses (octal, or
// [DF]?[ugoa]*[+-=][rwxXst]* separated by commas; D and F restrict a clause
// to directories or other files), or "norm", into a Policy.Chmod function.
// Clauses that name no one (u, g, o, a) set only bits umask allows.
func ParseChmod(spec string, umask uint32) (func(mode uint32) uint32, error) {
	c, err := chmod.Parse(spec, umask)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, ErrPolicy)
	}
	return c.Apply, nil
}

// applyOwners stores SetOwner and SetGroup for every inode.
func (p *Policy) applyOwners(md *metadata.Metadata) {
	if p.SetOwner != nil {
		md.Uids = []uint32{*p.SetOwner}
		for i := range md.Inodes {
			md.Inodes[i].OwnerIndex = 0
		}
	}
	if p.SetGroup != nil {
		md.Gids = []uint32{*p.SetGroup}
		for i := range md.Inodes {
			md.Inodes[i].GroupIndex = 0
		}
	}
}

// applyChmod maps every inode's mode through Chmod; the new mode table
// lists the modes in the order the inodes first use them.
func (p *Policy) applyChmod(md *metadata.Metadata) {
	if p.Chmod == nil {
		return
	}
	var modes []uint32
	idx := map[uint32]uint32{}
	for i := range md.Inodes {
		m := p.Chmod(md.Modes[md.Inodes[i].ModeIndex])
		k, ok := idx[m]
		if !ok {
			k = uint32(len(modes))
			idx[m] = k
			modes = append(modes, m)
		}
		md.Inodes[i].ModeIndex = k
	}
	md.Modes = modes
}

// inodeTimes are an inode's atime, mtime, ctime and btime.
type inodeTimes [4]timespec

// encodeTimes stores absolute inode times (not before the epoch) at
// resolution res: offsets in units of the resolution from the smallest
// stored time, and with a subsecond resolution the nanoseconds as
// multiples of it. With mtimeOnly only mtime (and btime where the image
// has it) is stored.
// timeOf gives inode i's times; it is called twice per inode rather than
// the times being held for all of them.
func encodeTimes(md *metadata.Metadata, timeOf func(i int) inodeTimes, res time.Duration, mtimeOnly bool) {
	o := md.Options
	var unit, mult int64 = 1, 0 // seconds per offset step; nanoseconds per subsecond step
	if res >= time.Second {
		unit = int64(res / time.Second)
	} else {
		mult = int64(res)
	}
	stored := func(k int) bool {
		return !(k == 3 && !o.HasBtime) && !(mtimeOnly && (k == 0 || k == 2))
	}
	base := int64(-1)
	for i := range md.Inodes {
		for k, t := range timeOf(i) {
			if stored(k) && (base < 0 || t.sec/unit < base) {
				base = t.sec / unit
			}
		}
	}
	base = max(base, 0)
	for i := range md.Inodes {
		ts := timeOf(i)
		enc := func(k int) (uint64, uint64) {
			t := ts[k]
			if !stored(k) {
				return 0, 0
			}
			var sub uint64
			if mult != 0 {
				sub = uint64(t.nsec / mult)
			}
			return uint64(t.sec/unit - base), sub
		}
		in := &md.Inodes[i]
		in.AtimeOffset, in.AtimeSubsec = enc(0)
		in.MtimeOffset, in.MtimeSubsec = enc(1)
		in.CtimeOffset, in.CtimeSubsec = enc(2)
		in.BtimeOffset, in.BtimeSubsec = enc(3)
	}
	md.TimestampBase = uint64(base)
	o.MtimeOnly = mtimeOnly
	o.TimeResolutionSec, o.SubsecondResolutionNsecMultiplier = nil, nil
	if unit > 1 {
		r := uint32(unit)
		o.TimeResolutionSec = &r
	}
	if mult != 0 {
		m := uint32(mult)
		o.SubsecondResolutionNsecMultiplier = &m
	}
}

// packTables stores the name and symlink string tables and packs the
// chunk, directory and shared-files tables as pk says.
func packTables(md *metadata.Metadata, names, symlinks []string, pk Pack) {
	if pk.Plain {
		md.Names, md.Symlinks = names, symlinks
		md.CompactNames, md.CompactSymlinks = nil, nil
	} else {
		md.Names, md.Symlinks = nil, nil
		md.CompactNames = metadata.BuildStringTable(names, pk.Names || pk.Force, pk.NamesIndex)
		md.CompactSymlinks = metadata.BuildStringTable(symlinks, pk.Symlinks || pk.Force, pk.SymlinksIndex)
	}
	packNumbers(md, pk)
}

// packNumbers packs the chunk, directory and shared-files tables.
func packNumbers(md *metadata.Metadata, pk Pack) {
	if pk.ChunkTable {
		md.ChunkTable = metadata.PackChunkTable(md.ChunkTable)
		md.Options.PackedChunkTable = true
	}
	if pk.Directories {
		md.Directories = metadata.PackDirectories(md.Directories)
		md.Options.PackedDirectories = true
	}
	if pk.SharedFiles && md.HasSharedFilesTable && len(md.SharedFilesTable) > 0 {
		md.SharedFilesTable = metadata.PackSharedFiles(md.SharedFilesTable)
		md.Options.PackedSharedFilesTable = true
	}
}

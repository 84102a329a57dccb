package recompress

import (
	"fmt"
	"github.com/godwarfs/godwarfs/internal/chmod"
	"github.com/godwarfs/godwarfs/internal/version"
	"slices"
	"strconv"
	"strings"

	"github.com/godwarfs/godwarfs/metadata"
)

type packSpec struct {
	chunkTable, directories, sharedFiles bool
	names, namesIndex                    bool
	symlinks, symlinksIndex              bool
	force, plain                         bool
}

// parsePack parses a -P list with the semantics of mkdwarfs.
func parsePack(v string) (packSpec, error) {
	var pk packSpec
	for _, w := range strings.Split(v, ",") {
		switch strings.TrimSpace(w) {
		case "auto":
			pk.names, pk.symlinks = true, true
		case "all":
			pk = packSpec{true, true, true, true, true, true, true, pk.force, pk.plain}
		case "none":
			pk = packSpec{force: pk.force, plain: pk.plain}
		case "chunk_table":
			pk.chunkTable = true
		case "directories":
			pk.directories = true
		case "shared_files":
			pk.sharedFiles = true
		case "names":
			pk.names = true
		case "names_index":
			pk.namesIndex = true
		case "symlinks":
			pk.symlinks = true
		case "symlinks_index":
			pk.symlinksIndex = true
		case "force":
			pk.force = true
		case "plain":
			pk.plain = true
		default:
			return pk, fmt.Errorf("--pack-metadata element %q: %w", w, ErrUsage)
		}
	}
	return pk, nil
}

// rebuildMetadata returns a transformed copy of orig in the 2.3+ model.
// prev is the input image's metadata and major/minor its format version
// (recorded in metadata_version_history); orig differs from prev only
// after re-chunking.
func rebuildMetadata(orig, prev *metadata.Metadata, major, minor int, opts Options) (*metadata.Metadata, error) {
	ro := opts.Rebuild
	fsys, err := metadata.NewFS(orig)
	if err != nil {
		return nil, err
	}
	if !opts.NoCheck {
		if err := fsys.Check(); err != nil {
			return nil, fmt.Errorf("input metadata: %w", err)
		}
	}
	norm := fsys.Metadata()
	md := *norm // shallow copy; every table changed below is replaced, not mutated
	if norm.Options != nil {
		o := *norm.Options
		md.Options = &o
	} else {
		md.Options = &metadata.FsOptions{}
	}
	o := md.Options
	n := fsys.InodeCount()

	// Inode attributes (one element per inode) and dir_entries.
	inodes := make([]metadata.InodeData, n)
	if orig.HasDirEntries {
		copy(inodes, norm.Inodes)
	} else {
		for ino := range n {
			inodes[ino] = norm.Inodes[norm.EntryTableV22[ino]]
			inodes[ino].NameIndexV22, inodes[ino].InodeV22 = 0, 0
		}
		// Entries of the legacy model are the inodes list; the layout
		// (directory ranges, root at 0) is the same as dir_entries.
		ents := make([]metadata.DirEntry, len(norm.Inodes))
		for i, e := range norm.Inodes {
			ents[i] = metadata.DirEntry{NameIndex: e.NameIndexV22, InodeNum: e.InodeV22}
		}
		md.DirEntries, md.HasDirEntries = ents, true
		md.EntryTableV22 = nil
		// Legacy directories carry the parent inode; convert to
		// parent/self entry indices.
		nd := len(norm.Directories) - 1
		self := make([]uint32, nd)
		parent := make([]uint32, nd)
		for d := range nd {
			for e := norm.Directories[d].FirstEntry; e < norm.Directories[d+1].FirstEntry; e++ {
				if c := ents[e].InodeNum; int(c) < nd {
					self[c], parent[c] = e, uint32(d)
				}
			}
		}
		dirs := make([]metadata.Directory, nd+1)
		for d := range nd {
			dirs[d] = metadata.Directory{ParentEntry: self[parent[d]], FirstEntry: norm.Directories[d].FirstEntry, SelfEntry: self[d]}
		}
		dirs[nd] = metadata.Directory{FirstEntry: norm.Directories[nd].FirstEntry}
		md.Directories = dirs
		md.ChunkInodeOffset, md.LinkInodeOffset = 0, 0
	}
	md.Inodes = inodes

	if err := applyOwnership(&md, ro); err != nil {
		return nil, err
	}
	if err := applyTimes(&md, fsys, ro); err != nil {
		return nil, err
	}
	if ro.Chmod != "" {
		mc, err := parseChmod(ro.Chmod)
		if err != nil {
			return nil, err
		}
		var modes []uint32
		idx := map[uint32]uint32{}
		for i := range md.Inodes {
			m := mc.Apply(norm.Modes[md.Inodes[i].ModeIndex])
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

	// Packing: keep the input's representation unless -P was given.
	if ro.Pack == "" {
		if orig.Options != nil {
			if orig.Options.PackedChunkTable {
				md.ChunkTable = metadata.PackChunkTable(md.ChunkTable)
				o.PackedChunkTable = true
			}
			if orig.Options.PackedDirectories {
				md.Directories = metadata.PackDirectories(md.Directories)
				o.PackedDirectories = true
			}
			if orig.Options.PackedSharedFilesTable && md.HasSharedFilesTable {
				md.SharedFilesTable = metadata.PackSharedFiles(md.SharedFilesTable)
				o.PackedSharedFilesTable = true
			}
		}
	} else {
		pk, err := parsePack(ro.Pack)
		if err != nil {
			return nil, err
		}
		names, links := fsys.Names(), fsys.Symlinks()
		if pk.plain {
			md.Names, md.Symlinks = slices.Clone(names), slices.Clone(links)
			md.CompactNames, md.CompactSymlinks = nil, nil
		} else {
			md.Names, md.Symlinks = nil, nil
			md.CompactNames = metadata.BuildStringTable(names, pk.names || pk.force, pk.namesIndex)
			md.CompactSymlinks = metadata.BuildStringTable(links, pk.symlinks || pk.force, pk.symlinksIndex)
		}
		if pk.chunkTable {
			md.ChunkTable = metadata.PackChunkTable(md.ChunkTable)
			o.PackedChunkTable = true
		}
		if pk.directories {
			md.Directories = metadata.PackDirectories(md.Directories)
			o.PackedDirectories = true
		}
		if pk.sharedFiles && md.HasSharedFilesTable && len(md.SharedFilesTable) > 0 {
			md.SharedFilesTable = metadata.PackSharedFiles(md.SharedFilesTable)
			o.PackedSharedFilesTable = true
		}
	}

	if !opts.NoMetadataVersionHistory {
		h := metadata.HistoryEntry{Major: uint8(major), Minor: uint8(minor), BlockSize: prev.BlockSize}
		if prev.DwarfsVersion != nil {
			v := *prev.DwarfsVersion
			h.DwarfsVersion = &v
		}
		if prev.Options != nil {
			oo := *prev.Options
			h.Options = &oo
		}
		md.MetadataVersionHistory = append(slices.Clone(prev.MetadataVersionHistory), h)
		md.HasMetadataVersionHistory = true
	}
	v := version.Get().Name()
	md.DwarfsVersion = &v
	if md.PreferredPathSeparator == nil && !orig.HasDirEntries {
		sep := uint32('/')
		md.PreferredPathSeparator = &sep
	}
	return &md, nil
}

func applyOwnership(md *metadata.Metadata, ro RebuildOptions) error {
	if ro.SetOwner != nil {
		md.Uids = []uint32{*ro.SetOwner}
		for i := range md.Inodes {
			md.Inodes[i].OwnerIndex = 0
		}
	}
	if ro.SetGroup != nil {
		md.Gids = []uint32{*ro.SetGroup}
		for i := range md.Inodes {
			md.Inodes[i].GroupIndex = 0
		}
	}
	return nil
}

// parseTimeRes returns a resolution in nanoseconds.
func parseTimeRes(s string) (uint64, error) {
	switch s {
	case "sec":
		return 1e9, nil
	case "min":
		return 60e9, nil
	case "hour":
		return 3600e9, nil
	case "day":
		return 86400e9, nil
	}
	units := []struct {
		suf string
		mul uint64
	}{{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}, {"d", 86400e9}}
	if s == "" {
		return 0, fmt.Errorf("--time-resolution: empty value: %w", ErrUsage)
	}
	mul := uint64(1e9)
	num := s
	for _, u := range units {
		if strings.HasSuffix(s, u.suf) {
			num, mul = strings.TrimSuffix(s, u.suf), u.mul
			break
		}
	}
	if num == "" {
		num = "1" // bare unit: "ms", "us", "ns", "s", ...
	}
	v, err := strconv.ParseUint(num, 10, 64)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("--time-resolution %q: %w", s, ErrUsage)
	}
	return v * mul, nil
}

// applyTimes handles SetTime, TimeResolution and KeepAllTimes. All
// timestamps are re-expressed as absolute (sec, nsec) and re-encoded.
func applyTimes(md *metadata.Metadata, fsys *metadata.FS, ro RebuildOptions) error {
	o := md.Options
	curSec, curMult := fsys.TimeResolution()
	curNs := uint64(curSec) * 1e9
	if curMult != 0 {
		curNs = uint64(curMult)
	}
	newNs := curNs
	if ro.TimeResolution != "" {
		v, err := parseTimeRes(ro.TimeResolution)
		if err != nil {
			return err
		}
		if v < curNs || v%curNs != 0 {
			return fmt.Errorf("--time-resolution %s: can only coarsen the image's resolution of %dns (to a multiple of it): %w", ro.TimeResolution, curNs, ErrUsage)
		}
		if v > 1e9 && v%1e9 != 0 {
			return fmt.Errorf("--time-resolution %s: resolutions above one second must be whole seconds: %w", ro.TimeResolution, ErrUsage)
		}
		if v < 1e9 && 1e9%v != 0 {
			return fmt.Errorf("--time-resolution %s: must divide one second: %w", ro.TimeResolution, ErrUsage)
		}
		newNs = v
	}
	mtimeOnly := o.MtimeOnly || !ro.KeepAllTimes
	if ro.TimeResolution == "" && ro.SetTime == nil && mtimeOnly == o.MtimeOnly {
		return nil
	}
	// Absolute times in nanoseconds-since-epoch split into (sec, nsec).
	type ts struct{ sec, nsec uint64 }
	abs := func(off, sub uint64) ts {
		sec := uint64(curSec) * (md.TimestampBase + off)
		var ns uint64
		if curMult != 0 {
			ns = sub * uint64(curMult)
			sec += ns / 1e9
			ns %= 1e9
		}
		return ts{sec, ns}
	}
	n := len(md.Inodes)
	all := make([][4]ts, n)
	for i, in := range md.Inodes {
		all[i] = [4]ts{abs(in.AtimeOffset, in.AtimeSubsec), abs(in.MtimeOffset, in.MtimeSubsec),
			abs(in.CtimeOffset, in.CtimeSubsec), abs(in.BtimeOffset, in.BtimeSubsec)}
		if ro.SetTime != nil {
			for k := range 3 {
				all[i][k] = ts{*ro.SetTime, 0}
			}
		}
	}
	var resSec, mult uint64 = 1, 0
	if newNs >= 1e9 {
		resSec = newNs / 1e9
	} else {
		mult = newNs
	}
	// Units of the offsets: whole resSec seconds; subseconds in mult ns.
	base := ^uint64(0)
	for i := range all {
		for k, t := range all[i] {
			if k == 3 && !o.HasBtime {
				continue
			}
			if mtimeOnly && (k == 0 || k == 2) {
				continue
			}
			base = min(base, t.sec/resSec)
		}
	}
	if base == ^uint64(0) {
		base = 0
	}
	for i := range md.Inodes {
		in := &md.Inodes[i]
		enc := func(k int) (uint64, uint64) {
			t := all[i][k]
			if (k == 3 && !o.HasBtime) || (mtimeOnly && (k == 0 || k == 2)) {
				return 0, 0
			}
			var sub uint64
			if mult != 0 {
				sub = t.nsec / mult
			}
			return t.sec/resSec - base, sub
		}
		in.AtimeOffset, in.AtimeSubsec = enc(0)
		in.MtimeOffset, in.MtimeSubsec = enc(1)
		in.CtimeOffset, in.CtimeSubsec = enc(2)
		in.BtimeOffset, in.BtimeSubsec = enc(3)
	}
	md.TimestampBase = base
	o.MtimeOnly = mtimeOnly
	if resSec > 1 {
		r := uint32(resSec)
		o.TimeResolutionSec = &r
	} else {
		o.TimeResolutionSec = nil
	}
	if mult != 0 {
		m := uint32(mult)
		o.SubsecondResolutionNsecMultiplier = &m
	} else {
		o.SubsecondResolutionNsecMultiplier = nil
	}
	return nil
}

// parseChmod reports a bad --chmod as a usage error.
func parseChmod(spec string) (*chmod.Changer, error) {
	mc, err := chmod.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, ErrUsage)
	}
	return mc, nil
}

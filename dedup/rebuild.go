package dedup

import (
	"fmt"
	"slices"
	"time"

	"github.com/godwarfs/godwarfs/internal/version"
	"github.com/godwarfs/godwarfs/metadata"
)

// Rebuild is an existing image's metadata that the metadata builder starts
// from (mkdwarfs --rebuild-metadata, --change-block-size).
type Rebuild struct {
	// Metadata is rebuilt; it is the image's own metadata, or a re-chunked
	// copy of it.
	Metadata *metadata.Metadata
	// Previous is the image's metadata as stored, and Major and Minor its
	// format version: recorded in metadata_version_history.
	Previous     *metadata.Metadata
	Major, Minor int
	// NoVersionHistory leaves metadata_version_history as it is.
	NoVersionHistory bool
	// NoCheck skips the consistency check of the input metadata.
	NoCheck bool
}

// RebuildMetadata returns a copy of r.Metadata in the 2.3+ model with p
// applied; what p leaves unset keeps the input's value.
func RebuildMetadata(r Rebuild, p Policy) (*metadata.Metadata, error) {
	orig, prev := r.Metadata, r.Previous
	fsys, err := metadata.NewFS(orig)
	if err != nil {
		return nil, err
	}
	check := fsys.Check
	if r.NoCheck {
		// Without the consistency check, still every index in range:
		// the tables are read whole below.
		check = fsys.CheckTables
	}
	if err := check(); err != nil {
		return nil, fmt.Errorf("input metadata: %w", err)
	}
	norm := fsys.Metadata()
	md := *norm // shallow copy; every table changed below is replaced, not mutated
	if norm.Options != nil {
		o := *norm.Options
		md.Options = &o
	} else {
		md.Options = &metadata.FsOptions{}
	}
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

	p.applyOwners(&md)
	if err := applyRebuildTimes(&md, fsys, p); err != nil {
		return nil, err
	}
	p.applyChmod(&md)

	// Packing: keep the input's representation unless Pack is set.
	if p.Pack == nil {
		var pk Pack
		if orig.Options != nil {
			pk = Pack{ChunkTable: orig.Options.PackedChunkTable, Directories: orig.Options.PackedDirectories,
				SharedFiles: orig.Options.PackedSharedFilesTable}
		}
		packNumbers(&md, pk)
	} else {
		packTables(&md, slices.Clone(fsys.Names()), slices.Clone(fsys.Symlinks()), *p.Pack)
	}

	if !r.NoVersionHistory {
		h := metadata.HistoryEntry{Major: uint8(r.Major), Minor: uint8(r.Minor), BlockSize: prev.BlockSize}
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
	p.dropCategories(&md)
	return &md, nil
}

// applyRebuildTimes re-encodes the image's timestamps when the policy
// changes them: SetTime, a coarser TimeResolution, or dropping atime and
// ctime (a rebuild without KeepAllTimes stores mtime only, like a build;
// an image already mtime-only stays so).
func applyRebuildTimes(md *metadata.Metadata, fsys *metadata.FS, p Policy) error {
	o := md.Options
	curSec, curMult := fsys.TimeResolution()
	cur := time.Duration(curSec) * time.Second
	if curMult != 0 {
		cur = time.Duration(curMult)
	}
	res := cur
	if p.TimeResolution != 0 {
		if err := checkTimeResolution(p.TimeResolution); err != nil {
			return err
		}
		if p.TimeResolution < cur || p.TimeResolution%cur != 0 {
			return fmt.Errorf("time resolution %v: can only coarsen the image's resolution of %v (to a multiple of it): %w", p.TimeResolution, cur, ErrPolicy)
		}
		res = p.TimeResolution
	}
	mtimeOnly := o.MtimeOnly || !p.KeepAllTimes
	if p.TimeResolution == 0 && p.SetTime == nil && mtimeOnly == o.MtimeOnly {
		return nil
	}
	abs := func(off, sub uint64) timespec {
		sec := int64(curSec) * int64(md.TimestampBase+off)
		var ns int64
		if curMult != 0 {
			ns = int64(sub) * int64(curMult)
			sec += ns / 1e9
			ns %= 1e9
		}
		return timespec{sec, ns}
	}
	times := make([]inodeTimes, len(md.Inodes))
	for i, in := range md.Inodes {
		times[i] = inodeTimes{abs(in.AtimeOffset, in.AtimeSubsec), abs(in.MtimeOffset, in.MtimeSubsec),
			abs(in.CtimeOffset, in.CtimeSubsec), abs(in.BtimeOffset, in.BtimeSubsec)}
		if p.SetTime != nil {
			for k := range 3 {
				times[i][k] = timespec{max(*p.SetTime, 0), 0}
			}
		}
	}
	encodeTimes(md, func(i int) inodeTimes { return times[i] }, res, mtimeOnly)
	return nil
}

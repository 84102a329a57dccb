package dwarfsck

import (
	"fmt"
	"sort"
	"strings"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/metadata"
	"github.com/godwarfs/godwarfs/shard"
)

// Category is the per-category block summary.
type Category struct {
	Name                     string
	Blocks                   int
	Compressed, Uncompressed int64
	hasCompressed            bool
}

// Info is everything the summary prints.
type Info struct {
	HeaderVersion, Major, Minor int
	Offset                      int64
	History                     []metadata.HistoryRecord
	HasHistory                  bool
	CreatedBy                   *string
	CreatedOn                   *uint64
	Features                    []string
	HasFeatures                 bool
	BlockSize                   uint32
	BlockCount                  int
	InodeCount                  int
	PathSeparator               *uint32
	FsSize                      uint64
	AllocatedSize               *uint64
	CompBlocks, UncompBlocks    int64
	// DeadBytes are the uncompressed block bytes no chunk refers to (an
	// update's dropped files, see mkdwarfs --max-dead).
	DeadBytes            int64
	CompMeta, UncompMeta int64
	FsOptions            []string // fs_options names, reference text order
	TableOptions         []string // string table packing names
	ResSec               uint32
	ResNsec              uint32 // > 0: subsecond resolution in ns
	Categories           []Category
	Previous             []metadata.HistoryEntry
	// Shard is the shard a shard image records (mkdwarfs --shard).
	Shard *shard.Record
}

// Gather collects the summary of an open image.
func Gather(im *godwarfs.Image) (*Info, error) {
	bi := imageaccess.Of(im).Blocks
	md := imageaccess.Of(im).Metadata
	info := &Info{Major: bi.Major(), Minor: bi.Minor(), Offset: bi.Offset(), HeaderVersion: 2}
	if bi.Minor() < 2 {
		info.HeaderVersion = 1 // v1 framing
	}
	for _, s := range bi.Find(block.SectionHistory) {
		b, err := bi.ReadDecompressed(s)
		if err != nil {
			return nil, err
		}
		h, err := metadata.DecodeHistory(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", im.Name(), s, err)
		}
		info.HasHistory = true
		info.History = append(info.History, h.Entries...)
	}
	cmdlines := make([][]string, len(info.History))
	for i, h := range info.History {
		cmdlines[i] = h.Arguments
	}
	if r, ok := shard.FromHistory(cmdlines); ok {
		info.Shard = &r
	}
	info.CreatedBy, info.CreatedOn = md.DwarfsVersion, md.CreateTimestamp
	info.Features, info.HasFeatures = md.Features, md.HasFeatures
	info.BlockSize = md.BlockSize
	blocks := bi.Blocks()
	info.BlockCount = len(blocks)
	info.InodeCount = imageaccess.Of(im).FS.InodeCount()
	info.PathSeparator = md.PreferredPathSeparator
	info.FsSize = md.TotalFsSize
	info.AllocatedSize = md.TotalAllocatedFsSize

	uncomp := make([]int64, len(blocks))
	var raw []byte
	for i, s := range blocks {
		info.CompBlocks += s.Length
		n := s.Length
		if s.Compression != block.CompNone {
			// Sizes come from the stored frame; checksums are checked
			// separately (and may be skipped with --no-check). Most codecs
			// state the size in their first bytes: a large image need not
			// be read whole for this.
			var ok bool
			var err error
			for want := min(s.Length, 64); ; want = s.Length {
				if int64(cap(raw)) < want {
					raw = make([]byte, want)
				}
				raw = raw[:want]
				if _, err := bi.ReaderAt().ReadAt(raw, bi.Offset()+s.DataOffset); err != nil {
					return nil, fmt.Errorf("%s: %s: %w", im.Name(), s, err)
				}
				if want == s.Length {
					n, err = block.UncompressedSize(s.Compression, raw)
					break
				}
				if n, ok, err = block.SizeFromHeader(s.Compression, raw); ok || err != nil {
					break
				}
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", im.Name(), s, err)
			}
		}
		uncomp[i] = n
		info.UncompBlocks += n
	}
	dead, err := deadBytes(imageaccess.Of(im).FS, uncomp)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", im.Name(), err)
	}
	info.DeadBytes = dead
	info.CompMeta = imageaccess.Of(im).MetadataSection.Length
	info.UncompMeta = imageaccess.Of(im).MetadataSize

	if o := md.Options; o != nil {
		add := func(ok bool, name string) {
			if ok {
				info.FsOptions = append(info.FsOptions, name)
			}
		}
		add(o.MtimeOnly, "mtime_only")
		add(o.PackedChunkTable, "packed_chunk_table")
		add(o.PackedDirectories, "packed_directories")
		add(o.PackedSharedFilesTable, "packed_shared_files_table")
		add(o.HasBtime, "has_btime")
		add(o.InodesHaveNlink, "inodes_have_nlink")
	}
	if t := md.CompactNames; t != nil {
		if t.Symtab != nil {
			info.TableOptions = append(info.TableOptions, "packed_names")
		}
		if t.PackedIndex {
			info.TableOptions = append(info.TableOptions, "packed_names_index")
		}
	}
	if t := md.CompactSymlinks; t != nil {
		if t.Symtab != nil {
			info.TableOptions = append(info.TableOptions, "packed_symlinks")
		}
		if t.PackedIndex {
			info.TableOptions = append(info.TableOptions, "packed_symlinks_index")
		}
	}
	info.ResSec, info.ResNsec = imageaccess.Of(im).FS.TimeResolution()

	if md.HasCategoryNames && md.HasBlockCategories {
		cats := make([]Category, len(md.CategoryNames))
		for i, n := range md.CategoryNames {
			cats[i].Name = n
		}
		for b, c := range md.BlockCategories {
			if uint64(c) >= uint64(len(cats)) || b >= len(blocks) {
				continue
			}
			cats[c].Blocks++
			cats[c].Compressed += blocks[b].Length
			cats[c].Uncompressed += uncomp[b]
			if blocks[b].Compression != block.CompNone {
				cats[c].hasCompressed = true
			}
		}
		for _, c := range cats {
			if c.Blocks > 0 {
				info.Categories = append(info.Categories, c)
			}
		}
	}
	if md.HasMetadataVersionHistory {
		info.Previous = md.MetadataVersionHistory
	}
	return info, nil
}

func versionString(v metadata.DwarfsVersion) string {
	s := fmt.Sprintf("v%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.GitDesc != nil && *v.GitDesc != "" {
		s = *v.GitDesc
	}
	if v.GitBranch != nil && *v.GitBranch != "" && *v.GitBranch != "HEAD" {
		s += " (" + *v.GitBranch + ")"
	}
	return "libdwarfs " + s
}

func optionLines(b *strings.Builder, indent string, opts []string) {
	for i, o := range opts {
		if i == 0 {
			fmt.Fprintf(b, "%soptions: %s\n", indent, o)
		} else {
			fmt.Fprintf(b, "%s         %s\n", indent, o)
		}
	}
}

func resolutionText(sec, nsec uint32) string {
	switch {
	case nsec == 0:
		return fmt.Sprintf("%d seconds", sec)
	case nsec%1000000 == 0:
		return fmt.Sprintf("%d ms", nsec/1000000)
	case nsec%1000 == 0:
		return fmt.Sprintf("%d us", nsec/1000)
	}
	return fmt.Sprintf("%d ns", nsec)
}

// VersionLine is the first line of the summary.
func (info *Info) VersionLine() string {
	s := fmt.Sprintf("DwarFS version %d.%d [%d]", info.Major, info.Minor, info.HeaderVersion)
	if info.Offset > 0 {
		s += fmt.Sprintf(" at offset %d", info.Offset)
	}
	return s + "\n"
}

// Text renders the summary parts selected by f like the reference
// "dwarfsck -d": the version line, the history, the creator (always) and the
// metadata summary. The metadata memory usage table (frozen_analysis) is
// not shown.
func (info *Info) Text(f Features) string {
	var b strings.Builder
	if f&FeatVersion != 0 {
		b.WriteString(info.VersionLine())
	}
	if f&FeatHistory != 0 && len(info.History) > 0 {
		b.WriteString("History:\n")
		for i, h := range info.History {
			fmt.Fprintf(&b, "  %d: ", i+1)
			if h.Timestamp != nil {
				fmt.Fprintf(&b, "[%s] ", fmtTime(*h.Timestamp))
			}
			fmt.Fprintf(&b, "%s on %s, %s\n", versionString(h.Version), h.SystemID, h.CompilerID)
			if len(h.Arguments) > 0 {
				fmt.Fprintf(&b, "     args: %s\n", strings.Join(h.Arguments, " "))
			}
		}
	}
	if info.CreatedBy != nil {
		fmt.Fprintf(&b, "created by: %s\n", *info.CreatedBy)
	}
	if info.CreatedOn != nil {
		fmt.Fprintf(&b, "created on: %s\n", fmtTime(*info.CreatedOn))
	}
	if len(info.Features) > 0 {
		fmt.Fprintf(&b, "features: %s\n", strings.Join(info.Features, ", "))
	}
	if info.Shard != nil {
		fmt.Fprintf(&b, "shard: %s\n", info.Shard)
	}
	if f&FeatMetadataSummary == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "block size: %s\n", SizeWithUnit(int64(info.BlockSize)))
	fmt.Fprintf(&b, "block count: %d\n", info.BlockCount)
	fmt.Fprintf(&b, "inode count: %d\n", info.InodeCount)
	if info.PathSeparator != nil {
		fmt.Fprintf(&b, "preferred path separator: %c\n", rune(*info.PathSeparator))
	}
	fmt.Fprintf(&b, "original filesystem size: %s\n", SizeWithUnit(int64(info.FsSize)))
	if info.AllocatedSize != nil {
		fmt.Fprintf(&b, "original allocated filesystem size: %s\n", SizeWithUnit(int64(*info.AllocatedSize)))
	}
	fmt.Fprintf(&b, "compressed block size: %s (%s)\n", SizeWithUnit(info.CompBlocks), percent(info.CompBlocks, info.UncompBlocks))
	fmt.Fprintf(&b, "uncompressed block size: %s\n", SizeWithUnit(info.UncompBlocks))
	if info.DeadBytes > 0 {
		fmt.Fprintf(&b, "dead block data: %s (%s)\n", SizeWithUnit(info.DeadBytes), percent(info.DeadBytes, info.UncompBlocks))
	}
	fmt.Fprintf(&b, "compressed metadata size: %s (%s)\n", SizeWithUnit(info.CompMeta), percent(info.CompMeta, info.UncompMeta))
	fmt.Fprintf(&b, "uncompressed metadata size: %s\n", SizeWithUnit(info.UncompMeta))
	optionLines(&b, "", append(append([]string(nil), info.FsOptions...), info.TableOptions...))
	fmt.Fprintf(&b, "time resolution: %s\n", resolutionText(info.ResSec, info.ResNsec))
	if len(info.Categories) > 0 {
		b.WriteString("categories:\n")
		for _, c := range info.Categories {
			if c.hasCompressed {
				fmt.Fprintf(&b, "  %s: %d blocks, %s compressed, %s uncompressed (%s)\n", c.Name, c.Blocks,
					SizeWithUnit(c.Compressed), SizeWithUnit(c.Uncompressed), percent(c.Compressed, c.Uncompressed))
			} else {
				fmt.Fprintf(&b, "  %s: %d blocks, %s uncompressed\n", c.Name, c.Blocks, SizeWithUnit(c.Uncompressed))
			}
		}
	}
	if len(info.Previous) > 0 {
		b.WriteString("previous metadata versions:\n")
		for _, p := range info.Previous {
			fmt.Fprintf(&b, "  [%d.%d] %s blocks", p.Major, p.Minor, SizeWithUnit(int64(p.BlockSize)))
			if p.DwarfsVersion != nil {
				fmt.Fprintf(&b, ", %s", *p.DwarfsVersion)
			}
			b.WriteByte('\n')
			if p.Options != nil {
				var opts []string
				if p.Options.MtimeOnly {
					opts = append(opts, "mtime_only")
				}
				if p.Options.PackedChunkTable {
					opts = append(opts, "packed_chunk_table")
				}
				if p.Options.PackedDirectories {
					opts = append(opts, "packed_directories")
				}
				if p.Options.PackedSharedFilesTable {
					opts = append(opts, "packed_shared_files_table")
				}
				if p.Options.HasBtime {
					opts = append(opts, "has_btime")
				}
				if p.Options.InodesHaveNlink {
					opts = append(opts, "inodes_have_nlink")
				}
				optionLines(&b, "        ", opts)
				var sec, nsec uint32 = 1, 0
				if p.Options.TimeResolutionSec != nil {
					sec = *p.Options.TimeResolutionSec
				}
				if p.Options.SubsecondResolutionNsecMultiplier != nil {
					nsec = *p.Options.SubsecondResolutionNsecMultiplier
				}
				fmt.Fprintf(&b, "        time resolution: %s\n", resolutionText(sec, nsec))
			}
		}
	}
	return b.String()
}

// JSON returns the summary as the reference "dwarfsck --json" object.
func (info *Info) JSON() map[string]any {
	m := map[string]any{
		"version":                    map[string]any{"header": info.HeaderVersion, "major": info.Major, "minor": info.Minor},
		"image_offset":               info.Offset,
		"block_count":                info.BlockCount,
		"block_size":                 info.BlockSize,
		"inode_count":                info.InodeCount,
		"original_filesystem_size":   info.FsSize,
		"compressed_block_size":      info.CompBlocks,
		"uncompressed_block_size":    info.UncompBlocks,
		"compressed_metadata_size":   info.CompMeta,
		"uncompressed_metadata_size": info.UncompMeta,
	}
	if info.ResNsec > 0 {
		m["time_resolution"] = float64(info.ResNsec) / 1e9
	} else {
		m["time_resolution"] = info.ResSec
	}
	if info.Shard != nil {
		m["shard"] = map[string]any{"index": info.Shard.Index, "count": info.Shard.Count, "plan_digest": info.Shard.Digest}
	}
	if info.HasHistory {
		hist := []any{}
		for _, h := range info.History {
			v := map[string]any{"major": h.Version.Major, "minor": h.Version.Minor, "patch": h.Version.Patch, "is_release": h.Version.IsRelease}
			if h.Version.GitRev != nil {
				v["git_rev"] = *h.Version.GitRev
			}
			if h.Version.GitBranch != nil {
				v["git_branch"] = *h.Version.GitBranch
			}
			if h.Version.GitDesc != nil {
				v["git_desc"] = *h.Version.GitDesc
			}
			e := map[string]any{"libdwarfs_version": v, "system_id": h.SystemID, "compiler_id": h.CompilerID}
			if h.HasArguments {
				e["arguments"] = h.Arguments
			}
			if h.Timestamp != nil {
				e["timestamp"] = *h.Timestamp
			}
			if h.HasLibraryVersions {
				// The reference nests the set in an extra list.
				e["library_versions"] = []any{h.LibraryVersions}
			}
			hist = append(hist, e)
		}
		m["history"] = hist
	}
	if info.CreatedBy != nil {
		m["created_by"] = *info.CreatedBy
	}
	if info.CreatedOn != nil {
		m["created_on"] = strings.Replace(fmtTime(*info.CreatedOn), " ", "T", 1)
	}
	if info.HasFeatures {
		f := info.Features
		if f == nil {
			f = []string{}
		}
		m["features"] = f
	}
	if info.PathSeparator != nil {
		m["preferred_path_separator"] = string(rune(*info.PathSeparator))
	}
	if info.AllocatedSize != nil {
		m["original_allocated_filesystem_size"] = *info.AllocatedSize
	}
	// The reference lists string-table options first in JSON.
	opts := append(append([]string{}, info.TableOptions...), info.FsOptions...)
	m["options"] = opts
	if len(info.Categories) > 0 {
		cats := map[string]any{}
		for _, c := range info.Categories {
			cats[c.Name] = map[string]any{"block_count": c.Blocks, "compressed_size": c.Compressed, "uncompressed_size": c.Uncompressed}
		}
		m["categories"] = cats
	}
	return m
}

// deadBytes sums the bytes of the blocks (of the uncompressed sizes given)
// that no chunk of a file covers.
func deadBytes(f *metadata.FS, sizes []int64) (int64, error) {
	type span struct{ off, end int64 }
	spans := make([][]span, len(sizes))
	seen := map[uint32]bool{}
	err := f.Walk(func(_ string, ino uint32, e metadata.Inode) error {
		if e.Mode&0o170000 != 0o100000 || seen[ino] { // not a regular file
			return nil
		}
		seen[ino] = true
		chunks, err := f.FileChunks(ino)
		for _, c := range chunks {
			if !c.Hole && int(c.Block) < len(sizes) {
				spans[c.Block] = append(spans[c.Block], span{int64(c.Offset), int64(c.Offset) + int64(c.Size)})
			}
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	var dead int64
	for b, ss := range spans {
		sort.Slice(ss, func(i, j int) bool { return ss[i].off < ss[j].off })
		var live, end int64
		for _, s := range ss {
			s.off = max(s.off, end)
			if s.end > s.off {
				live += s.end - s.off
				end = s.end
			}
		}
		dead += max(sizes[b]-live, 0)
	}
	return dead, nil
}

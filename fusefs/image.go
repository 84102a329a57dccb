//go:build !windows && !(linux && (386 || arm))

package fusefs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/metadata"
	"github.com/godwarfs/godwarfs/source"
)

// ImageSource adapts a *godwarfs.Image to Source.
type ImageSource struct {
	im     *godwarfs.Image
	fsys   *metadata.FS
	cache  *block.Cache // for preloading, trimming and statistics
	blocks *block.Image
	remote source.Source // the object for images opened from a URL
	cancel context.CancelFunc
	ctx    context.Context
}

var _ Source = (*ImageSource)(nil)

// NewImageSource wraps an open image. Close stops background preloading
// but does not close the image.
func NewImageSource(im *godwarfs.Image) *ImageSource {
	parts := imageaccess.Of(im)
	s := &ImageSource{im: im, fsys: parts.FS, cache: parts.Cache, blocks: parts.Blocks}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// Close stops background work started by the source.
func (s *ImageSource) Close() error {
	s.cancel()
	return nil
}

// Image returns the wrapped image.
func (s *ImageSource) Image() *godwarfs.Image { return s.im }

// Root implements Source.
func (s *ImageSource) Root() uint32 { return s.im.Root() }

func toTimespec(t metadata.Time) Timespec { return Timespec{Sec: t.Sec, Nsec: t.Nsec} }

// Stat implements Source.
func (s *ImageSource) Stat(ino uint32) (Attr, error) {
	in, err := s.im.InodeInfo(ino)
	if err != nil {
		return Attr{}, err
	}
	return Attr{
		Mode: in.Mode, UID: in.Uid, GID: in.Gid, Nlink: in.Nlink,
		Size: in.Size, AllocatedSize: in.AllocatedSize,
		Sparse: in.Mode&metadata.ModeType == metadata.ModeRegular && in.AllocatedSize != in.Size,
		Atime:  toTimespec(in.Atime), Mtime: toTimespec(in.Mtime), Ctime: toTimespec(in.Ctime),
		Btime: toTimespec(in.Btime), HasBtime: in.HasBtime,
		Rdev: in.Rdev,
	}, nil
}

// Mode returns the mode of ino without the rest of Stat (modeSource).
func (s *ImageSource) Mode(ino uint32) (uint32, error) {
	m, err := s.fsys.Mode(ino)
	if err != nil {
		return 0, fmt.Errorf("inode %d: %w", ino, err)
	}
	return m, nil
}

// ReadDir implements Source.
func (s *ImageSource) ReadDir(dir uint32) ([]DirEntry, error) {
	ents, err := s.fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: readdir inode %d: %w", s.im.Name(), dir, err)
	}
	return ents, nil
}

// CheckDir checks directory dir before its first lookup (dirChecker).
func (s *ImageSource) CheckDir(dir uint32) error {
	if err := s.fsys.CheckDir(dir); err != nil {
		return fmt.Errorf("%s: lookup in inode %d: %w", s.im.Name(), dir, err)
	}
	return nil
}

// Lookup implements Source.
func (s *ImageSource) Lookup(dir uint32, name string) (uint32, bool) {
	return s.fsys.Lookup(dir, name)
}

// Readlink implements Source.
func (s *ImageSource) Readlink(ino uint32) (string, error) {
	t, err := s.fsys.Readlink(ino)
	if err != nil {
		return "", fmt.Errorf("readlink inode %d: %w", ino, err)
	}
	return t, nil
}

// Open implements Source.
func (s *ImageSource) Open(ino uint32) (File, error) {
	f, err := s.im.OpenInode(ino)
	if err != nil {
		return nil, err
	}
	return imageFile{f}, nil
}

// imageFile adapts *godwarfs.File to File: reads carry the request's
// context down to the block cache.
type imageFile struct{ f *godwarfs.File }

func (f imageFile) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	return f.f.ReadAtContext(ctx, p, off)
}
func (f imageFile) SeekData(off int64) (int64, error) { return f.f.SeekData(off) }
func (f imageFile) SeekHole(off int64) (int64, error) { return f.f.SeekHole(off) }
func (f imageFile) Prefetch(off, n int64)             { f.f.Prefetch(off, n) }
func (f imageFile) DontNeed(off, n int64)             { f.f.DontNeed(off, n) }

// Tidy implements Source.
func (s *ImageSource) Tidy(maxAge time.Duration) { s.cache.Tidy(maxAge) }

// Info implements Source.
func (s *ImageSource) Info() FsInfo {
	return FsInfo{
		BlockSize:  s.fsys.BlockSize(),
		Workers:    s.cache.Workers(),
		TotalSize:  s.fsys.Tables().TotalFsSize,
		InodeCount: uint64(s.fsys.InodeCount()),
	}
}

// CacheStats implements Source.
func (s *ImageSource) CacheStats() CacheStats {
	st := s.cache.Stats()
	return CacheStats{
		Hits: st.Hits, Misses: st.Misses, Decoded: st.Decoded, DecodedBytes: st.DecodedBytes,
		Evictions: st.Evictions, CurrentBytes: st.CurrentBytes, PeakBytes: st.PeakBytes, Capacity: st.Capacity,
		LoadingBytes: st.LoadingBytes, PinnedBytes: st.PinnedBytes, Overcommits: st.Overcommits,
		Reused: st.Reused, Spent: st.Spent,
	}
}

type chunkInfo struct {
	Block  *uint32 `json:"block,omitempty"`
	Offset *uint32 `json:"offset,omitempty"`
	Size   uint64  `json:"size"`
	Hole   bool    `json:"hole,omitempty"`
}

type inodeInfo struct {
	Inode      uint32      `json:"inode"`
	Mode       uint32      `json:"mode"`
	ModeString string      `json:"modestring"`
	UID        uint32      `json:"uid"`
	GID        uint32      `json:"gid"`
	Nlink      uint32      `json:"nlink"`
	Size       int64       `json:"size"`
	Allocated  int64       `json:"allocated_size"`
	Chunks     []chunkInfo `json:"chunks,omitempty"`
}

// InodeInfo implements Source.
func (s *ImageSource) InodeInfo(ino uint32) ([]byte, error) {
	in, err := s.im.InodeInfo(ino)
	if err != nil {
		return nil, err
	}
	info := inodeInfo{
		Inode: ino, Mode: in.Mode, ModeString: godwarfs.FileMode(in.Mode).String(),
		UID: in.Uid, GID: in.Gid, Nlink: in.Nlink, Size: in.Size, Allocated: in.AllocatedSize,
	}
	if in.Mode&metadata.ModeType == metadata.ModeRegular {
		chunks, err := s.fsys.FileChunks(ino)
		if err != nil {
			return nil, err
		}
		for _, c := range chunks {
			ci := chunkInfo{Size: c.Size, Hole: c.Hole}
			if !c.Hole {
				b, o := c.Block, c.Offset
				ci.Block, ci.Offset = &b, &o
			}
			info.Chunks = append(info.Chunks, ci)
		}
	}
	return info.appendJSON(nil), nil
}

// preload decodes the selected blocks in the background, stopping once
// they would no longer fit in the cache (loading more would only evict
// what was preloaded).
func (s *ImageSource) preload(blocks []int) {
	capacity := s.cache.Stats().Capacity
	bs := int64(s.fsys.BlockSize())
	go func() {
		var used int64
		for _, b := range blocks {
			if s.ctx.Err() != nil || used+bs > capacity {
				return
			}
			var pin block.Pin
			if err := s.cache.Get(s.ctx, b, &pin); err != nil {
				return
			}
			pin.Release()
			used += bs
		}
	}()
}

// Preload starts background decoding of all blocks (all=true) or of the
// blocks in the named categories. A category the image does not have is
// an error that lists the ones it has.
func (s *ImageSource) Preload(all bool, categories []string) error {
	md := s.fsys.Tables()
	for _, c := range categories {
		if !slices.Contains(md.CategoryNames, c) {
			known := "the image has no categories"
			if len(md.CategoryNames) > 0 {
				known = "known categories: " + strings.Join(md.CategoryNames, ", ")
			}
			return fmt.Errorf("preload_category: no category %q in the image (%s)", c, known)
		}
	}
	var sel []int
	for i := range s.blocks.NumBlocks() {
		// Stored blocks are read directly, not through the cache. A block
		// whose header is not read yet may be one: the cache loads those
		// correctly too, and finding out here would cost a read per block.
		if b, _ := s.blocks.Block(i); !b.Pending() && b.Compression == block.CompNone {
			continue
		}
		if all {
			sel = append(sel, i)
			continue
		}
		if i < len(md.BlockCategories) {
			c := md.BlockCategories[i]
			if uint64(c) < uint64(len(md.CategoryNames)) && slices.Contains(categories, md.CategoryNames[c]) {
				sel = append(sel, i)
			}
		}
	}
	if len(sel) > 0 {
		s.preload(sel)
	}
	return nil
}

// SetRemote records the object an image was opened from, for RemoteStats.
func (s *ImageSource) SetRemote(src source.Source) { s.remote = src }

// RemoteStats returns the transfer counters of an image opened from a
// URL; ok is false for local images.
func (s *ImageSource) RemoteStats() (source.Stats, bool) {
	if s.remote != nil {
		return s.remote.Stats(), true
	}
	return s.im.SourceStats()
}

// MountImage mounts an already open image at dir. The image stays open
// after unmounting; closing it is the caller's job.
func MountImage(dir string, im *godwarfs.Image, cfg Config) (*Server, error) {
	src := NewImageSource(im)
	srv, err := Mount(dir, src, cfg)
	if err != nil {
		src.Close()
		return nil, err
	}
	go func() {
		<-srv.Done()
		src.Close()
	}()
	return srv, nil
}

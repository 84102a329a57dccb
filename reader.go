package godwarfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/godwarfs/godwarfs/internal/lru"
	"github.com/godwarfs/godwarfs/metadata"
)

// File is an open regular file of an Image. Opening it resolves the file's
// chunk list and the offset of every chunk once; each read after that
// costs a binary search plus the blocks it touches, however many chunks
// the file has.
//
// ReadAt, ReadAtContext, SeekData, SeekHole and Prefetch are safe for
// concurrent use. Read and Seek share a position and are not.
type File struct {
	im   *Image
	ino  uint32
	path string // as opened, for errors
	fi   *fileInfo
	*layout
	closed atomic.Bool

	mu  sync.Mutex // guards pos for Read/Seek
	pos int64
}

var (
	_ fs.File     = (*File)(nil)
	_ io.ReaderAt = (*File)(nil)
	_ io.Seeker   = (*File)(nil)
)

// OpenInode opens inode ino for reading. Regular files read their content;
// other non-directory inodes read as empty.
func (im *Image) OpenInode(ino uint32) (*File, error) {
	in, err := im.InodeInfo(ino)
	if err != nil {
		return nil, err
	}
	return im.openFile(ino, in, "", "")
}

// openFile builds the handle of inode ino; name is the base name its
// fs.FileInfo reports and p the path used in errors.
func (im *Image) openFile(ino uint32, in metadata.Inode, name, p string) (*File, error) {
	if in.Mode&metadata.ModeType == metadata.ModeDir {
		return nil, fmt.Errorf("%s: inode %d: %w", im.name, ino, syscall.EISDIR)
	}
	f := &File{im: im, ino: ino, path: p, fi: &fileInfo{name: name, st: statOf(in)}, layout: &layout{}}
	if p == "" {
		f.path = fmt.Sprintf("inode %d", ino)
	}
	if in.Mode&metadata.ModeType != metadata.ModeRegular {
		return f, nil
	}
	l, err := im.layoutOf(ino)
	if err != nil {
		return nil, err
	}
	f.layout = l
	return f, nil
}

// layout is where a regular file's bytes are: its chunks in order and
// where each ends. It is never modified once built, so the files open on
// one inode share it.
type layout struct {
	chunks []metadata.ChunkRef
	ends   []int64 // ends[i] = end offset of chunks[i] in the file
	holes  []int   // indices of the hole chunks, ascending
	size   int64

	lastOnce sync.Once
	last     map[uint32]int // block -> index of the last chunk in it (built by DontNeed)
}

// bytes is roughly the memory the layout holds.
func (l *layout) bytes() int64 {
	return int64(len(l.chunks))*int64(unsafe.Sizeof(metadata.ChunkRef{})) + int64(len(l.ends)+len(l.holes))*8
}

// Files with at least layoutCacheMinChunks chunks keep their layout in
// the image's layout cache, up to layoutCacheBytes in all: opening such a
// file again (each open(2) through FUSE, each request of an
// http.FileServer) then skips resolving its chunk list.
const (
	layoutCacheMinChunks = 1024
	layoutCacheBytes     = 64 << 20
)

// layoutCache holds the layouts of files with many chunks, by inode.
type layoutCache = lru.LRU[uint32, *layout]

// layoutOf returns the layout of regular file ino.
func (im *Image) layoutOf(ino uint32) (*layout, error) {
	if l, ok := im.layouts.Get(ino); ok {
		return l, nil
	}

	chunks, err := im.fs.FileChunks(ino)
	if err != nil {
		return nil, fmt.Errorf("%s: inode %d: %w", im.name, ino, err)
	}
	l := &layout{chunks: chunks, ends: make([]int64, len(chunks))}
	for i, c := range chunks {
		if c.Size > uint64(1<<62) || l.size+int64(c.Size) < l.size {
			return nil, fmt.Errorf("%s: inode %d: file size overflows", im.name, ino)
		}
		l.size += int64(c.Size)
		l.ends[i] = l.size
		if c.Hole && c.Size > 0 {
			l.holes = append(l.holes, i)
		}
	}
	if len(chunks) < layoutCacheMinChunks {
		return l, nil
	}
	// One opened meanwhile wins: the files open on ino share one layout.
	return im.layouts.Add(ino, l, l.bytes()), nil
}

// Size is the file size in bytes.
func (f *File) Size() int64 { return f.size }

// Inode is the image inode number of the file.
func (f *File) Inode() uint32 { return f.ino }

// Stat implements fs.File.
func (f *File) Stat() (fs.FileInfo, error) { return f.fi, nil }

// Close implements fs.File. Reads after Close fail.
func (f *File) Close() error {
	if f.closed.Swap(true) {
		return &fs.PathError{Op: "close", Path: f.path, Err: fs.ErrClosed}
	}
	return nil
}

// find returns the index of the chunk containing byte off (off < size).
func (f *File) find(off int64) int {
	return sort.Search(len(f.ends), func(i int) bool { return f.ends[i] > off })
}

func (f *File) start(i int) int64 {
	if i == 0 {
		return 0
	}
	return f.ends[i-1]
}

// ReadAt implements io.ReaderAt: holes read as zeros and a short read at
// the end of the file returns io.EOF.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	return f.ReadAtContext(context.Background(), p, off)
}

// ReadAtContext is ReadAt that stops waiting for a block being decompressed
// once ctx ends, returning ctx's error.
func (f *File) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if f.closed.Load() {
		return 0, &fs.PathError{Op: "read", Path: f.path, Err: fs.ErrClosed}
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.path, Err: errors.New("negative offset")}
	}
	if off >= f.size {
		return 0, io.EOF
	}
	n := 0
	var cached blockRef
	defer cached.release()
	for i := f.find(off); i < len(f.chunks) && n < len(p); i++ {
		c := f.chunks[i]
		within := off + int64(n) - f.start(i)
		want := min(int64(c.Size)-within, int64(len(p)-n))
		if want <= 0 {
			continue
		}
		dst := p[n : n+int(want)]
		if c.Hole {
			clear(dst)
		} else if err := f.im.readChunk(ctx, c.Block, uint64(c.Offset)+uint64(within), dst, &cached); err != nil {
			return n, err
		}
		n += int(want)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Read implements io.Reader. Each read also starts decompressing the
// blocks a sequential reader needs next, one per decode worker, so
// decompression runs on the pool while the caller works.
func (f *File) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.ReadAt(p, f.pos)
	f.pos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	if err == nil {
		f.Prefetch(f.pos, int64(max(f.im.blockSize, 1))*int64(max(f.im.workers, 1)+1))
	}
	return n, err
}

// maxPrefetchChunks bounds the chunks one Prefetch looks at, so a hint
// over a long range of tiny chunks stays cheap; the cache starts only a
// few loads at a time anyway.
const maxPrefetchChunks = 1024

// Prefetch hints that bytes [off, off+n) will be read soon: decompression
// of the blocks behind them starts in the background, as far as the
// cache's prefetch budget allows. It never blocks on decompression.
func (f *File) Prefetch(off, n int64) {
	if f.closed.Load() || off < 0 || n <= 0 || off >= f.size {
		return
	}
	end := off + n
	last := int64(-1) // a block prefetched whole
	first := f.find(off)
	for i := first; i < len(f.chunks) && i < first+maxPrefetchChunks && f.start(i) < end; i++ {
		c := f.chunks[i]
		if c.Hole || int64(c.Block) == last {
			continue
		}
		// The part of the chunk in the range, as bytes of its block.
		lo, hi := max(off, f.start(i)), min(end, f.ends[i])
		if f.im.prefetchRange(c.Block, uint64(c.Offset)+uint64(lo-f.start(i)), uint64(hi-lo)) {
			last = int64(c.Block)
		}
	}
}

// DontNeed hints that bytes [off, off+n) will not be read again soon, like
// posix_fadvise(POSIX_FADV_DONTNEED): a sequential reader has gone past
// them. The blocks of the chunks that end in the range (a reader passing
// a chunk in steps hints its last step), other than blocks the file comes
// back to later, become the first the cache gives up when it needs room
// (block.Cache.Spent). It never blocks on decompression.
func (f *File) DontNeed(off, n int64) {
	if f.closed.Load() || off < 0 || n <= 0 || off >= f.size {
		return
	}
	end := min(off+n, f.size)
	i := f.find(off) // the first chunk that ends after off
	if i >= len(f.chunks) || f.ends[i] > end {
		return
	}
	f.lastOnce.Do(func() {
		f.last = make(map[uint32]int)
		for j, c := range f.chunks {
			if !c.Hole {
				f.last[c.Block] = j
			}
		}
	})
	for ; i < len(f.chunks) && f.ends[i] <= end; i++ {
		c := f.chunks[i]
		// A block the file comes back to later (data it shares with
		// itself) is still needed.
		if c.Hole || f.last[c.Block] != i {
			continue
		}
		f.im.spentRange(c.Block, uint64(c.Offset), c.Size)
	}
}

// Seek implements io.Seeker.
func (f *File) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.pos
	case io.SeekEnd:
		offset += f.size
	default:
		return 0, &fs.PathError{Op: "seek", Path: f.path, Err: fs.ErrInvalid}
	}
	if offset < 0 {
		return 0, &fs.PathError{Op: "seek", Path: f.path, Err: errors.New("negative position")}
	}
	f.pos = offset
	return offset, nil
}

// SeekData returns the first offset >= off that holds data, like
// lseek(SEEK_DATA); syscall.ENXIO if there is none.
func (f *File) SeekData(off int64) (int64, error) {
	if off < 0 || off >= f.size {
		return 0, syscall.ENXIO
	}
	for i := f.find(off); i < len(f.chunks); i++ {
		c := f.chunks[i]
		if c.Hole || c.Size == 0 {
			continue
		}
		return max(off, f.start(i)), nil
	}
	return 0, syscall.ENXIO
}

// SeekHole returns the first offset >= off inside a hole, like
// lseek(SEEK_HOLE); the end of the file counts as a hole.
func (f *File) SeekHole(off int64) (int64, error) {
	if off < 0 || off >= f.size {
		return 0, syscall.ENXIO
	}
	i := f.find(off)
	if h, _ := slices.BinarySearch(f.holes, i); h < len(f.holes) {
		return max(off, f.start(f.holes[h])), nil
	}
	return f.size, nil
}

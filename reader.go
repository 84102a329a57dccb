package godwarfs

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"syscall"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/metadata"
)

// indexThreshold is the chunk count from which a file's cumulative offsets
// are computed once and kept, so random reads need a binary search instead
// of a linear scan.
const indexThreshold = 32

// fileLayout is the chunk list of a regular file with the end offset of
// each chunk (ends[i] = sum of sizes of chunks[0..i]).
type fileLayout struct {
	chunks []metadata.ChunkRef
	ends   []int64
	size   int64
}

func buildEnds(chunks []metadata.ChunkRef) ([]int64, error) {
	ends := make([]int64, len(chunks))
	var total int64
	for i, c := range chunks {
		if c.Size > uint64(1<<62) || total+int64(c.Size) < total {
			return nil, errors.New("file size overflows")
		}
		total += int64(c.Size)
		ends[i] = total
	}
	return ends, nil
}

// layout returns the chunk layout of regular file ino.
func (im *Image) layout(ino uint32) (*fileLayout, error) {
	chunks, err := im.fs.FileChunks(ino)
	if err != nil {
		return nil, fmt.Errorf("%s: inode %d: %w", im.name, ino, err)
	}
	if len(chunks) >= indexThreshold {
		im.idxMu.Lock()
		ends, ok := im.offIndex[ino]
		im.idxMu.Unlock()
		if !ok {
			ends, err = buildEnds(chunks)
			if err != nil {
				return nil, fmt.Errorf("%s: inode %d: %w", im.name, ino, err)
			}
			im.idxMu.Lock()
			im.offIndex[ino] = ends
			im.idxMu.Unlock()
		}
		return &fileLayout{chunks: chunks, ends: ends, size: ends[len(ends)-1]}, nil
	}
	ends, err := buildEnds(chunks)
	if err != nil {
		return nil, fmt.Errorf("%s: inode %d: %w", im.name, ino, err)
	}
	l := &fileLayout{chunks: chunks, ends: ends}
	if len(ends) > 0 {
		l.size = ends[len(ends)-1]
	}
	return l, nil
}

// find returns the index of the chunk containing byte off (off < size).
func (l *fileLayout) find(off int64) int {
	return sort.Search(len(l.ends), func(i int) bool { return l.ends[i] > off })
}

func (l *fileLayout) start(i int) int64 {
	if i == 0 {
		return 0
	}
	return l.ends[i-1]
}

// readAt implements io.ReaderAt semantics over the layout.
func (im *Image) readAt(ino uint32, l *fileLayout, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s: inode %d: negative offset", im.name, ino)
	}
	if off >= l.size {
		return 0, io.EOF
	}
	n := 0
	for i := l.find(off); i < len(l.chunks) && n < len(p); i++ {
		c := l.chunks[i]
		cs := l.start(i)
		within := off + int64(n) - cs
		want := int64(c.Size) - within
		if rest := int64(len(p) - n); want > rest {
			want = rest
		}
		if want <= 0 {
			continue
		}
		dst := p[n : n+int(want)]
		if c.Hole {
			clear(dst)
		} else if err := im.readChunk(c.Block, uint64(c.Offset)+uint64(within), dst); err != nil {
			return n, err
		}
		n += int(want)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// ReadAt reads file content of inode ino; holes read as zeros and a short
// read at the end returns io.EOF, as io.ReaderAt requires.
func (im *Image) ReadAt(ino uint32, p []byte, off int64) (int, error) {
	l, err := im.layout(ino)
	if err != nil {
		return 0, err
	}
	return im.readAt(ino, l, p, off)
}

// FileReader reads one regular file. ReadAt is safe for concurrent use;
// Read and Seek share a position and are not.
type FileReader struct {
	im  *Image
	ino uint32
	l   *fileLayout
	pos int64
}

// NewReader returns a reader for regular file ino.
func (im *Image) NewReader(ino uint32) (*FileReader, error) {
	l, err := im.layout(ino)
	if err != nil {
		return nil, err
	}
	return &FileReader{im: im, ino: ino, l: l}, nil
}

// Size is the file size in bytes.
func (r *FileReader) Size() int64 { return r.l.size }

// ReadAt implements io.ReaderAt.
func (r *FileReader) ReadAt(p []byte, off int64) (int, error) {
	return r.im.readAt(r.ino, r.l, p, off)
}

// Read implements io.Reader.
func (r *FileReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := r.im.readAt(r.ino, r.l, p, r.pos)
	r.pos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	r.prefetch()
	return n, err
}

// prefetch starts decompressing the next uncached block a sequential
// reader will need, so it overlaps with the caller's processing.
func (r *FileReader) prefetch() {
	if r.pos >= r.l.size {
		return
	}
	// Look a few chunks ahead only: this is a hint, not a read-ahead plan.
	for i, end := r.l.find(r.pos), 0; i < len(r.l.chunks) && end < 8; i, end = i+1, end+1 {
		c := r.l.chunks[i]
		if c.Hole || int64(c.Block) >= int64(len(r.im.blocks)) || r.im.blocks[c.Block].Compression == block.CompNone {
			continue
		}
		if !r.im.cache.Contains(int(c.Block)) {
			r.im.cache.Prefetch(int(c.Block))
			return
		}
	}
}

// Seek implements io.Seeker.
func (r *FileReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += r.pos
	case io.SeekEnd:
		offset += r.l.size
	default:
		return 0, errors.New("invalid whence")
	}
	if offset < 0 {
		return 0, errors.New("negative position")
	}
	r.pos = offset
	return offset, nil
}

// SeekData returns the first offset >= off that holds data, like
// lseek(SEEK_DATA); ENXIO if there is none.
func (r *FileReader) SeekData(off int64) (int64, error) {
	if off < 0 || off >= r.l.size {
		return 0, syscall.ENXIO
	}
	for i := r.l.find(off); i < len(r.l.chunks); i++ {
		c := r.l.chunks[i]
		if c.Hole || c.Size == 0 {
			continue
		}
		return max(off, r.l.start(i)), nil
	}
	return 0, syscall.ENXIO
}

// SeekHole returns the first offset >= off inside a hole, like
// lseek(SEEK_HOLE); the end of the file counts as a hole.
func (r *FileReader) SeekHole(off int64) (int64, error) {
	if off < 0 || off >= r.l.size {
		return 0, syscall.ENXIO
	}
	for i := r.l.find(off); i < len(r.l.chunks); i++ {
		c := r.l.chunks[i]
		if c.Hole && c.Size > 0 {
			return max(off, r.l.start(i)), nil
		}
	}
	return r.l.size, nil
}

// Chunks returns the file's chunk list (shared, do not modify).
func (r *FileReader) Chunks() []metadata.ChunkRef { return r.l.chunks }

package tarinput

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/godwarfs/godwarfs/internal/mmap"
)

// spill holds file data decoded from a compressed archive or a pipe, so
// that the build can read it again at random: in memory up to limit
// bytes, then in an unlinked temporary file in dir. It is appended to
// while the archive is read, and only read afterwards.
type spill struct {
	dir   string
	limit int64
	mem   []byte
	f     *os.File
	name  string // the file's name while it is still to be removed
	size  int64
	buf   []byte
}

// grow makes room for n more bytes, moving to a file when memory would
// exceed the limit.
func (s *spill) grow(n int64) error {
	if s.f != nil || s.size+n <= s.limit {
		return nil
	}
	f, err := os.CreateTemp(s.dir, "mkdwarfs-tar-*")
	if err != nil {
		return fmt.Errorf("creating the spill file: %w", err)
	}
	// Unlinked at once where the system allows it: nothing is left
	// behind, whatever happens. Windows refuses to remove an open file;
	// there it goes when it is closed.
	if os.Remove(f.Name()) != nil {
		s.name = f.Name()
	}
	if _, err := f.WriteAt(s.mem, 0); err != nil {
		f.Close()
		s.remove()
		return fmt.Errorf("writing the spill file: %w", err)
	}
	s.f, s.mem = f, nil
	// The memory held so far would otherwise stay in the peak of what
	// is left of the build.
	debug.FreeOSMemory()
	return nil
}

// memGrow gives mem room for n bytes, never more than the limit.
func (s *spill) memGrow(n int64) {
	if int64(cap(s.mem)) >= n {
		return
	}
	m := make([]byte, len(s.mem), min(max(2*int64(cap(s.mem)), n, 64<<10), max(s.limit, n)))
	copy(m, s.mem)
	s.mem = m
}

// writeAt stores p at off (at or after the current end; bytes skipped
// read as zeros).
func (s *spill) writeAt(p []byte, off int64) error {
	if err := s.grow(off + int64(len(p)) - s.size); err != nil {
		return err
	}
	if s.f != nil {
		if _, err := s.f.WriteAt(p, off); err != nil {
			return fmt.Errorf("writing the spill file: %w", err)
		}
	} else {
		s.memGrow(off + int64(len(p)))
		s.mem = s.mem[:off+int64(len(p))]
		copy(s.mem[off:], p)
	}
	s.size = max(s.size, off+int64(len(p)))
	return nil
}

// extend makes the spill n bytes long at least (trailing holes).
func (s *spill) extend(n int64) error {
	if n <= s.size {
		return nil
	}
	if err := s.grow(n - s.size); err != nil {
		return err
	}
	if s.f != nil {
		if err := s.f.Truncate(n); err != nil {
			return fmt.Errorf("writing the spill file: %w", err)
		}
	} else {
		s.memGrow(n)
		s.mem = s.mem[:n]
	}
	s.size = n
	return nil
}

func (s *spill) chunk() []byte {
	if s.buf == nil {
		s.buf = make([]byte, 1<<20)
	}
	return s.buf
}

// errShort is a member whose data ends before its size.
var errShort = errors.New("data ends early (archive truncated)")

// copyFrom appends n bytes of r and returns where they start.
func (s *spill) copyFrom(r io.Reader, n int64) (int64, error) {
	off := s.size
	buf := s.chunk()
	for done := int64(0); done < n; {
		k, err := io.ReadFull(r, buf[:min(int64(len(buf)), n-done)])
		if k > 0 {
			if werr := s.writeAt(buf[:k], off+done); werr != nil {
				return 0, werr
			}
			done += int64(k)
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return 0, errShort
			}
			return 0, err
		}
	}
	return off, nil
}

// holeGrain is the granularity at which a sparse member's zeros become
// holes: the page size, the unit in which file systems report holes.
const holeGrain = 4096

var zeros [holeGrain]byte

// copySparse appends the n logical bytes of a sparse member, leaving its
// all-zero runs of whole grains as holes, and returns where the bytes
// start and their data extents (relative to the file).
func (s *spill) copySparse(r io.Reader, n int64) (int64, []extent, error) {
	// Align the start so that holes in the spill file are whole pages.
	off := (s.size + holeGrain - 1) &^ (holeGrain - 1)
	if err := s.extend(off); err != nil {
		return 0, nil, err
	}
	buf := s.chunk()
	ext := []extent{}
	for pos := int64(0); pos < n; {
		k, err := io.ReadFull(r, buf[:min(int64(len(buf)), n-pos)])
		for i := 0; i < k; i += holeGrain {
			g := buf[i:min(i+holeGrain, k)]
			if bytes.Equal(g, zeros[:len(g)]) {
				continue
			}
			at := pos + int64(i)
			if l := len(ext); l > 0 && ext[l-1].off+ext[l-1].len == at {
				ext[l-1].len += int64(len(g))
			} else {
				ext = append(ext, extent{at, int64(len(g))})
			}
			if werr := s.writeAt(g, off+at); werr != nil {
				return 0, nil, werr
			}
		}
		pos += int64(k)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return 0, nil, errShort
			}
			return 0, nil, err
		}
	}
	if err := s.extend(off + n); err != nil {
		return 0, nil, err
	}
	return off, ext, nil
}

type extent struct{ off, len int64 }

// ReadAt reads the spilled bytes.
func (s *spill) ReadAt(p []byte, off int64) (int, error) {
	if s.f != nil {
		return s.f.ReadAt(p, off)
	}
	if off >= int64(len(s.mem)) {
		return 0, io.EOF
	}
	n := copy(p, s.mem[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Map hands out spilled bytes without a copy.
func (s *spill) Map(off, n int64) ([]byte, func(), error) {
	if s.f != nil {
		return mapFile(s.f, off, n)
	}
	if off+n > int64(len(s.mem)) {
		return nil, nil, io.ErrUnexpectedEOF
	}
	return s.mem[off : off+n : off+n], func() {}, nil
}

func (s *spill) close() error {
	s.mem = nil
	var err error
	if s.f != nil {
		err = s.f.Close()
		s.f = nil
	}
	if rerr := s.remove(); err == nil {
		err = rerr
	}
	return err
}

// remove removes the spill file if it could not be removed while open.
func (s *spill) remove() error {
	if s.name == "" {
		return nil
	}
	name := s.name
	s.name = ""
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("removing the spill file: %w", err)
	}
	return nil
}

// archiveFile is a plain tar archive whose members are read in place.
type archiveFile struct{ f *os.File }

func (a archiveFile) ReadAt(p []byte, off int64) (int, error) { return a.f.ReadAt(p, off) }

func (a archiveFile) Map(off, n int64) ([]byte, func(), error) { return mapFile(a.f, off, n) }

// mapFile maps [off, off+n) of f read-only; where files cannot be mapped
// it fails with mmap.ErrUnsupported and the caller reads instead.
func mapFile(f *os.File, off, n int64) ([]byte, func(), error) {
	r, err := mmap.Map(f, off, n)
	if err != nil {
		return nil, nil, err
	}
	return r.Bytes(), func() { _ = r.Unmap() }, nil
}

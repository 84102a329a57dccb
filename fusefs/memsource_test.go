//go:build linux && !386 && !arm

package fusefs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/fusefs"
)

// memSource is an in-memory fusefs.Source, so the driver can be tested
// without depending on the image reader.
type memSource struct {
	attrs    []fusefs.Attr
	children map[uint32][]fusefs.DirEntry
	data     map[uint32][]byte
	holes    map[uint32][][2]int64 // sorted [start,end) hole ranges
	links    map[uint32]string

	// stall marks inodes whose reads wait for the request's context to
	// end; each such read signals stalled when it starts waiting and
	// reports ctx.Err() on interrupted.
	stall       map[uint32]bool
	stalled     chan struct{}
	interrupted chan error

	// hold marks inodes whose reads wait in the source: each such read
	// sends on entered, then waits for a value on release. inflight and
	// peak count the reads waiting there.
	hold           map[uint32]bool
	entered        chan struct{}
	release        chan struct{}
	inflight, peak int

	mu         sync.Mutex
	prefetches int
	tidies     int
	opens      int
}

func newMemSource() *memSource {
	m := &memSource{
		children: map[uint32][]fusefs.DirEntry{},
		data:     map[uint32][]byte{},
		holes:    map[uint32][][2]int64{},
		links:    map[uint32]string{},
		stall:    map[uint32]bool{},
		hold:     map[uint32]bool{},
		entered:  make(chan struct{}, 64),
		release:  make(chan struct{}),

		stalled:     make(chan struct{}, 16),
		interrupted: make(chan error, 16),
	}
	m.attrs = append(m.attrs, fusefs.Attr{Mode: syscall.S_IFDIR | 0o755, Nlink: 2, Mtime: fusefs.Timespec{Sec: 1000, Nsec: 5}})
	return m
}

func (m *memSource) add(dir uint32, name string, a fusefs.Attr) uint32 {
	ino := uint32(len(m.attrs))
	m.attrs = append(m.attrs, a)
	m.link(dir, name, ino)
	return ino
}

func (m *memSource) link(dir uint32, name string, ino uint32) {
	c := append(m.children[dir], fusefs.DirEntry{Name: name, Ino: ino})
	sort.Slice(c, func(i, j int) bool { return c[i].Name < c[j].Name })
	m.children[dir] = c
}

func (m *memSource) mkdir(dir uint32, name string) uint32 {
	return m.add(dir, name, fusefs.Attr{Mode: syscall.S_IFDIR | 0o755, Nlink: 2})
}

func (m *memSource) file(dir uint32, name string, data []byte) uint32 {
	ino := m.add(dir, name, fusefs.Attr{Mode: syscall.S_IFREG | 0o644, Nlink: 1, Size: int64(len(data)), UID: 1234, GID: 5678, Mtime: fusefs.Timespec{Sec: 1796203486, Nsec: 123456789}})
	m.data[ino] = data
	return ino
}

func (m *memSource) Root() uint32 { return 0 }

func (m *memSource) Stat(ino uint32) (fusefs.Attr, error) {
	if int(ino) >= len(m.attrs) {
		return fusefs.Attr{}, fmt.Errorf("inode %d: %w", ino, syscall.ENOENT)
	}
	return m.attrs[ino], nil
}

func (m *memSource) ReadDir(dir uint32) ([]fusefs.DirEntry, error) {
	return m.children[dir], nil
}

func (m *memSource) Lookup(dir uint32, name string) (uint32, bool) {
	for _, e := range m.children[dir] {
		if e.Name == name {
			return e.Ino, true
		}
	}
	return 0, false
}

func (m *memSource) Readlink(ino uint32) (string, error) {
	s, ok := m.links[ino]
	if !ok {
		return "", syscall.EINVAL
	}
	return s, nil
}

func (m *memSource) Open(ino uint32) (fusefs.File, error) {
	if int(ino) >= len(m.attrs) {
		return nil, fmt.Errorf("inode %d: %w", ino, syscall.ENOENT)
	}
	m.mu.Lock()
	m.opens++
	m.mu.Unlock()
	return &memFile{m: m, data: m.data[ino], holes: m.holes[ino], stall: m.stall[ino], hold: m.hold[ino]}, nil
}

// memFile is an open file of a memSource.
type memFile struct {
	m     *memSource
	data  []byte
	holes [][2]int64
	stall bool
	hold  bool
}

func (f *memFile) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if f.hold && off == 0 {
		m := f.m
		m.mu.Lock()
		m.inflight++
		m.peak = max(m.peak, m.inflight)
		m.mu.Unlock()
		m.entered <- struct{}{}
		<-m.release
		m.mu.Lock()
		m.inflight--
		m.mu.Unlock()
	}
	if f.stall {
		f.m.stalled <- struct{}{}
		<-ctx.Done()
		f.m.interrupted <- ctx.Err()
		return 0, ctx.Err()
	}
	if off >= int64(len(f.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) SeekData(off int64) (int64, error) {
	size := int64(len(f.data))
	for _, h := range f.holes {
		if off < h[0] {
			return off, nil
		}
		if off < h[1] {
			off = h[1]
		}
	}
	if off >= size {
		return 0, syscall.ENXIO
	}
	return off, nil
}

func (f *memFile) SeekHole(off int64) (int64, error) {
	for _, h := range f.holes {
		if off < h[1] {
			return max(off, h[0]), nil
		}
	}
	return int64(len(f.data)), nil
}

func (f *memFile) DontNeed(off, n int64) {}

func (f *memFile) Prefetch(off, n int64) {
	f.m.mu.Lock()
	f.m.prefetches++
	f.m.mu.Unlock()
}

func (m *memSource) Tidy(time.Duration) {
	m.mu.Lock()
	m.tidies++
	m.mu.Unlock()
}

func (m *memSource) Info() fusefs.FsInfo {
	return fusefs.FsInfo{BlockSize: 1 << 16, TotalSize: 12345, InodeCount: uint64(len(m.attrs))}
}

func (m *memSource) CacheStats() fusefs.CacheStats { return fusefs.CacheStats{Capacity: 1 << 20} }

func (m *memSource) InodeInfo(ino uint32) ([]byte, error) {
	a, err := m.Stat(ino)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"mode": a.Mode, "uid": a.UID})
}

// paths lists all paths below the root, for walking tests.
func (m *memSource) paths() map[string]uint32 {
	out := map[string]uint32{}
	var walk func(dir uint32, prefix string)
	walk = func(dir uint32, prefix string) {
		for _, e := range m.children[dir] {
			p := path.Join(prefix, e.Name)
			out[p] = e.Ino
			if m.attrs[e.Ino].Mode&syscall.S_IFMT == syscall.S_IFDIR {
				walk(e.Ino, p)
			}
		}
	}
	walk(0, "")
	return out
}

// holdFiles adds n files h0, h1, ... to the root of m whose reads wait in
// the source (see hold).
func (m *memSource) holdFiles(n int) {
	for i := range n {
		ino := m.file(0, fmt.Sprintf("h%d", i), []byte(fmt.Sprintf("held %d", i)))
		m.hold[ino] = true
	}
}

// readHeld reads the n files of holdFiles under dir, each in a goroutine,
// and sends each read's error (or nil) on the channel it returns.
func readHeld(dir string, n int) <-chan error {
	errs := make(chan error, n)
	for i := range n {
		go func() {
			b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("h%d", i)))
			if err == nil && string(b) != fmt.Sprintf("held %d", i) {
				err = fmt.Errorf("h%d: %q", i, b)
			}
			errs <- err
		}()
	}
	return errs
}

// releaseHeld lets the n reads of readHeld go, one at a time (so that
// they also end when they reach the source one by one), and reports
// their errors.
func (m *memSource) releaseHeld(t *testing.T, errs <-chan error, n int) {
	t.Helper()
	go func() {
		for range n {
			m.release <- struct{}{}
		}
	}()
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

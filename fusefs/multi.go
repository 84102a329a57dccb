//go:build !windows && !(linux && (386 || arm))

package fusefs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/gofuse/fuse"
)

// XattrControl, on the root of a mount of several images, is the path of
// the driver's control socket (when it has one).
const XattrControl = "user.dwarfs.driver.control"

// MultiConfig controls a mount of several images.
type MultiConfig struct {
	Config
	// SharedStats returns the counters of the block cache the images
	// share, for perfmon (nil: the sum of the images' own).
	SharedStats func() CacheStats
}

// Multi is one FUSE mount of several images: its root is a directory of
// the driver's own, and each image appears there under a name, as a
// subtree served by the same code as a mount of the image alone. Images
// can be added and removed while the mount serves requests.
//
// Removal detaches lazily, like umount -l: the name leaves the listing at
// once (the kernel is told the entry was deleted, as by unlink), while
// files and directories of the image that are open keep working; the
// image is closed when the last of them is closed. Other requests for a
// removed image (relative lookups from a working directory in it) are
// answered while the image is still open, unless the kernel has marked
// the directory deleted, and fail with ENOENT after that.
type Multi struct {
	cfg    MultiConfig
	opts   MountOptions // with defaults applied
	stderr io.Writer
	owner  uint32 // uid and gid that mounted
	group  uint32
	perf   perfCounters // requests of the whole mount
	pid    int

	mu       sync.RWMutex
	byName   map[string]*member
	bySlot   map[uint64]*member // by base, until closed
	order    []*member          // listed images, in the order added
	nextSlot uint64
	mtime    time.Time // last change of the listing
	srv      *fuse.Server
	ready    bool // mounted: notify the kernel of changes
	shutdown bool
	memLimit int64
	control  string // see SetControl
}

// SetControl sets the control socket's path, shown in XattrControl on
// the root.
func (m *Multi) SetControl(path string) {
	m.mu.Lock()
	m.control = path
	m.mu.Unlock()
}

// member is one image of a Multi.
type member struct {
	name   string
	base   uint64 // slot << 32
	d      *driver
	raw    *rawFS
	fs     fuse.RawFileSystem // raw, counting its requests
	closer io.Closer
	added  time.Time

	// refs counts requests in progress and open handles; -1 once the
	// image is closed. handles counts the open handles alone.
	refs     atomic.Int64
	handles  atomic.Int64
	detached atomic.Bool
	done     chan struct{} // closed once the image is closed
	closeErr error
}

// acquire takes a reference unless the image is closed.
func (mb *member) acquire() bool {
	for {
		r := mb.refs.Load()
		if r < 0 {
			return false
		}
		if mb.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// release drops a reference; the last one of a detached image closes it.
func (mb *member) release(m *Multi) {
	if mb.refs.Add(-1) == 0 && mb.detached.Load() {
		m.tryClose(mb)
	}
}

// NewMulti returns a mount of no images yet; Add images, then Mount it.
func NewMulti(cfg MultiConfig) *Multi {
	stderr := cfg.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	return &Multi{
		cfg: cfg, opts: cfg.Options.withDefaults(), stderr: stderr,
		owner: uint32(os.Geteuid()), group: uint32(os.Getegid()), pid: os.Getpid(),
		byName: map[string]*member{}, bySlot: map[uint64]*member{},
		nextSlot: 1, mtime: time.Now(),
	}
}

// ValidName checks a name an image is to appear under: a single path
// component that is not "." or "..", without NUL, of at most 255 bytes.
func ValidName(name string) error {
	switch {
	case name == "":
		return errors.New("empty image name")
	case name == "." || name == "..":
		return fmt.Errorf("image name %q is not allowed", name)
	case strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("image name %q contains a slash or NUL", name)
	case len(name) > 255:
		return fmt.Errorf("image name %.20q... is longer than 255 bytes", name)
	}
	return nil
}

// Add makes src appear under name; closer is closed when the image is
// removed and no longer in use, or the mount ends. On error the caller
// keeps src and closer.
func (m *Multi) Add(name string, src Source, closer io.Closer) error {
	if err := ValidName(name); err != nil {
		return err
	}
	if n := src.Info().InodeCount; n >= slotMask {
		return fmt.Errorf("image %s: %d inodes are too many for a mount of several images", name, n)
	}
	m.mu.Lock()
	if m.shutdown {
		m.mu.Unlock()
		return fmt.Errorf("image %s: the mount has ended", name)
	}
	if _, ok := m.byName[name]; ok {
		m.mu.Unlock()
		return fmt.Errorf("image name %q is already in use", name)
	}
	if m.nextSlot >= slotMask {
		m.mu.Unlock()
		return errors.New("no image slots left in this mount")
	}
	base := m.nextSlot << 32
	d, err := newDriver(src, m.opts, m.stderr, base)
	if err != nil {
		m.mu.Unlock()
		return fmt.Errorf("image %s: %w", name, err)
	}
	m.nextSlot++
	raw := newRawFS(d)
	mb := &member{
		name: name, base: base, d: d, raw: raw, closer: closer, added: time.Now(),
		fs:   countingFS{RawFileSystem: raw, n: &d.perf.ops},
		done: make(chan struct{}),
	}
	d.ready.Store(m.ready)
	m.byName[name] = mb
	m.bySlot[base] = mb
	m.order = append(m.order, mb)
	m.mtime = time.Now()
	srv, ready := m.srv, m.ready
	m.mu.Unlock()
	if ready {
		// A lookup of the name before it existed left a negative
		// entry in the kernel's cache.
		srv.EntryNotify(fuse.FUSE_ROOT_ID, name)
		srv.InodeNotify(fuse.FUSE_ROOT_ID, -1, 0)
		m.updateMemoryLimit()
	}
	return nil
}

// Remove takes the image name out of the mount (see Multi for what
// happens to its open files) and returns how many of its files and
// directories are still open; closed is closed once the image is.
func (m *Multi) Remove(name string) (open int64, closed <-chan struct{}, err error) {
	m.mu.Lock()
	mb, ok := m.byName[name]
	if !ok {
		m.mu.Unlock()
		return 0, nil, fmt.Errorf("no image named %q in the mount: %w", name, syscall.ENOENT)
	}
	delete(m.byName, name)
	m.order = slices.DeleteFunc(m.order, func(x *member) bool { return x == mb })
	m.mtime = time.Now()
	srv, ready := m.srv, m.ready
	m.mu.Unlock()
	if ready {
		// Like unlink: the kernel drops the entry (and tells inotify);
		// ENOENT only means it had none cached.
		srv.DeleteNotify(fuse.FUSE_ROOT_ID, mb.d.nodeID(mb.d.root), name)
		srv.InodeNotify(fuse.FUSE_ROOT_ID, -1, 0)
	}
	mb.detached.Store(true)
	m.tryClose(mb)
	return mb.handles.Load(), mb.done, nil
}

// tryClose closes a detached image if nothing uses it.
func (m *Multi) tryClose(mb *member) {
	if !mb.refs.CompareAndSwap(0, -1) {
		return
	}
	m.mu.Lock()
	delete(m.bySlot, mb.base)
	m.mu.Unlock()
	if mb.closer != nil {
		mb.closeErr = mb.closer.Close()
	}
	close(mb.done)
	if m.cfg.LimitMemory {
		m.updateMemoryLimit()
	}
}

// MultiImage describes an image of a Multi.
type MultiImage struct {
	Name     string
	Detached bool  // removed, but files of it are still open
	Open     int64 // files and directories of it open
	Source   Source
}

// Images lists the images in the order they were added, then those
// removed but still open.
func (m *Multi) Images() []MultiImage {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []MultiImage
	for _, mb := range m.order {
		out = append(out, MultiImage{Name: mb.name, Open: mb.handles.Load(), Source: mb.d.src})
	}
	var gone []*member
	for _, mb := range m.bySlot {
		if mb.detached.Load() {
			gone = append(gone, mb)
		}
	}
	slices.SortFunc(gone, func(a, b *member) int { return int(a.base>>32) - int(b.base>>32) })
	for _, mb := range gone {
		out = append(out, MultiImage{Name: mb.name, Detached: true, Open: mb.handles.Load(), Source: mb.d.src})
	}
	return out
}

// Mount mounts the images added so far at dir; more may be added and
// removed after. A Multi is mounted once.
func (m *Multi) Mount(dir string) (*Server, error) {
	if err := checkMountPoint(dir); err != nil {
		return nil, err
	}
	raw := countingFS{RawFileSystem: &multiFS{readOnlyFS: readOnlyFS{fuse.NewDefaultRawFileSystem()}, m: m}, n: &m.perf.ops}
	s, err := serve(dir, raw, m.cfg.Config, m.opts, m.markReady)
	if err != nil {
		return nil, err
	}
	s.multi = m
	s.report, s.tidy, s.onDone = m.perfReport, m.tidy, m.close
	if m.cfg.LimitMemory {
		collectOpenGarbage()
		m.updateMemoryLimit()
		if os.Getenv("GOGC") == "" {
			debug.SetGCPercent(mountGCPercent)
		}
		_ = dropExecutablePages() // best effort, as for one image
	}
	s.start()
	return s, nil
}

// markReady runs once the mount is complete.
func (m *Multi) markReady() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ready = true
	for _, mb := range m.bySlot {
		mb.d.ready.Store(true)
	}
}

// close closes every image once the mount has ended.
func (m *Multi) close() {
	m.mu.Lock()
	m.shutdown, m.ready = true, false
	all := make([]*member, 0, len(m.bySlot))
	for _, mb := range m.bySlot {
		all = append(all, mb)
	}
	m.byName, m.order = map[string]*member{}, nil
	m.mu.Unlock()
	for _, mb := range all {
		// The connection is gone: nothing is open any more.
		mb.detached.Store(true)
		mb.refs.Store(0)
		m.tryClose(mb)
	}
}

// tidy trims the block cache of every image.
func (m *Multi) tidy(maxAge time.Duration) {
	m.mu.RLock()
	srcs := make([]Source, 0, len(m.bySlot))
	for _, mb := range m.bySlot {
		srcs = append(srcs, mb.d.src)
	}
	m.mu.RUnlock()
	for _, s := range srcs {
		s.Tidy(maxAge)
	}
}

// updateMemoryLimit sets the soft memory limit (with LimitMemory) for
// the images mounted now: as for one image (see limitMemory), with the
// blocks being decoded counted once for the shared pool at the largest
// block size.
func (m *Multi) updateMemoryLimit() {
	if !m.cfg.LimitMemory || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	m.mu.RLock()
	var bs, workers int64
	var capacity int64
	onHeap := false
	for _, mb := range m.bySlot {
		info := mb.d.src.Info()
		bs = max(bs, int64(info.BlockSize))
		workers = max(workers, int64(info.Workers))
		capacity = max(capacity, mb.d.src.CacheStats().Capacity)
		onHeap = onHeap || !block.OffHeap(int(info.BlockSize))
	}
	m.mu.RUnlock()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	limit := int64(ms.HeapAlloc) + (max(workers, 1)+1)*bs + memSlack
	if onHeap {
		limit += capacity
	}
	debug.SetMemoryLimit(limit)
	m.mu.Lock()
	m.memLimit = limit
	m.mu.Unlock()
}

// perfReport is the perfmon report of the whole mount: its requests, the
// shared block cache and a line per image.
func (m *Multi) perfReport() string {
	var b strings.Builder
	b.WriteString("[dwarfs perfmon]\n")
	m.perf.ops.report(&b)
	imgs := m.Images()
	var total CacheStats
	for _, im := range imgs {
		cs := im.Source.CacheStats()
		total.Hits += cs.Hits
		total.Misses += cs.Misses
		total.Decoded += cs.Decoded
		total.DecodedBytes += cs.DecodedBytes
		total.Evictions += cs.Evictions
		total.CurrentBytes += cs.CurrentBytes
		total.Capacity = cs.Capacity
	}
	if m.cfg.SharedStats != nil {
		total = m.cfg.SharedStats()
	}
	fmt.Fprintf(&b, "images: %d\n", len(imgs))
	fmt.Fprintf(&b, "block cache (all images): %d hits, %d misses, %d blocks decoded (%d bytes), %d evictions\n",
		total.Hits, total.Misses, total.Decoded, total.DecodedBytes, total.Evictions)
	fmt.Fprintf(&b, "block cache size (all images): current %d, loading %d, held by reads %d, peak %d, capacity %d bytes\n",
		total.CurrentBytes, total.LoadingBytes, total.PinnedBytes, total.PeakBytes, total.Capacity)
	for _, im := range imgs {
		cs := im.Source.CacheStats()
		state := ""
		if im.Detached {
			state = " (removed, still open)"
		}
		fmt.Fprintf(&b, "image %s%s: %d open, block cache %d hits, %d misses, %d bytes cached\n",
			im.Name, state, im.Open, cs.Hits, cs.Misses, cs.CurrentBytes)
	}
	m.mu.RLock()
	if m.memLimit > 0 {
		fmt.Fprintf(&b, "memory limit: %d bytes\n", m.memLimit)
	}
	m.mu.RUnlock()
	return b.String()
}

// multiFS serves a Multi: the root directory itself, everything else by
// the image whose slot the node id carries.
type multiFS struct {
	readOnlyFS
	m *Multi
}

func (f *multiFS) String() string { return "dwarfs" }

func (f *multiFS) Init(s *fuse.Server) {
	f.m.mu.Lock()
	f.m.srv = s
	f.m.mu.Unlock()
}

// enter returns the image of node id with a reference taken.
func (m *Multi) enter(id uint64) (*member, fuse.Status) {
	m.mu.RLock()
	mb := m.bySlot[id&^slotMask]
	m.mu.RUnlock()
	if mb == nil || !mb.acquire() {
		return nil, fuse.ENOENT
	}
	return mb, fuse.OK
}

func isRoot(id uint64) bool { return id == fuse.FUSE_ROOT_ID }

// denied implements allow_root for the root directory.
func (m *Multi) denied(c *fuse.Caller) bool {
	return m.opts.AllowRoot && !m.opts.AllowOther && c.Uid != 0 && c.Uid != m.owner
}

// rootAttr fills the attributes of the root directory.
func (m *Multi) rootAttr(out *fuse.Attr) {
	m.mu.RLock()
	n, mtime := len(m.order), m.mtime
	m.mu.RUnlock()
	out.Ino = fuse.FUSE_ROOT_ID
	out.Mode = syscall.S_IFDIR | 0o555
	out.Nlink = uint32(2 + n)
	out.Uid, out.Gid = m.owner, m.group
	if m.opts.UID != nil {
		out.Uid = *m.opts.UID
	}
	if m.opts.GID != nil {
		out.Gid = *m.opts.GID
	}
	out.Blksize = uint32(min(max(m.opts.BlockSize, 512), 1<<30))
	sec, nsec := uint64(mtime.Unix()), uint32(mtime.Nanosecond())
	out.Atime, out.Atimensec = sec, nsec
	out.Mtime, out.Mtimensec = sec, nsec
	out.Ctime, out.Ctimensec = sec, nsec
}

// rootTimeout is how long the kernel may keep the root's attributes;
// changes are also notified, so this only covers a lost notification.
const rootTimeout = time.Second

func (f *multiFS) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	if !isRoot(h.NodeId) {
		return f.held(h.NodeId, func(fs fuse.RawFileSystem) fuse.Status { return fs.Lookup(cancel, h, name, out) })
	}
	m := f.m
	if m.denied(&h.Caller) {
		return fuse.EACCES
	}
	m.mu.RLock()
	mb := m.byName[name]
	m.mu.RUnlock()
	if mb == nil || !mb.acquire() {
		// Negative entries are cached; Add invalidates them.
		*out = fuse.EntryOut{}
		out.SetEntryTimeout(kernelTimeout)
		return fuse.OK
	}
	defer mb.release(m)
	d := mb.d
	a, err := d.src.Stat(d.root)
	if err != nil {
		return d.status(err)
	}
	d.fillEntry(d.root, a, out)
	return fuse.OK
}

// held runs op on the image of node id, holding the image for the call.
func (f *multiFS) held(id uint64, op func(fuse.RawFileSystem) fuse.Status) fuse.Status {
	mb, st := f.m.enter(id)
	if !st.Ok() {
		return st
	}
	defer mb.release(f.m)
	return op(mb.fs)
}

// opened runs op, which opens a handle, on the image of node id; the
// image stays held for the handle if op succeeds.
func (f *multiFS) opened(id uint64, op func(fuse.RawFileSystem) fuse.Status) fuse.Status {
	mb, st := f.m.enter(id)
	if !st.Ok() {
		return st
	}
	if st = op(mb.fs); st.Ok() {
		mb.handles.Add(1)
		return st
	}
	mb.release(f.m)
	return st
}

func (f *multiFS) Forget(nodeid, nlookup uint64) {}

func (f *multiFS) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	if !isRoot(in.NodeId) {
		return f.held(in.NodeId, func(fs fuse.RawFileSystem) fuse.Status { return fs.GetAttr(cancel, in, out) })
	}
	if f.m.denied(&in.Caller) {
		return fuse.EACCES
	}
	f.m.rootAttr(&out.Attr)
	out.SetTimeout(rootTimeout)
	return fuse.OK
}

func (f *multiFS) Statx(cancel <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	if !isRoot(in.NodeId) {
		return f.held(in.NodeId, func(fs fuse.RawFileSystem) fuse.Status { return fs.Statx(cancel, in, out) })
	}
	if f.m.denied(&in.Caller) {
		return fuse.EACCES
	}
	var at fuse.Attr
	f.m.rootAttr(&at)
	fillStatx(&out.Statx, &at)
	out.SetTimeout(rootTimeout)
	return fuse.OK
}

func (f *multiFS) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	if !isRoot(in.NodeId) {
		return f.held(in.NodeId, func(fs fuse.RawFileSystem) fuse.Status { return fs.Access(cancel, in) })
	}
	if f.m.denied(&in.Caller) {
		return fuse.EACCES
	}
	var at fuse.Attr
	f.m.rootAttr(&at)
	if !hasAccess(in.Uid, in.Gid, at.Uid, at.Gid, at.Mode, in.Mask) {
		return fuse.EACCES
	}
	return fuse.OK
}

func (f *multiFS) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	if isRoot(h.NodeId) {
		return nil, fuse.EINVAL
	}
	mb, st := f.m.enter(h.NodeId)
	if !st.Ok() {
		return nil, st
	}
	defer mb.release(f.m)
	return mb.fs.Readlink(cancel, h)
}

func (f *multiFS) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if isRoot(in.NodeId) {
		if f.m.denied(&in.Caller) {
			return fuse.EACCES
		}
		// No FOPEN_CACHE_DIR: the listing changes.
		return fuse.OK
	}
	// The image stays held until RELEASEDIR.
	return f.opened(in.NodeId, func(fs fuse.RawFileSystem) fuse.Status { return fs.OpenDir(cancel, in, out) })
}

// held returns the image of an open handle's node id (which holds a
// reference, so the image is not closed).
func (m *Multi) held(id uint64) *member {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.bySlot[id&^slotMask]
}

func (f *multiFS) ReleaseDir(in *fuse.ReleaseIn) {
	if isRoot(in.NodeId) {
		return
	}
	if mb := f.m.held(in.NodeId); mb != nil {
		mb.fs.ReleaseDir(in)
		mb.handles.Add(-1)
		mb.release(f.m)
	}
}

func (f *multiFS) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	if isRoot(in.NodeId) {
		return f.m.readRoot(in, out, false)
	}
	return f.held(in.NodeId, func(fs fuse.RawFileSystem) fuse.Status { return fs.ReadDir(cancel, in, out) })
}

func (f *multiFS) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	if isRoot(in.NodeId) {
		return f.m.readRoot(in, out, true)
	}
	return f.held(in.NodeId, func(fs fuse.RawFileSystem) fuse.Status { return fs.ReadDirPlus(cancel, in, out) })
}

// readRoot lists the images. The entry of the image in slot k ends at
// offset k+2 (after "." and ".."): slots only grow, so a listing read in
// parts while images come and go neither repeats nor skips one that
// stays. Entries go without attributes (READDIRPLUS), which the kernel
// takes as names and types only.
func (m *Multi) readRoot(in *fuse.ReadIn, out *fuse.DirEntryList, plus bool) fuse.Status {
	if m.denied(&in.Caller) {
		return fuse.EACCES
	}
	add := func(e fuse.DirEntry) bool {
		if plus {
			return out.AddDirLookupEntry(e) != nil
		}
		return out.AddDirEntry(e)
	}
	for off := in.Offset; off < dotEntries; off++ {
		e := fuse.DirEntry{Name: ".", Mode: syscall.S_IFDIR, Ino: fuse.FUSE_ROOT_ID, Off: off + 1}
		if off == 1 {
			e.Name, e.Ino = "..", fuse.FUSE_UNKNOWN_INO
		}
		if !add(e) {
			return fuse.OK
		}
	}
	m.mu.RLock()
	list := slices.Clone(m.order)
	m.mu.RUnlock()
	for _, mb := range list {
		off := mb.base>>32 + dotEntries
		if off <= in.Offset {
			continue
		}
		e := fuse.DirEntry{Name: mb.name, Mode: syscall.S_IFDIR, Ino: mb.d.stIno(mb.d.root), Off: off}
		if !add(e) {
			break
		}
	}
	return fuse.OK
}

func (f *multiFS) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if isRoot(in.NodeId) {
		return fuse.EISDIR
	}
	// The image stays held until RELEASE.
	return f.opened(in.NodeId, func(fs fuse.RawFileSystem) fuse.Status { return fs.Open(cancel, in, out) })
}

func (f *multiFS) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	if isRoot(in.NodeId) {
		return
	}
	if mb := f.m.held(in.NodeId); mb != nil {
		mb.fs.Release(cancel, in)
		mb.handles.Add(-1)
		mb.release(f.m)
	}
}

// Flush: ENOSYS, as for one image (see rawFS.Flush).
func (f *multiFS) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status { return fuse.ENOSYS }

func (f *multiFS) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	if isRoot(in.NodeId) {
		return nil, fuse.EISDIR
	}
	mb, st := f.m.enter(in.NodeId)
	if !st.Ok() {
		return nil, st
	}
	defer mb.release(f.m)
	return mb.fs.Read(cancel, in, buf)
}

func (f *multiFS) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	if isRoot(in.NodeId) {
		return fuse.EINVAL
	}
	return f.held(in.NodeId, func(fs fuse.RawFileSystem) fuse.Status { return fs.Lseek(cancel, in, out) })
}

func (f *multiFS) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	if !isRoot(h.NodeId) {
		return f.held(h.NodeId, func(fs fuse.RawFileSystem) fuse.Status { return fs.StatFs(cancel, h, out) })
	}
	if f.m.denied(&h.Caller) {
		return fuse.EACCES
	}
	// The images together.
	out.Bsize, out.Frsize, out.NameLen = 512, 1, 255
	for _, im := range f.m.Images() {
		info := im.Source.Info()
		out.Bsize = max(out.Bsize, info.BlockSize)
		out.Blocks += info.TotalSize
		out.Files += info.InodeCount
	}
	return fuse.OK
}

// rootXattrs are the attributes of the root directory.
func (m *Multi) rootXattrs() []string {
	names := []string{XattrPid, XattrPerfmon}
	m.mu.RLock()
	if m.control != "" {
		names = append(names, XattrControl)
	}
	m.mu.RUnlock()
	return names
}

func (m *Multi) rootXattr(name string) ([]byte, fuse.Status) {
	switch name {
	case XattrPid:
		m.mu.RLock()
		ready := m.ready
		m.mu.RUnlock()
		if !ready {
			return nil, fuse.ENODATA
		}
		return []byte(strconv.Itoa(m.pid)), fuse.OK
	case XattrPerfmon:
		return []byte(m.perfReport()), fuse.OK
	case XattrControl:
		m.mu.RLock()
		p := m.control
		m.mu.RUnlock()
		if p != "" {
			return []byte(p), fuse.OK
		}
	}
	return nil, fuse.ENODATA
}

func (f *multiFS) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	if f.m.opts.NoXattr {
		return 0, fuse.ENOSYS
	}
	if !isRoot(h.NodeId) {
		mb, st := f.m.enter(h.NodeId)
		if !st.Ok() {
			return 0, st
		}
		defer mb.release(f.m)
		return mb.fs.GetXAttr(cancel, h, attr, dest)
	}
	if f.m.denied(&h.Caller) {
		return 0, fuse.EACCES
	}
	if !strings.HasPrefix(attr, "user.") {
		return 0, fuse.Status(syscall.EOPNOTSUPP)
	}
	v, st := f.m.rootXattr(attr)
	if !st.Ok() {
		return 0, st
	}
	return xattrReply(v, dest)
}

func (f *multiFS) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	if f.m.opts.NoXattr {
		return 0, fuse.ENOSYS
	}
	if !isRoot(h.NodeId) {
		mb, st := f.m.enter(h.NodeId)
		if !st.Ok() {
			return 0, st
		}
		defer mb.release(f.m)
		return mb.fs.ListXAttr(cancel, h, dest)
	}
	if f.m.denied(&h.Caller) {
		return 0, fuse.EACCES
	}
	var buf []byte
	for _, s := range f.m.rootXattrs() {
		buf = append(buf, s...)
		buf = append(buf, 0)
	}
	return xattrReply(buf, dest)
}

//go:build !windows && !(linux && (386 || arm))

package fusefs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/godwarfs/godwarfs/internal/gofuse/fuse"
	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs/metadata"
)

// Extended attribute names served by the driver.
const (
	XattrPid       = "user.dwarfs.driver.pid"
	XattrPerfmon   = "user.dwarfs.driver.perfmon"
	XattrInodeInfo = "user.dwarfs.inodeinfo"
	// XattrRemote holds the transfer counters (JSON) of an image mounted
	// from a URL.
	XattrRemote = "user.dwarfs.driver.remote"
)

// generation is the generation number of every node: the image never
// changes, so a node id never names a different file.
const generation = 1

// rawFS serves the image on go-fuse's raw protocol API. The kernel's node
// id is derived from the image inode number (nodeID), so nothing is kept
// per inode the kernel knows: LOOKUP is a binary search in the
// directory's sorted entries, GETATTR reads the inode table, and FORGET
// has nothing to release. The only state is the open files and
// directories.
type rawFS struct {
	readOnlyFS // EROFS and ENOSYS for what an image cannot do
	d          *driver
	files      handleTable[*handle]
	dirs       handleTable[*dirHandle]
	// noOpenDir answers OPENDIR with ENOSYS, which the kernel takes as
	// "never send OPENDIR or RELEASEDIR again" and then caches every
	// listing (FOPEN_KEEP_CACHE and FOPEN_CACHE_DIR, what OpenDir asks
	// for): half the requests of a find. Only where no listing changes,
	// so not under a Multi, whose root does.
	noOpenDir bool
	// listings holds the last few listings made for reads that come
	// without a directory handle, so that reading a large directory in
	// several requests lists it once.
	listings listingCache
}

var _ fuse.RawFileSystem = (*rawFS)(nil)

func newRawFS(d *driver) *rawFS {
	return &rawFS{readOnlyFS: readOnlyFS{fuse.NewDefaultRawFileSystem()}, d: d}
}

// handleTable maps the kernel's file handles to open files.
type handleTable[T any] struct {
	mu   sync.Mutex
	m    map[uint64]T
	next uint64
}

func (t *handleTable[T]) add(v T) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[uint64]T{}
	}
	t.next++
	t.m[t.next] = v
	return t.next
}

func (t *handleTable[T]) get(fh uint64) (T, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.m[fh]
	return v, ok
}

func (t *handleTable[T]) remove(fh uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, fh)
}

func (t *handleTable[T]) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// nodeID is the kernel's node id of image inode ino. The root must be
// FUSE_ROOT_ID (1); image roots are inode 0, so the id is ino+1, with
// the root and inode 0 swapping places should a source's root differ.
// In a mount of several images (base != 0) the root is the mount's own
// directory: the id is ino+1 in the low 32 bits and the image's slot in
// the high ones, so that the images' ids never meet, and ids of an image
// that was removed are never those of one added later.
func (d *driver) nodeID(ino uint32) uint64 {
	if d.base != 0 {
		return d.base | (uint64(ino) + 1)
	}
	switch ino {
	case d.root:
		return fuse.FUSE_ROOT_ID
	case 0:
		return uint64(d.root) + 1
	}
	return uint64(ino) + 1
}

// stIno is the st_ino of image inode ino: ino+1, in the image's slot.
func (d *driver) stIno(ino uint32) uint64 { return d.base | (uint64(ino) + 1) }

// inode is the image inode of a kernel node id; ok is false for ids no
// inode can have.
func (d *driver) inode(id uint64) (uint32, bool) {
	if d.base != 0 {
		if id&^slotMask != d.base {
			return 0, false
		}
		id &= slotMask
	}
	if id == 0 || id > uint64(d.ninodes) {
		return 0, false
	}
	if d.base != 0 {
		return uint32(id - 1), true
	}
	switch id {
	case fuse.FUSE_ROOT_ID:
		return d.root, true
	case uint64(d.root) + 1:
		return 0, true
	}
	return uint32(id - 1), true
}

// slotMask selects the image's part of a node id in a mount of several.
const slotMask = 1<<32 - 1

// toErrno maps library errors to an errno for the kernel.
func toErrno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	// The kernel interrupted the request; it discards the reply anyway.
	if errors.Is(err, context.Canceled) {
		return syscall.EINTR
	}
	return syscall.EIO
}

// status is the reply for err. The kernel passes the caller nothing but
// an errno, so the error behind an EIO (a damaged block, a failing disk,
// a bad directory) is logged here, each distinct message once.
func (d *driver) status(err error) fuse.Status {
	e := toErrno(err)
	if e == syscall.EIO {
		d.ioErrs.log(err)
	}
	return fuse.ToStatus(e)
}

// maxIOErrorMessages bounds the distinct messages ioErrors logs, so a
// badly damaged image cannot fill the log or the memory behind it.
const maxIOErrorMessages = 100

// ioErrors logs the errors behind EIO replies, each message once.
type ioErrors struct {
	mu      sync.Mutex
	w       io.Writer
	seen    map[string]bool
	dropped bool
}

func (l *ioErrors) log(err error) {
	if l.w == nil {
		return
	}
	msg := err.Error()
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.seen[msg]:
	case len(l.seen) < maxIOErrorMessages:
		if l.seen == nil {
			l.seen = map[string]bool{}
		}
		l.seen[msg] = true
		fmt.Fprintf(l.w, "dwarfs: I/O error: %s\n", msg)
	case !l.dropped:
		l.dropped = true
		fmt.Fprintf(l.w, "dwarfs: more than %d different I/O errors; not logging further ones\n", maxIOErrorMessages)
	}
}

// denied implements allow_root for requests from other users.
func (d *driver) denied(c *fuse.Caller) bool {
	return d.rootOnly && c.Uid != 0 && c.Uid != d.owner
}

// node resolves a request's node id, refusing callers allow_root
// excludes.
func (d *driver) node(h *fuse.InHeader) (uint32, fuse.Status) {
	if d.denied(&h.Caller) {
		return 0, fuse.EACCES
	}
	ino, ok := d.inode(h.NodeId)
	if !ok {
		return 0, fuse.ENOENT
	}
	return ino, fuse.OK
}

func (d *driver) fillAttr(ino uint32, a Attr, out *fuse.Attr) {
	out.Ino = d.stIno(ino)
	out.Mode = a.Mode
	if d.opts.ReadOnly {
		out.Mode &^= 0o222
	}
	out.Size = uint64(max(a.Size, 0))
	alloc := a.AllocatedSize
	if alloc == 0 && !a.Sparse && a.Mode&syscall.S_IFMT == syscall.S_IFREG {
		alloc = a.Size
	}
	out.Blocks = uint64(max(alloc, 0)+511) / 512
	out.Blksize = d.blksize
	out.Nlink = 1
	if d.opts.EnableNlink && a.Nlink > 0 {
		out.Nlink = a.Nlink
	}
	out.Uid, out.Gid = a.UID, a.GID
	if d.opts.UID != nil {
		out.Uid = *d.opts.UID
	}
	if d.opts.GID != nil {
		out.Gid = *d.opts.GID
	}
	out.Atime, out.Atimensec = uint64(a.Atime.Sec), a.Atime.Nsec
	out.Mtime, out.Mtimensec = uint64(a.Mtime.Sec), a.Mtime.Nsec
	out.Ctime, out.Ctimensec = uint64(a.Ctime.Sec), a.Ctime.Nsec
	// FUSE carries rdev as the kernel's 32-bit new_encode_dev() form.
	out.Rdev = fuseRdev(metadata.DevMajor(a.Rdev), metadata.DevMinor(a.Rdev))
}

// fillEntry answers a lookup of ino: the node id, its attributes and how
// long the kernel may keep both.
func (d *driver) fillEntry(ino uint32, a Attr, out *fuse.EntryOut) {
	out.NodeId = d.nodeID(ino)
	out.Generation = generation
	d.fillAttr(ino, a, &out.Attr)
	out.SetEntryTimeout(kernelTimeout)
	out.SetAttrTimeout(kernelTimeout)
}

// modeSource is a Source that reads an inode's mode alone, without the
// rest of Stat (a regular file's size sums its chunks).
type modeSource interface {
	Mode(ino uint32) (uint32, error)
}

// mode returns the mode of ino.
func (d *driver) mode(ino uint32) (uint32, error) {
	if ms, ok := d.src.(modeSource); ok {
		return ms.Mode(ino)
	}
	a, err := d.src.Stat(ino)
	return a.Mode, err
}

// dirChecker is a Source whose directories are checked when first used
// (an image opened for serving checks the order of each directory's
// names then): CheckDir reports a directory that fails, which Lookup's
// answer cannot.
type dirChecker interface {
	CheckDir(dir uint32) error
}

// lookup finds name in dir, ignoring case with case_insensitive; it
// also returns the entry's own name.
func (d *driver) lookup(dir uint32, name string) (uint32, string, bool) {
	if d.fold != nil {
		e, ok := d.fold.lookup(dir, name)
		return e.Ino, e.Name, ok
	}
	ino, ok := d.src.Lookup(dir, name)
	return ino, name, ok
}

func (r *rawFS) String() string { return "dwarfs" }

func (r *rawFS) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	d := r.d
	dir, st := d.node(h)
	if !st.Ok() {
		return st
	}
	d.perf.lookups.Add(1)
	if dc, ok := d.src.(dirChecker); ok {
		if err := dc.CheckDir(dir); err != nil {
			return d.status(err)
		}
	}
	ino, real, ok := d.lookup(dir, name)
	if !ok {
		// A negative entry: node id 0 with a timeout tells the kernel
		// to remember that the name does not exist.
		*out = fuse.EntryOut{}
		out.SetEntryTimeout(kernelTimeout)
		return fuse.OK
	}
	a, err := d.src.Stat(ino)
	if err != nil {
		return d.status(err)
	}
	if d.analysis != nil {
		d.analysis.lookedUp(dir, real, ino, a.Mode)
	}
	d.plus.lookedUp(h.NodeId, a.Mode)
	d.fillEntry(ino, a, out)
	return fuse.OK
}

// stat resolves the request's node and reads its attributes.
func (d *driver) stat(h *fuse.InHeader) (uint32, Attr, fuse.Status) {
	ino, st := d.node(h)
	if !st.Ok() {
		return 0, Attr{}, st
	}
	a, err := d.src.Stat(ino)
	if err != nil {
		return 0, Attr{}, d.status(err)
	}
	return ino, a, fuse.OK
}

// Forget has nothing to do: no state is kept per node.
func (r *rawFS) Forget(nodeid, nlookup uint64) {}

func (r *rawFS) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	ino, a, st := r.d.stat(&in.InHeader)
	if !st.Ok() {
		return st
	}
	r.d.fillAttr(ino, a, &out.Attr)
	out.SetTimeout(kernelTimeout)
	return fuse.OK
}

// The statx(2) mask bits FUSE carries (Linux's values on every system).
const (
	statxBasicStats = 0x7ff
	statxBtime      = 0x800
)

// Statx is GetAttr plus the birth time, which images made with
// --keep-all-times can carry and plain stat(2) cannot report.
func (r *rawFS) Statx(cancel <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	ino, a, st := r.d.stat(&in.InHeader)
	if !st.Ok() {
		return st
	}
	var at fuse.Attr
	r.d.fillAttr(ino, a, &at)
	fillStatx(&out.Statx, &at)
	if a.HasBtime {
		out.Statx.Mask |= statxBtime
		out.Statx.Btime = fuse.SxTime{Sec: uint64(a.Btime.Sec), Nsec: a.Btime.Nsec}
	}
	out.Statx.RdevMajor, out.Statx.RdevMinor = metadata.DevMajor(a.Rdev), metadata.DevMinor(a.Rdev)
	out.SetTimeout(kernelTimeout)
	return fuse.OK
}

// fillStatx fills the basic statx fields from at.
func fillStatx(sx *fuse.Statx, at *fuse.Attr) {
	sx.Mask = statxBasicStats
	sx.Blksize = at.Blksize
	sx.Nlink = at.Nlink
	sx.Uid, sx.Gid = at.Uid, at.Gid
	sx.Mode = uint16(at.Mode)
	sx.Ino = at.Ino
	sx.Size = at.Size
	sx.Blocks = at.Blocks
	sx.Atime = fuse.SxTime{Sec: at.Atime, Nsec: at.Atimensec}
	sx.Mtime = fuse.SxTime{Sec: at.Mtime, Nsec: at.Mtimensec}
	sx.Ctime = fuse.SxTime{Sec: at.Ctime, Nsec: at.Ctimensec}
}

// Access checks the mode bits (without default_permissions the kernel
// leaves that to the driver); root may read and search anything, and
// execute what anyone may execute.
func (r *rawFS) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	ino, a, st := r.d.stat(&in.InHeader)
	if !st.Ok() {
		return st
	}
	var at fuse.Attr
	r.d.fillAttr(ino, a, &at)
	if !hasAccess(in.Uid, in.Gid, at.Uid, at.Gid, at.Mode, in.Mask) {
		return fuse.EACCES
	}
	return fuse.OK
}

// hasAccess is the classic owner/group/other permission check (without
// supplementary groups, which FUSE does not pass).
func hasAccess(uid, gid, fuid, fgid, mode, mask uint32) bool {
	mask &= 7
	if uid == 0 {
		// Root needs an execute bit somewhere to execute.
		return mask&1 == 0 || mode&0o111 != 0
	}
	var perm uint32
	switch {
	case uid == fuid:
		perm = mode >> 6
	case gid == fgid:
		perm = mode >> 3
	default:
		perm = mode
	}
	return perm&mask == mask
}

func (r *rawFS) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	ino, st := r.d.node(h)
	if !st.Ok() {
		return nil, st
	}
	s, err := r.d.src.Readlink(ino)
	if err != nil {
		return nil, r.d.status(err)
	}
	return []byte(s), fuse.OK
}

// dirHandle is an open directory: its listing, made on the first read
// and dropped when the directory is closed.
type dirHandle struct {
	ino   uint32
	mu    sync.Mutex
	ents  []DirEntry
	read  bool
	ended bool // the last read reached the end of the listing
}

// OpenDir opens a directory with FOPEN_CACHE_DIR and FOPEN_KEEP_CACHE:
// the image never changes, so the kernel keeps the listing in its page
// cache and serves later readdirs of the directory without asking the
// driver.
func (r *rawFS) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if r.noOpenDir {
		return fuse.ENOSYS
	}
	ino, a, st := r.d.stat(&in.InHeader)
	if !st.Ok() {
		return st
	}
	if a.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return fuse.ENOTDIR
	}
	out.Fh = r.dirs.add(&dirHandle{ino: ino})
	out.OpenFlags = fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE
	return fuse.OK
}

func (r *rawFS) ReleaseDir(in *fuse.ReleaseIn) { r.dirs.remove(in.Fh) }

func (r *rawFS) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return r.readDir(in, out, false)
}

func (r *rawFS) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return r.readDir(in, out, true)
}

// listingCache keeps the listings of the last few directories read
// without a handle and not yet to their end. A directory the kernel reads
// in several requests is listed once, and the kernel's own cache
// (FOPEN_CACHE_DIR) serves it after that, so a few entries are enough and
// none stays once read through.
type listingCache struct {
	mu   sync.Mutex
	next int
	ent  [4]listing
}

type listing struct {
	ino  uint32
	ents []DirEntry
	ok   bool
}

func (c *listingCache) get(ino uint32) ([]DirEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.ent {
		if e.ok && e.ino == ino {
			return e.ents, true
		}
	}
	return nil, false
}

func (c *listingCache) put(ino uint32, ents []DirEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.ent {
		if e := &c.ent[i]; e.ok && e.ino == ino {
			e.ents = ents
			return
		}
	}
	e := &c.ent[c.next]
	e.ino, e.ents, e.ok = ino, ents, true
	c.next = (c.next + 1) % len(c.ent)
}

// drop forgets the listing of ino: it was read to its end, and the
// kernel keeps it from now on.
func (c *listingCache) drop(ino uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.ent {
		if e := &c.ent[i]; e.ok && e.ino == ino {
			*e = listing{}
		}
	}
}

// Directory offsets: 1 and 2 follow "." and "..", 3+i follows entry i;
// a read at offset o continues after the entry that ended at o, so the
// listing needs no cursor and any offset the kernel kept stays valid.
const dotEntries = 2

func (r *rawFS) readDir(in *fuse.ReadIn, out *fuse.DirEntryList, plus bool) fuse.Status {
	d := r.d
	ino, st := d.node(&in.InHeader)
	if !st.Ok() {
		return st
	}
	dh, ok := r.dirs.get(in.Fh)
	if !ok || dh.ino != ino {
		// A read without OPENDIR's handle (noOpenDir, or go-fuse's
		// own): the listing comes from the recent ones or is made now,
		// and is kept for the next request until one reaches its end.
		dh = &dirHandle{ino: ino}
		dh.ents, dh.read = r.listings.get(ino)
		defer func() {
			if dh.read && !dh.ended {
				r.listings.put(ino, dh.ents)
			} else {
				r.listings.drop(ino)
			}
		}()
	}
	dh.mu.Lock()
	defer dh.mu.Unlock()
	if !dh.read {
		d.perf.readdirs.Add(1)
		ents, err := d.src.ReadDir(ino)
		if err != nil {
			return d.status(err)
		}
		dh.ents, dh.read = ents, true
	}
	off := in.Offset
	for ; off < dotEntries; off++ {
		e := fuse.DirEntry{Name: ".", Mode: syscall.S_IFDIR, Ino: d.stIno(ino), Off: off + 1}
		if off == 1 {
			e.Name, e.Ino = "..", fuse.FUSE_UNKNOWN_INO
		}
		// The kernel links neither dot entry, so READDIRPLUS leaves
		// their entry out empty.
		if plus {
			if out.AddDirLookupEntry(e) == nil {
				return fuse.OK
			}
		} else if !out.AddDirEntry(e) {
			return fuse.OK
		}
	}
	all := plus && d.plus.attrs(in.NodeId, in.Offset == 0)
	i := int(off - dotEntries)
	defer func() { dh.ended = i >= len(dh.ents) }()
	for ; i < len(dh.ents); i++ {
		e := dh.ents[i]
		// READDIRPLUS entries without attributes (plusPolicy) go with
		// node id 0, which the kernel takes as "names and types only".
		// Directories always get them: whoever walks the tree looks
		// them up anyway to descend.
		attrs := all || plus && i < plusHead
		var a Attr
		var err error
		if !attrs {
			a.Mode, err = d.mode(e.Ino)
			attrs = plus && err == nil && a.Mode&syscall.S_IFMT == syscall.S_IFDIR
		}
		if attrs {
			a, err = d.src.Stat(e.Ino)
		}
		if err != nil {
			if i == int(in.Offset)-dotEntries {
				return d.status(err)
			}
			// Report it when the kernel asks from this entry on.
			return fuse.OK
		}
		de := fuse.DirEntry{Name: e.Name, Mode: a.Mode, Ino: d.stIno(e.Ino), Off: uint64(i) + dotEntries + 1}
		if !plus {
			if !out.AddDirEntry(de) {
				break
			}
			continue
		}
		eo := out.AddDirLookupEntry(de)
		if eo == nil {
			break
		}
		if !attrs {
			continue
		}
		if d.analysis != nil {
			d.analysis.lookedUp(ino, e.Name, e.Ino, a.Mode)
		}
		d.fillEntry(e.Ino, a, eo)
	}
	return fuse.OK
}

// handle is an open file: the Source's File, which keeps the file's chunk
// list and offset index, and the sequential-access detector state, which
// is per open file like the kernel's own readahead state.
type handle struct {
	ino     uint32
	f       File
	big     bool // at least the driver's spendMin bytes
	mu      sync.Mutex
	nextOff int64 // end of the furthest read of the current run (-1: none)
	seqRun  int   // consecutive reads that continued the previous one
	pfEnd   int64 // prefetch issued up to here
	runOff  int64 // where the current run started, or spent up to
}

// openCounts counts the open handles of each inode.
type openCounts struct {
	mu sync.Mutex
	m  map[uint32]int
}

func (o *openCounts) add(ino uint32, delta int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[uint32]int{}
	}
	if o.m[ino] += delta; o.m[ino] <= 0 {
		delete(o.m, ino)
	}
}

func (o *openCounts) get(ino uint32) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m[ino]
}

func (r *rawFS) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	d := r.d
	ino, st := d.node(&in.InHeader)
	if !st.Ok() {
		return st
	}
	if in.Flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return fuse.EROFS
	}
	file, err := d.src.Open(ino)
	if err != nil {
		return d.status(err)
	}
	if d.analysis != nil {
		d.analysis.open(ino)
	}
	a, err := d.src.Stat(ino)
	if err != nil {
		return d.status(err)
	}
	// no_cache_sparse (the default): sparse files are mostly zeros and
	// often huge; keeping them in the page cache only displaces useful
	// pages.
	cache := !d.opts.NoCacheFiles && (d.opts.CacheSparse || !a.Sparse)
	out.OpenFlags = fuse.FOPEN_DIRECT_IO
	if cache {
		out.OpenFlags = fuse.FOPEN_KEEP_CACHE
	}
	d.opens.add(ino, 1)
	out.Fh = r.files.add(&handle{ino: ino, f: file, big: a.Size >= d.spendMin, nextOff: -1})
	return fuse.OK
}

func (r *rawFS) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	if h, ok := r.files.get(in.Fh); ok {
		r.d.opens.add(h.ino, -1)
	}
	r.files.remove(in.Fh)
}

// Flush answers ENOSYS, which the kernel takes as "never send FLUSH
// again": a read-only file has nothing to flush, and every close() would
// otherwise cost a request (a quarter of those of a walk that reads every
// file once). close() still returns 0.
func (r *rawFS) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status { return fuse.ENOSYS }

// openHandle returns the open file of a request. The kernel passes the
// handle that Open returned; a request without one gets a file opened
// for this request only.
func (r *rawFS) openHandle(h *fuse.InHeader, fh uint64) (*handle, fuse.Status) {
	ino, st := r.d.node(h)
	if !st.Ok() {
		return nil, st
	}
	if hd, ok := r.files.get(fh); ok && hd.ino == ino {
		return hd, fuse.OK
	}
	file, err := r.d.src.Open(ino)
	if err != nil {
		return nil, r.d.status(err)
	}
	return &handle{ino: ino, f: file, nextOff: -1}, fuse.OK
}

func (r *rawFS) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	start := time.Now()
	d := r.d
	d.perf.reads.Add(1)
	h, st := r.openHandle(&in.InHeader, in.Fh)
	if !st.Ok() {
		d.perf.readErrors.Add(1)
		return nil, st
	}
	if uint64(len(buf)) > uint64(in.Size) {
		buf = buf[:in.Size]
	}
	ctx := &fuse.Context{Caller: in.Caller, Cancel: cancel}
	n, err := h.f.ReadAt(ctx, buf, int64(in.Offset))
	if err != nil && !errors.Is(err, io.EOF) {
		d.perf.readErrors.Add(1)
		return nil, d.status(err)
	}
	d.perf.readBytes.Add(int64(n))
	if n > 0 {
		d.noteRead(h, int64(in.Offset), int64(n))
	}
	d.perf.readLat.add(time.Since(start))
	return fuse.ReadResultData(buf[:n]), fuse.OK
}

// seqWindow is how far a read may start from where the previous one
// ended and still count as continuing it: the kernel sends a sequential
// reader's readahead as several READs at once, and they reach the driver
// in any order (up to its readahead window, MaxReadAhead).
const seqWindow = 1 << 20

// noteRead runs the sequential-access detector: after seq_detector reads
// that each continue the previous ones, prefetch ahead so the next block
// is decompressed before the reader needs it.
//
// A sequential reader of a file at least half the size of the block cache
// also tells the cache which bytes it has gone past (File.DontNeed), so
// that its blocks, rather than everything else cached, make room for the
// blocks it reads next, and a second pass over the file finds the first
// part of it still cached. Only while this is the file's one open handle:
// another reader of the file may still need the blocks behind this one.
func (d *driver) noteRead(h *handle, off, n int64) {
	if d.opts.SeqDetector <= 0 {
		return
	}
	h.mu.Lock()
	end := off + n
	if h.nextOff >= 0 && off >= h.nextOff-seqWindow && off <= h.nextOff+seqWindow {
		h.seqRun++
		h.nextOff = max(h.nextOff, end)
	} else {
		h.seqRun = 0
		h.pfEnd = 0
		h.nextOff = end
		h.runOff = off
	}
	var pfOff, pfLen, dnOff, dnLen int64
	if h.seqRun >= d.opts.SeqDetector {
		want := h.nextOff + d.ahead
		if want > h.pfEnd {
			pfOff = max(h.nextOff, h.pfEnd)
			pfLen = want - pfOff
			h.pfEnd = want
		}
		// Reads of the run still arrive up to seqWindow behind its end.
		if past := h.nextOff - seqWindow; h.big && past > h.runOff {
			dnOff, dnLen = h.runOff, past-h.runOff
			h.runOff = past
		}
	}
	trigger := h.seqRun == d.opts.SeqDetector
	h.mu.Unlock()
	if dnLen > 0 && d.opens.get(h.ino) == 1 {
		h.f.DontNeed(dnOff, dnLen)
	}
	if trigger {
		d.perf.seqTriggers.Add(1)
	}
	if pfLen > 0 {
		d.perf.prefetches.Add(1)
		h.f.Prefetch(pfOff, pfLen)
	}
}

func (r *rawFS) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	_, a, st := r.d.stat(&in.InHeader)
	if !st.Ok() {
		return st
	}
	o := int64(in.Offset)
	if o < 0 || o >= a.Size {
		return fuse.Status(syscall.ENXIO)
	}
	h, st := r.openHandle(&in.InHeader, in.Fh)
	if !st.Ok() {
		return st
	}
	var res int64
	var err error
	switch in.Whence {
	case unix.SEEK_DATA:
		res, err = h.f.SeekData(o)
	case unix.SEEK_HOLE:
		res, err = h.f.SeekHole(o)
	default:
		return fuse.EINVAL
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			return fuse.Status(syscall.ENXIO)
		}
		return r.d.status(err)
	}
	out.Offset = uint64(res)
	return fuse.OK
}

func (r *rawFS) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	if r.d.denied(&h.Caller) {
		return fuse.EACCES
	}
	info := r.d.src.Info()
	// Like the reference, report byte-granular sizes: f_frsize 1 and the
	// total as the original filesystem size; nothing is free.
	out.Bsize = max(info.BlockSize, 1)
	out.Frsize = 1
	out.Blocks = info.TotalSize
	out.Files = info.InodeCount
	out.NameLen = 255
	return fuse.OK
}

func (d *driver) xattrNames(ino uint32) []string {
	if ino == d.root {
		if _, ok := d.remoteStats(); ok {
			return []string{XattrPid, XattrPerfmon, XattrRemote, XattrInodeInfo}
		}
		return []string{XattrPid, XattrPerfmon, XattrInodeInfo}
	}
	return []string{XattrInodeInfo}
}

func (d *driver) xattrValue(ino uint32, name string) ([]byte, fuse.Status) {
	isRoot := ino == d.root
	switch {
	case name == XattrPid && isRoot:
		if !d.ready.Load() {
			return nil, fuse.ENODATA
		}
		return []byte(strconv.Itoa(d.pid)), fuse.OK
	case name == XattrPerfmon && isRoot:
		return []byte(d.perfReport()), fuse.OK
	case name == XattrRemote && isRoot:
		st, ok := d.remoteStats()
		if !ok {
			return nil, fuse.ENODATA
		}
		return statsJSON(st), fuse.OK
	case name == XattrInodeInfo:
		info, err := d.src.InodeInfo(ino)
		if err != nil {
			return nil, d.status(err)
		}
		return info, fuse.OK
	}
	return nil, fuse.ENODATA
}

// GetXAttr answers a size probe (empty dest) with the value's size and
// a short buffer with ERANGE.
func (r *rawFS) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	if r.d.opts.NoXattr {
		return 0, fuse.ENOSYS
	}
	ino, st := r.d.node(h)
	if !st.Ok() {
		return 0, st
	}
	if !strings.HasPrefix(attr, "user.") {
		// Images carry no security labels, ACLs or trusted attributes,
		// so only the user namespace is supported. Saying so, rather
		// than "no such attribute", lets ls -l stop asking for the
		// label and the ACL of every entry once it has seen one
		// refusal on the device (the kernel caches neither answer for
		// FUSE, so each would be a round trip).
		return 0, fuse.Status(syscall.EOPNOTSUPP)
	}
	v, st := r.d.xattrValue(ino, attr)
	if !st.Ok() {
		return 0, st
	}
	return xattrReply(v, dest)
}

func (r *rawFS) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	if r.d.opts.NoXattr {
		return 0, fuse.ENOSYS
	}
	ino, st := r.d.node(h)
	if !st.Ok() {
		return 0, st
	}
	var buf []byte
	for _, s := range r.d.xattrNames(ino) {
		buf = append(buf, s...)
		buf = append(buf, 0)
	}
	return xattrReply(buf, dest)
}

func xattrReply(v, dest []byte) (uint32, fuse.Status) {
	if len(dest) == 0 {
		return uint32(len(v)), fuse.OK
	}
	if len(dest) < len(v) {
		return uint32(len(v)), fuse.ERANGE
	}
	return uint32(copy(dest, v)), fuse.OK
}

// readOnlyFS fails everything that would modify the image with EROFS
// (the mount is also flagged read-only, so the kernel usually rejects
// these first), and what else an image cannot do with ENOSYS.
type readOnlyFS struct{ fuse.RawFileSystem }

func (readOnlyFS) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	return fuse.EROFS
}

func (readOnlyFS) SetXAttr(cancel <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	return fuse.EROFS
}

func (readOnlyFS) RemoveXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string) fuse.Status {
	return fuse.EROFS
}

func (readOnlyFS) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	return fuse.EROFS
}

func (readOnlyFS) Tmpfile(cancel <-chan struct{}, in *fuse.CreateIn, out *fuse.CreateOut) fuse.Status {
	return fuse.EROFS
}

func (readOnlyFS) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	return fuse.EROFS
}

func (readOnlyFS) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	return fuse.EROFS
}

func (readOnlyFS) Symlink(cancel <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	return fuse.EROFS
}

func (readOnlyFS) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	return fuse.EROFS
}

func (readOnlyFS) Unlink(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	return fuse.EROFS
}

func (readOnlyFS) Rmdir(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	return fuse.EROFS
}

func (readOnlyFS) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	return fuse.EROFS
}

func (readOnlyFS) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	return 0, fuse.EROFS
}

func (readOnlyFS) Fallocate(cancel <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	return fuse.EROFS
}

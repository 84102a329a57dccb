package fusefs

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
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

// node is one image inode. Nodes are cheap; go-fuse deduplicates them by
// StableAttr.Ino so hard links map to a single kernel inode.
type node struct {
	fs.Inode
	d   *driver
	ino uint32
}

var (
	_ fs.NodeLookuper       = (*node)(nil)
	_ fs.NodeGetattrer      = (*node)(nil)
	_ fs.NodeStatxer        = (*node)(nil)
	_ fs.NodeReaddirer      = (*node)(nil)
	_ fs.NodeOpendirHandler = (*node)(nil)
	_ fs.NodeReadlinker     = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeReader         = (*node)(nil)
	_ fs.NodeLseeker        = (*node)(nil)
	_ fs.NodeStatfser       = (*node)(nil)
	_ fs.NodeGetxattrer     = (*node)(nil)
	_ fs.NodeListxattrer    = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeSetxattrer     = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeMkdirer        = (*node)(nil)
	_ fs.NodeUnlinker       = (*node)(nil)
	_ fs.NodeRenamer        = (*node)(nil)
)

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

func (d *driver) newChild(ctx context.Context, parent *fs.Inode, ino uint32, a Attr) *fs.Inode {
	n := &node{d: d, ino: ino}
	return parent.NewInode(ctx, n, fs.StableAttr{Mode: a.Mode & syscall.S_IFMT, Ino: uint64(ino) + 1})
}

func (d *driver) fillAttr(ino uint32, a Attr, out *fuse.Attr) {
	out.Ino = uint64(ino) + 1
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
	maj, mnr := unix.Major(a.Rdev), unix.Minor(a.Rdev)
	out.Rdev = mnr&0xff | maj<<8 | (mnr&^0xff)<<12
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.d.denied(ctx) {
		return nil, syscall.EACCES
	}
	n.d.perf.lookups.Add(1)
	ino, real, ok := n.d.lookup(n.ino, name)
	if !ok {
		return nil, syscall.ENOENT
	}
	a, err := n.d.src.Stat(ino)
	if err != nil {
		return nil, toErrno(err)
	}
	if n.d.analysis != nil {
		n.d.analysis.lookedUp(n.ino, real, ino, a.Mode)
	}
	n.d.fillAttr(ino, a, &out.Attr)
	return n.d.newChild(ctx, n.EmbeddedInode(), ino, a), 0
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

func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if n.d.denied(ctx) {
		return syscall.EACCES
	}
	a, err := n.d.src.Stat(n.ino)
	if err != nil {
		return toErrno(err)
	}
	n.d.fillAttr(n.ino, a, &out.Attr)
	return 0
}

// Statx is Getattr plus the birth time, which images made with
// --keep-all-times can carry and plain stat(2) cannot report.
func (n *node) Statx(ctx context.Context, f fs.FileHandle, flags uint32, mask uint32, out *fuse.StatxOut) syscall.Errno {
	if n.d.denied(ctx) {
		return syscall.EACCES
	}
	a, err := n.d.src.Stat(n.ino)
	if err != nil {
		return toErrno(err)
	}
	var at fuse.Attr
	n.d.fillAttr(n.ino, a, &at)
	sx := &out.Statx
	sx.Mask = unix.STATX_BASIC_STATS
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
	if a.HasBtime {
		sx.Mask |= unix.STATX_BTIME
		sx.Btime = fuse.SxTime{Sec: uint64(a.Btime.Sec), Nsec: a.Btime.Nsec}
	}
	sx.RdevMajor, sx.RdevMinor = unix.Major(a.Rdev), unix.Minor(a.Rdev)
	return 0
}

func (n *node) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	if n.d.denied(ctx) {
		return nil, syscall.EACCES
	}
	list, errno := n.dirEntries()
	if errno != 0 {
		return nil, errno
	}
	return fs.NewListDirStream(list), 0
}

// dirEntries lists the directory for the kernel; Off is the position
// after the entry, so a seek to Off continues with the next one.
func (n *node) dirEntries() ([]fuse.DirEntry, syscall.Errno) {
	n.d.perf.readdirs.Add(1)
	ents, err := n.d.src.ReadDir(n.ino)
	if err != nil {
		return nil, toErrno(err)
	}
	list := make([]fuse.DirEntry, 0, len(ents))
	for i, e := range ents {
		a, err := n.d.src.Stat(e.Ino)
		if err != nil {
			return nil, toErrno(err)
		}
		list = append(list, fuse.DirEntry{Name: e.Name, Ino: uint64(e.Ino) + 1, Mode: a.Mode, Off: uint64(i) + 1})
	}
	return list, 0
}

// OpendirHandle opens a directory with FOPEN_CACHE_DIR and
// FOPEN_KEEP_CACHE: the image never changes, so the kernel keeps the
// listing in its page cache and serves later readdirs of the directory
// without asking the driver.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if n.d.denied(ctx) {
		return nil, 0, syscall.EACCES
	}
	return &dirHandle{n: n}, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
}

// dirHandle is an open directory. go-fuse serialises the calls on one
// handle, so it needs no lock.
type dirHandle struct {
	n    *node
	ents []fuse.DirEntry // listed on first use
	read bool
	pos  int // next entry to return
}

var (
	_ fs.FileReaddirenter = (*dirHandle)(nil)
	_ fs.FileSeekdirer    = (*dirHandle)(nil)
	_ fs.FileLookuper     = (*dirHandle)(nil)
	_ fs.FileReleasedirer = (*dirHandle)(nil)
)

func (h *dirHandle) list() syscall.Errno {
	if h.read {
		return 0
	}
	ents, errno := h.n.dirEntries()
	if errno != 0 {
		return errno
	}
	h.ents, h.read = ents, true
	return 0
}

func (h *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if errno := h.list(); errno != 0 {
		return nil, errno
	}
	if h.pos >= len(h.ents) {
		return nil, 0
	}
	e := h.ents[h.pos]
	h.pos++
	return &e, 0
}

func (h *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if errno := h.list(); errno != 0 {
		return errno
	}
	h.pos = int(min(off, uint64(len(h.ents))))
	return 0
}

// Lookup answers READDIRPLUS for the entry Readdirent just returned: its
// inode is known, so no search by name is needed.
func (h *dirHandle) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if h.pos == 0 || h.pos > len(h.ents) || h.ents[h.pos-1].Name != name {
		return h.n.Lookup(ctx, name, out)
	}
	ino := uint32(h.ents[h.pos-1].Ino - 1)
	a, err := h.n.d.src.Stat(ino)
	if err != nil {
		return nil, toErrno(err)
	}
	if h.n.d.analysis != nil {
		h.n.d.analysis.lookedUp(h.n.ino, name, ino, a.Mode)
	}
	h.n.d.fillAttr(ino, a, &out.Attr)
	return h.n.d.newChild(ctx, h.n.EmbeddedInode(), ino, a), 0
}

func (h *dirHandle) Releasedir(ctx context.Context, flags uint32) { h.ents = nil }

func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	if n.d.denied(ctx) {
		return nil, syscall.EACCES
	}
	s, err := n.d.src.Readlink(n.ino)
	if err != nil {
		return nil, toErrno(err)
	}
	return []byte(s), 0
}

// handle is an open file: the Source's File, which keeps the file's chunk
// list and offset index, and the sequential-access detector state, which
// is per open file like the kernel's own readahead state.
type handle struct {
	f       File
	mu      sync.Mutex
	nextOff int64 // offset right after the previous read
	seqRun  int   // consecutive reads that continued the previous one
	pfEnd   int64 // prefetch issued up to here
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if n.d.denied(ctx) {
		return nil, 0, syscall.EACCES
	}
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	file, err := n.d.src.Open(n.ino)
	if err != nil {
		return nil, 0, toErrno(err)
	}
	if n.d.analysis != nil {
		n.d.analysis.open(n.ino)
	}
	cache := !n.d.opts.NoCacheFiles
	if cache && !n.d.opts.CacheSparse {
		// no_cache_sparse (the default): sparse files are mostly
		// zeros and often huge; keeping them in the page cache
		// only displaces useful pages.
		if a, err := n.d.src.Stat(n.ino); err == nil && a.Sparse {
			cache = false
		}
	}
	ff := uint32(fuse.FOPEN_DIRECT_IO)
	if cache {
		ff = fuse.FOPEN_KEEP_CACHE
	}
	return &handle{f: file, nextOff: -1}, ff, 0
}

func (n *node) Read(ctx context.Context, f fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	start := time.Now()
	d := n.d
	d.perf.reads.Add(1)
	h, errno := n.handle(f)
	if errno != 0 {
		d.perf.readErrors.Add(1)
		return nil, errno
	}
	cnt, err := h.f.ReadAt(ctx, dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		d.perf.readErrors.Add(1)
		return nil, toErrno(err)
	}
	d.perf.readBytes.Add(int64(cnt))
	if cnt > 0 {
		d.noteRead(h, off, int64(cnt))
	}
	d.perf.readLat.add(time.Since(start))
	return fuse.ReadResultData(dest[:cnt]), 0
}

// handle returns the open file behind f. The kernel passes the handle
// that Open returned; a request without one (which go-fuse allows) gets a
// file opened for this request only.
func (n *node) handle(f fs.FileHandle) (*handle, syscall.Errno) {
	if h, ok := f.(*handle); ok && h != nil {
		return h, 0
	}
	file, err := n.d.src.Open(n.ino)
	if err != nil {
		return nil, toErrno(err)
	}
	return &handle{f: file, nextOff: -1}, 0
}

// noteRead runs the sequential-access detector: after seq_detector reads
// that each start where the previous one ended, prefetch ahead so the next
// block is decompressed before the reader needs it.
func (d *driver) noteRead(h *handle, off, n int64) {
	if d.opts.SeqDetector <= 0 {
		return
	}
	h.mu.Lock()
	if off == h.nextOff {
		h.seqRun++
	} else {
		h.seqRun = 0
		h.pfEnd = 0
	}
	end := off + n
	h.nextOff = end
	var pfOff, pfLen int64
	if h.seqRun >= d.opts.SeqDetector {
		want := end + d.ahead
		if want > h.pfEnd {
			pfOff = max(end, h.pfEnd)
			pfLen = want - pfOff
			h.pfEnd = want
		}
	}
	trigger := h.seqRun == d.opts.SeqDetector
	h.mu.Unlock()
	if trigger {
		d.perf.seqTriggers.Add(1)
	}
	if pfLen > 0 {
		d.perf.prefetches.Add(1)
		h.f.Prefetch(pfOff, pfLen)
	}
}

func (n *node) Lseek(ctx context.Context, f fs.FileHandle, off uint64, whence uint32) (uint64, syscall.Errno) {
	a, err := n.d.src.Stat(n.ino)
	if err != nil {
		return 0, toErrno(err)
	}
	o := int64(off)
	if o < 0 || o >= a.Size {
		return 0, syscall.ENXIO
	}
	h, errno := n.handle(f)
	if errno != 0 {
		return 0, errno
	}
	var r int64
	switch whence {
	case unix.SEEK_DATA:
		r, err = h.f.SeekData(o)
	case unix.SEEK_HOLE:
		r, err = h.f.SeekHole(o)
	default:
		return 0, syscall.EINVAL
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			return 0, syscall.ENXIO
		}
		return 0, toErrno(err)
	}
	return uint64(r), 0
}

func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	info := n.d.src.Info()
	// Like the reference, report byte-granular sizes: f_frsize 1 and the
	// total as the original filesystem size; nothing is free.
	out.Bsize = max(info.BlockSize, 1)
	out.Frsize = 1
	out.Blocks = info.TotalSize
	out.Files = info.InodeCount
	out.NameLen = 255
	return 0
}

func (n *node) xattrNames() []string {
	if n.ino == n.d.src.Root() {
		if _, ok := n.d.remoteStats(); ok {
			return []string{XattrPid, XattrPerfmon, XattrRemote, XattrInodeInfo}
		}
		return []string{XattrPid, XattrPerfmon, XattrInodeInfo}
	}
	return []string{XattrInodeInfo}
}

func (n *node) xattrValue(name string) ([]byte, syscall.Errno) {
	isRoot := n.ino == n.d.src.Root()
	switch {
	case name == XattrPid && isRoot:
		return []byte(strconv.Itoa(n.d.pid)), 0
	case name == XattrPerfmon && isRoot:
		return []byte(n.d.perfReport()), 0
	case name == XattrRemote && isRoot:
		st, ok := n.d.remoteStats()
		if !ok {
			return nil, syscall.ENODATA
		}
		b, err := json.Marshal(st)
		if err != nil {
			return nil, syscall.EIO
		}
		return b, 0
	case name == XattrInodeInfo:
		info, err := n.d.src.InodeInfo(n.ino)
		if err != nil {
			return nil, toErrno(err)
		}
		b, err := json.Marshal(info)
		if err != nil {
			return nil, syscall.EIO
		}
		return b, 0
	}
	return nil, syscall.ENODATA
}

func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	if n.d.denied(ctx) {
		return 0, syscall.EACCES
	}
	v, e := n.xattrValue(attr)
	if e != 0 {
		return 0, e
	}
	if len(dest) == 0 {
		return uint32(len(v)), 0 // size probe
	}
	if len(dest) < len(v) {
		return uint32(len(v)), syscall.ERANGE
	}
	return uint32(copy(dest, v)), 0
}

func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	var buf []byte
	for _, s := range n.xattrNames() {
		buf = append(buf, s...)
		buf = append(buf, 0)
	}
	if len(dest) == 0 {
		return uint32(len(buf)), 0
	}
	if len(dest) < len(buf) {
		return uint32(len(buf)), syscall.ERANGE
	}
	return uint32(copy(dest, buf)), 0
}

// Everything that would modify the image fails with EROFS (the mount is
// also flagged read-only, so the kernel usually rejects these first).

func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return syscall.EROFS
}

func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return syscall.EROFS
}

func (n *node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	return syscall.EROFS
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EROFS
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

func (n *node) Mknod(ctx context.Context, name string, mode uint32, dev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno { return syscall.EROFS }

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno { return syscall.EROFS }

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	return syscall.EROFS
}

//go:build !windows && !(linux && (386 || arm))

package fusefs

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/godwarfs/godwarfs/internal/gofuse/fuse"
)

// FUSE requests counted by perfmon: every request the kernel sends that
// says something about how well the kernel's caches work.
const (
	opLookup = iota
	opForget
	opGetattr
	opStatx
	opReadlink
	opAccess
	opOpen
	opRead
	opLseek
	opFlush
	opRelease
	opOpendir
	opReaddir
	opReaddirplus
	opReleasedir
	opGetxattr
	opListxattr
	opStatfs
	numOps
)

var opNames = [numOps]string{
	"LOOKUP", "FORGET", "GETATTR", "STATX", "READLINK", "ACCESS", "OPEN", "READ", "LSEEK",
	"FLUSH", "RELEASE", "OPENDIR", "READDIR", "READDIRPLUS", "RELEASEDIR", "GETXATTR",
	"LISTXATTR", "STATFS",
}

// opCounts counts the requests that reached the driver, by opcode.
type opCounts [numOps]atomic.Int64

// report lists the non-zero counts in a fixed order.
func (c *opCounts) report(b *strings.Builder) {
	fmt.Fprintf(b, "fuse.requests:")
	for i := range c {
		if n := c[i].Load(); n > 0 {
			fmt.Fprintf(b, " %s=%d", opNames[i], n)
		}
	}
	fmt.Fprintln(b)
}

// countingFS counts the requests passed to the node file system.
type countingFS struct {
	fuse.RawFileSystem
	n *opCounts
}

func (c countingFS) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	c.n[opLookup].Add(1)
	return c.RawFileSystem.Lookup(cancel, h, name, out)
}

func (c countingFS) Forget(nodeid, nlookup uint64) {
	c.n[opForget].Add(1)
	c.RawFileSystem.Forget(nodeid, nlookup)
}

func (c countingFS) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	c.n[opGetattr].Add(1)
	return c.RawFileSystem.GetAttr(cancel, in, out)
}

func (c countingFS) Statx(cancel <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	c.n[opStatx].Add(1)
	return c.RawFileSystem.Statx(cancel, in, out)
}

func (c countingFS) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	c.n[opReadlink].Add(1)
	return c.RawFileSystem.Readlink(cancel, h)
}

func (c countingFS) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	c.n[opAccess].Add(1)
	return c.RawFileSystem.Access(cancel, in)
}

func (c countingFS) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	c.n[opOpen].Add(1)
	return c.RawFileSystem.Open(cancel, in, out)
}

func (c countingFS) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	c.n[opRead].Add(1)
	return c.RawFileSystem.Read(cancel, in, buf)
}

func (c countingFS) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	c.n[opLseek].Add(1)
	return c.RawFileSystem.Lseek(cancel, in, out)
}

func (c countingFS) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	c.n[opFlush].Add(1)
	return c.RawFileSystem.Flush(cancel, in)
}

func (c countingFS) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	c.n[opRelease].Add(1)
	c.RawFileSystem.Release(cancel, in)
}

func (c countingFS) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	c.n[opOpendir].Add(1)
	return c.RawFileSystem.OpenDir(cancel, in, out)
}

func (c countingFS) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	c.n[opReaddir].Add(1)
	return c.RawFileSystem.ReadDir(cancel, in, out)
}

func (c countingFS) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	c.n[opReaddirplus].Add(1)
	return c.RawFileSystem.ReadDirPlus(cancel, in, out)
}

func (c countingFS) ReleaseDir(in *fuse.ReleaseIn) {
	c.n[opReleasedir].Add(1)
	c.RawFileSystem.ReleaseDir(in)
}

func (c countingFS) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	c.n[opGetxattr].Add(1)
	return c.RawFileSystem.GetXAttr(cancel, h, attr, dest)
}

func (c countingFS) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	c.n[opListxattr].Add(1)
	return c.RawFileSystem.ListXAttr(cancel, h, dest)
}

func (c countingFS) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	c.n[opStatfs].Add(1)
	return c.RawFileSystem.StatFs(cancel, h, out)
}

// limitFS handles at most cap(sem) requests at once (max_threads);
// further requests wait for a slot. Requests without a reply (FORGET)
// and the cheap release calls are not limited, so a full set of slots
// never holds up the kernel's bookkeeping.
type limitFS struct {
	fuse.RawFileSystem
	sem chan struct{}
}

func (l limitFS) enter(cancel <-chan struct{}) bool {
	select {
	case l.sem <- struct{}{}:
		return true
	case <-cancel:
		return false
	}
}

func (l limitFS) leave() { <-l.sem }

func (l limitFS) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	if !l.enter(cancel) {
		return fuse.EINTR
	}
	defer l.leave()
	return l.RawFileSystem.Lookup(cancel, h, name, out)
}

func (l limitFS) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	if !l.enter(cancel) {
		return fuse.EINTR
	}
	defer l.leave()
	return l.RawFileSystem.GetAttr(cancel, in, out)
}

func (l limitFS) Statx(cancel <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	if !l.enter(cancel) {
		return fuse.EINTR
	}
	defer l.leave()
	return l.RawFileSystem.Statx(cancel, in, out)
}

func (l limitFS) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	if !l.enter(cancel) {
		return nil, fuse.EINTR
	}
	defer l.leave()
	return l.RawFileSystem.Readlink(cancel, h)
}

func (l limitFS) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if !l.enter(cancel) {
		return fuse.EINTR
	}
	defer l.leave()
	return l.RawFileSystem.Open(cancel, in, out)
}

func (l limitFS) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	if !l.enter(cancel) {
		return nil, fuse.EINTR
	}
	defer l.leave()
	return l.RawFileSystem.Read(cancel, in, buf)
}

func (l limitFS) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	if !l.enter(cancel) {
		return fuse.EINTR
	}
	defer l.leave()
	return l.RawFileSystem.Lseek(cancel, in, out)
}

func (l limitFS) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if !l.enter(cancel) {
		return fuse.EINTR
	}
	defer l.leave()
	return l.RawFileSystem.OpenDir(cancel, in, out)
}

func (l limitFS) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	if !l.enter(cancel) {
		return fuse.EINTR
	}
	defer l.leave()
	return l.RawFileSystem.ReadDir(cancel, in, out)
}

func (l limitFS) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	if !l.enter(cancel) {
		return fuse.EINTR
	}
	defer l.leave()
	return l.RawFileSystem.ReadDirPlus(cancel, in, out)
}

func (l limitFS) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	if !l.enter(cancel) {
		return 0, fuse.EINTR
	}
	defer l.leave()
	return l.RawFileSystem.GetXAttr(cancel, h, attr, dest)
}

func (l limitFS) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	if !l.enter(cancel) {
		return 0, fuse.EINTR
	}
	defer l.leave()
	return l.RawFileSystem.ListXAttr(cancel, h, dest)
}

func (l limitFS) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	if !l.enter(cancel) {
		return fuse.EINTR
	}
	defer l.leave()
	return l.RawFileSystem.StatFs(cancel, h, out)
}

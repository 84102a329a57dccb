//go:build !windows && !(linux && (386 || arm))

package fusefs

import (
	"sync/atomic"

	"github.com/godwarfs/godwarfs/internal/gofuse/fuse"
)

// readersFS starts a second reader of the FUSE device before a READ,
// the one request that can wait long (for a block to be fetched and
// decoded), so that other requests are served meanwhile.
//
// The driver mounts with go-fuse's ReadersOnDemand (a patch of ours,
// see third_party/go-fuse/PATCHES.md): one goroutine waits in read(2)
// and handles what it reads itself. go-fuse otherwise keeps two or
// three goroutines waiting there, and on a machine with few CPUs the
// runtime then takes their Ps back while they wait and hands them out
// again on every request, which cost a LOOKUP about a third more CPU
// than the reference driver's. Metadata requests are answered from
// memory or the mapped image: their longest wait is a page fault.
type readersFS struct {
	fuse.RawFileSystem
	srv atomic.Pointer[fuse.Server]
}

func (r *readersFS) Init(s *fuse.Server) {
	r.srv.Store(s)
	r.RawFileSystem.Init(s)
}

func (r *readersFS) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	if s := r.srv.Load(); s != nil {
		s.ExpectBlocking()
	}
	return r.RawFileSystem.Read(cancel, in, buf)
}

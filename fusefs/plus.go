//go:build !windows && !(linux && (386 || arm))

package fusefs

import (
	"sync/atomic"
	"syscall"
)

// READDIRPLUS entries can carry each entry's attributes, which saves a
// LOOKUP per entry when the caller stats what it lists (ls -l, du, tar)
// but costs the driver a Stat and the kernel a new inode per entry when
// it only walks names (find): with a large readdir buffer the kernel asks
// for a whole directory in one READDIRPLUS, so on a tree of a million
// files find made the kernel set up a million inodes nobody used.
//
// plusPolicy decides per listing. By default an entry gets attributes
// only among the first plusHead of a listing (small directories need no
// lookups at all) or when it is a directory; the rest carry names and
// types only. A LOOKUP of a
// non-directory in the directory last listed that way shows that the
// caller stats what it lists, and from then on listings carry every
// entry's attributes. Every plusProbe-th listing after that is a probe
// listed without them again: the first LOOKUP of a non-directory in it
// keeps attributes on, no such lookup leaves them off.
type plusPolicy struct {
	full     atomic.Bool
	bare     atomic.Uint64 // node id of the last directory listed without attributes
	listings atomic.Uint64
}

const (
	plusHead  = 8
	plusProbe = 64
)

// attrs reports whether a READDIRPLUS of directory node dir fills the
// attributes of every entry; start is set for the first read of a
// listing (offset 0), which decides for the listing.
func (p *plusPolicy) attrs(dir uint64, start bool) bool {
	if !start {
		return p.full.Load()
	}
	if p.full.Load() && p.listings.Add(1)%plusProbe != 0 {
		return true
	}
	p.full.Store(false)
	p.bare.Store(dir)
	return false
}

// lookedUp notes a LOOKUP in directory node dir of an entry with the
// given mode.
func (p *plusPolicy) lookedUp(dir uint64, mode uint32) {
	if mode&syscall.S_IFMT != syscall.S_IFDIR && p.bare.Load() == dir && !p.full.Load() {
		p.full.Store(true)
	}
}

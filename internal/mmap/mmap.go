// Package mmap maps regions of files read-only into memory, for data that
// is read in place instead of copied into the heap (the uncompressed
// metadata of a local image). Mapped pages belong to the page cache, are
// shared with every other reader of the file and can be dropped by the
// kernel under memory pressure, where a heap copy could not.
package mmap

import "errors"

// ErrUnsupported is returned where files cannot be mapped (no mmap on
// this system, or an empty region); callers read the data instead.
var ErrUnsupported = errors.ErrUnsupported

// Region is a read-only mapping of part of a file. Once its bytes are in
// use a region is not unmapped: slices of it may be held anywhere, and the
// memory stays valid for the life of the process. It is meant for data
// opened once per process, such as the metadata of a mounted image.
type Region struct {
	mapping []byte // the whole mapping, from a page boundary
	data    []byte // the requested bytes within it
}

// Bytes returns the mapped bytes. They must not be written.
func (r *Region) Bytes() []byte { return r.data }

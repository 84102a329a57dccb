//go:build unix

package mmap

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Map maps n bytes of f from offset off read-only. Changes other
// processes make to the file show through the mapping, and truncating the
// file under it makes reads of the lost pages fault; like the reference
// tools, which map the whole image, callers accept that for image files.
func Map(f *os.File, off, n int64) (*Region, error) {
	if n <= 0 || off < 0 {
		return nil, ErrUnsupported
	}
	page := int64(os.Getpagesize())
	start := off &^ (page - 1)
	length := off - start + n
	if length != int64(int(length)) {
		return nil, ErrUnsupported
	}
	m, err := unix.Mmap(int(f.Fd()), start, int(length), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", f.Name(), err)
	}
	return &Region{mapping: m, data: m[off-start : off-start+n : off-start+n]}, nil
}

// WillNeed asks the kernel to start reading the region into the page
// cache, for a caller about to read all of it.
func (r *Region) WillNeed() { _ = unix.Madvise(r.mapping, unix.MADV_WILLNEED) }

// DropResident removes the region's pages from the process's resident
// set after a pass over all of it (a checksum, a consistency check): they
// stay in the page cache, and the next read of a page maps it again
// without reading the file.
func (r *Region) DropResident() error {
	if err := unix.Madvise(r.mapping, unix.MADV_DONTNEED); err != nil {
		return fmt.Errorf("madvise: %w", err)
	}
	return nil
}

// Unmap releases the mapping. Only for a region no slice of which is
// held any more, such as the metadata of an image that failed to open.
func (r *Region) Unmap() error { return unix.Munmap(r.mapping) }

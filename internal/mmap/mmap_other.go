//go:build !unix

package mmap

import "os"

// Map reports ErrUnsupported: this system's files are read, not mapped.
func Map(f *os.File, off, n int64) (*Region, error) { return nil, ErrUnsupported }

// DropResident does nothing; no region exists on this system.
func (r *Region) DropResident() error { return nil }

// Unmap does nothing; no region exists on this system.
func (r *Region) Unmap() error { return nil }

// WillNeed does nothing; no region exists on this system.
func (r *Region) WillNeed() {}

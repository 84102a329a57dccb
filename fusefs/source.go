//go:build !windows && !(linux && (386 || arm))

// Package fusefs is the FUSE driver for DwarFS images, built on the
// go-fuse/v2 raw protocol API: the kernel's node ids are the image's inode
// numbers, so the driver keeps no state per inode the kernel knows. The
// image is immutable, so the kernel is allowed to cache entries,
// attributes, listings and page contents for a long time.
//
// Inode numbers: the image numbers inodes from 0 (the root is usually 0);
// the driver reports st_ino = image inode + 1 so the root gets FUSE's
// root id 1 and no file has the (often special-cased) st_ino 0. Hard links
// share an image inode and therefore share st_ino.
package fusefs

import (
	"context"
	"time"

	"github.com/godwarfs/godwarfs/metadata"
)

// Timespec is a timestamp as stored in the image.
type Timespec struct {
	Sec  int64
	Nsec uint32
}

// Attr is the subset of inode attributes the driver reports.
type Attr struct {
	Mode          uint32 // full st_mode
	UID, GID      uint32
	Nlink         uint32
	Size          int64
	AllocatedSize int64 // bytes not in holes; 0 means Size unless Sparse
	Sparse        bool  // a regular file with holes
	Atime         Timespec
	Mtime         Timespec
	Ctime         Timespec
	Btime         Timespec // valid if HasBtime
	HasBtime      bool
	Rdev          uint64
}

// DirEntry is one directory entry (without "." and ".."). It is the
// metadata package's entry, so that an image's listings reach the driver
// without a copy.
type DirEntry = metadata.Entry

// FsInfo describes the image as a whole, for statfs.
type FsInfo struct {
	BlockSize  uint32
	Workers    int // blocks decoded at once (0: unknown, taken as 1)
	TotalSize  uint64
	InodeCount uint64
}

// CacheStats is a snapshot of block cache counters.
type CacheStats struct {
	Hits, Misses, Decoded, DecodedBytes, Evictions int64
	CurrentBytes, PeakBytes, Capacity              int64
	// Reused counts decodes into the memory of an evicted block, Spent
	// blocks marked as gone past by a sequential reader.
	Reused, Spent int64
	// LoadingBytes are buffers of blocks being decoded, PinnedBytes blocks
	// out of the cache that reads still hold; both count against Capacity
	// and in PeakBytes. Overcommits counts loads that found every cached
	// block pinned and went beyond it.
	LoadingBytes, PinnedBytes, Overcommits int64
}

// Source is what the driver needs from an opened image. NewImageSource
// adapts a *godwarfs.Image; tests may supply their own.
type Source interface {
	Root() uint32
	Stat(ino uint32) (Attr, error)
	ReadDir(dir uint32) ([]DirEntry, error)
	Lookup(dir uint32, name string) (uint32, bool)
	Readlink(ino uint32) (string, error)
	// Open opens regular file ino; the driver keeps the File for as
	// long as the kernel keeps the file open and reads only through it.
	Open(ino uint32) (File, error)
	// Tidy drops cached blocks not used for maxAge.
	Tidy(maxAge time.Duration)
	Info() FsInfo
	CacheStats() CacheStats
	// InodeInfo returns a description of the inode as a JSON object
	// (the value of the user.dwarfs.inodeinfo xattr).
	InodeInfo(ino uint32) ([]byte, error)
}

// File is a regular file opened through a Source. Its methods are called
// concurrently.
type File interface {
	// ReadAt reads file content; holes read as zeros. It returns early
	// with ctx's error once ctx ends (the kernel interrupted the read).
	ReadAt(ctx context.Context, p []byte, off int64) (int, error)
	// SeekData / SeekHole follow lseek(2) semantics for off < size;
	// an error wrapping io.EOF or syscall.ENXIO means "none".
	SeekData(off int64) (int64, error)
	SeekHole(off int64) (int64, error)
	// Prefetch hints that [off, off+n) will be read soon. It must not
	// block on decompression.
	Prefetch(off, n int64)
	// DontNeed hints that [off, off+n) will not be read again soon: a
	// sequential reader has gone past it. It must not block.
	DontNeed(off, n int64)
}

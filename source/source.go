// Package source gives read access to a DwarFS image wherever it is
// stored: a local file, or a remote object read through a Backend that
// a package registered for its URL scheme. This module's backends are
// source/httpsource (http://, https://), source/s3source (s3://) and
// source/registrysource (docker://REGISTRY/REPO:TAG or @DIGEST, see
// package ociartifact); source/remote imports all three. This package
// itself needs no network client.
//
// Remote sources fetch only the byte ranges that are read, pin the object
// they opened (a changed object fails reads instead of mixing content),
// retry transient failures, and can keep what they fetched in a local
// disk cache shared by several processes.
package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"
)

// Source is the stored bytes of one image.
type Source interface {
	io.ReaderAt
	// Size is the object size in bytes.
	Size() int64
	// Identity names the content: two sources with the same Identity
	// hold the same bytes. It includes the object's ETag or modification
	// time, never credentials.
	Identity() string
	// Name is the location for messages, without credentials.
	Name() string
	// Stats returns the transfer counters so far.
	Stats() Stats
	Close() error
}

// Stats counts the work a source did.
type Stats struct {
	Requests     int64 `json:"requests"`      // range requests sent, retries included
	Retries      int64 `json:"retries"`       // requests that were repeated after a failure
	BytesFetched int64 `json:"bytes_fetched"` // payload bytes received from the server
	MemHits      int64 `json:"mem_hits"`      // reads served from memory (headers, tail, recent ranges)
	DiskHits     int64 `json:"disk_hits"`     // reads served from the disk cache
	DiskMisses   int64 `json:"disk_misses"`   // disk cache lookups that found nothing usable
	DiskCorrupt  int64 `json:"disk_corrupt"`  // disk cache entries rejected by their checksum
	DiskBytes    int64 `json:"disk_bytes"`    // bytes read from the disk cache
	Errors       int64 `json:"errors"`        // reads that failed after all attempts
}

// String is a one-line summary for perfmon output.
func (s Stats) String() string {
	return fmt.Sprintf("%d requests (%d retried), %d bytes fetched, %d memory hits, disk cache %d hits (%d bytes) %d misses %d corrupt, %d errors",
		s.Requests, s.Retries, s.BytesFetched, s.MemHits, s.DiskHits, s.DiskBytes, s.DiskMisses, s.DiskCorrupt, s.Errors)
}

// Options control how a remote source fetches. The zero value is usable.
type Options struct {
	// Workers bounds the concurrent range requests (default 4).
	Workers int
	// Timeout bounds one read, all attempts and waits included
	// (default 60s).
	Timeout time.Duration
	// Attempts bounds the tries per range (default 5).
	Attempts int
	// RetryWait is the first backoff between attempts (default 100ms);
	// it doubles per attempt, with full jitter, up to 5s.
	RetryWait time.Duration
	// TailSize is how much of the object's end is fetched at open to find
	// the section index and metadata in one request (default 256 KiB).
	TailSize int64
	// LazyBlockHeaders leaves the headers of data blocks out of the
	// requests made at open, for readers that read a block's header when
	// they first use the block (godwarfs does unless told to check every
	// header); the other sections' headers are still fetched. Without it
	// every header the section index names is fetched at open.
	LazyBlockHeaders bool
	// MemCache bounds the memory kept for recently fetched ranges
	// (default 32 MiB; negative disables).
	MemCache int64
	// DiskCache is a directory for a persistent cache of fetched ranges
	// ("" = none); DiskCacheSize bounds it (default 1 GiB).
	DiskCache     string
	DiskCacheSize int64
	// S3 configures s3:// URLs.
	S3 S3Options
	// Logf receives notable events (object changed, retries exhausted).
	// Nil discards them.
	Logf func(format string, args ...any)
}

// S3Options configure s3:// access. Empty fields fall back to the
// environment (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS_REGION,
// AWS_PROFILE, credentials variables) and the shared config files.
type S3Options struct {
	Endpoint  string // e.g. http://127.0.0.1:8333
	Region    string
	PathStyle bool // bucket in the path instead of the host name
	Profile   string
}

func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.Attempts <= 0 {
		o.Attempts = 5
	}
	if o.RetryWait <= 0 {
		o.RetryWait = 100 * time.Millisecond
	}
	if o.TailSize <= 0 {
		o.TailSize = 256 << 10
	}
	if o.MemCache == 0 {
		o.MemCache = 32 << 20
	}
	if o.DiskCacheSize <= 0 {
		o.DiskCacheSize = 1 << 30
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// ErrChanged reports that a remote object no longer matches the version
// that was opened.
var ErrChanged = errors.New("object changed since it was opened")

// ErrFetch reports a remote read that failed after all attempts.
var ErrFetch = errors.New("remote read failed")

// IsRemote reports whether name is a remote object: SCHEME://REST for
// a scheme some package registered (Register) or one of this module's
// (http, https, s3, docker), registered or not, so that Open of an
// unregistered one says what to import instead of looking for a file.
func IsRemote(name string) bool {
	s := scheme(name)
	if s == "" {
		return false
	}
	if _, ok := knownSchemes[s]; ok {
		return true
	}
	backendsMu.RLock()
	defer backendsMu.RUnlock()
	_, ok := backends[s]
	return ok
}

// Open opens a local file or a remote object: an http(s):// or s3://
// URL, or a docker:// reference to an image in a registry, read by the
// package that registered the scheme (import
// github.com/godwarfs/godwarfs/source/remote for all of them). Without
// it, Open fails with an error wrapping ErrNotRegistered that names the
// package. Remote opens make one request to learn the size and version
// (a registry: the authentication handshake and the manifest), then
// fetch the object's tail and the section headers it lists.
func Open(ctx context.Context, name string, opts Options) (Source, error) {
	if !IsRemote(name) {
		return OpenFile(name)
	}
	f, err := newFetcher(ctx, name, opts.withDefaults())
	if err != nil {
		return nil, err
	}
	return openRemote(ctx, f, opts)
}

// isRegistry tells a docker:// reference, which is not a URL (a tag
// after a colon, a digest after an @) and carries no credentials.
func isRegistry(name string) bool { return scheme(name) == "docker" }

// Redact returns a URL without user information, and without its query
// when that may carry a signature; other strings are returned unchanged.
func Redact(name string) string {
	if !IsRemote(name) || isRegistry(name) {
		return name
	}
	u, err := url.Parse(name)
	if err != nil {
		// Cut anything that could be a password out of an unparsable URL.
		if i := strings.Index(name, "://"); i >= 0 {
			rest := name[i+3:]
			if j := strings.LastIndex(rest, "@"); j >= 0 {
				return name[:i+3] + "REDACTED@" + rest[j+1:]
			}
		}
		return name
	}
	return RedactURL(u)
}

// RedactURL returns u as text without user information, and without its
// query when that may carry a signature.
func RedactURL(u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = url.User("REDACTED")
	}
	if c.RawQuery != "" {
		c.RawQuery = "REDACTED"
	}
	return c.String()
}

// ImageOffset returns the image offset (the length of any prefix before
// the image) that a remote source learned from the section index at
// open, so that the image reader need not scan for it; ok is false when
// it is unknown.
func ImageOffset(s Source) (off int64, ok bool) {
	if r, isRemote := s.(interface{ imageOffset() (int64, bool) }); isRemote {
		return r.imageOffset()
	}
	return 0, false
}

// File is a local image file read with pread.
type File struct {
	f    *os.File
	size int64
	id   string
}

// OpenFile opens a local image file.
func OpenFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	id := fmt.Sprintf("file:%s\x00%d\x00%d", path, st.Size(), st.ModTime().UnixNano())
	return &File{f: f, size: st.Size(), id: id}, nil
}

// ReadAt implements io.ReaderAt.
func (f *File) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAt(p, off) }

// Size implements Source.
func (f *File) Size() int64 { return f.size }

// Identity implements Source.
func (f *File) Identity() string { return f.id }

// Name implements Source.
func (f *File) Name() string { return f.f.Name() }

// Stats implements Source; local reads are not counted.
func (f *File) Stats() Stats { return Stats{} }

// Close implements Source.
func (f *File) Close() error { return f.f.Close() }

// File returns the open file.
func (f *File) File() *os.File { return f.f }

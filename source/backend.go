package source

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A Fetcher reads one remote object for the engine every remote source
// runs on: the engine decides what to fetch, caches it, retries and
// pins the version; a Fetcher only speaks its protocol. Packages that
// register a scheme (Register) implement it.
//
// An error wrapping ErrChanged means the object is no longer the version
// opened, and fails this and every later read; an error marked with
// Retryable is tried again; any other error fails the read at once.
type Fetcher interface {
	// Name is the location for messages, without credentials.
	Name() string
	// Key is the location without credentials; with the Version it
	// makes the source's Identity and names its disk cache entries.
	Key() string
	// Stat learns the object's size and version.
	Stat(ctx context.Context) (Version, error)
	// Get reads bytes [off, off+len(p)) of the version pin into p. It
	// adds the payload bytes it received to *got, even when it fails.
	Get(ctx context.Context, p []byte, off int64, pin Version, got *atomic.Int64) error
	// Close releases idle connections.
	Close()
}

// Version is what a remote object looked like when it was opened. The
// engine passes it to every Get, which must fail with ErrChanged when
// the object differs.
type Version struct {
	Size         int64
	ETag         string // as sent by the server, quotes included; "" if none
	LastModified string // an HTTP date; "" if none
}

// A Sharer is a Fetcher that can read other objects of its kind over
// its connections and credentials; ReadSmall uses it to read an image's
// companions (its signature) beside the image.
type Sharer interface {
	// Share returns a Fetcher of name, or nil when name is of another
	// kind or invalid (a Fetcher of its own then says why). It need not
	// be closed.
	Share(name string) Fetcher
}

// A CompanionReader is a Fetcher whose objects are typed, as a
// registry's artifacts are. ReadSmall calls ReadCompanion before the
// first Stat: the object may then be an image's companion (its
// signature) as well as an image.
type CompanionReader interface {
	ReadCompanion()
}

// Backend is a kind of remote storage.
type Backend struct {
	// Open returns a Fetcher of name, which starts with a scheme the
	// Backend was registered for. It does not read the object yet.
	// o has its defaults filled in.
	Open func(ctx context.Context, name string, o Options) (Fetcher, error)
	// Sibling returns the name of a companion of name (see the package
	// function Sibling). Nil means the URL rule: suffix is appended to
	// the URL's path.
	Sibling func(name, suffix string) (string, error)
}

var (
	backendsMu sync.RWMutex
	backends   = map[string]Backend{}
)

// Register makes Open, ReadSmall and Sibling handle names that start
// with scheme:// (scheme compared without case) with b. Packages
// implementing a Backend call it from their init function, as image
// formats and database/sql drivers register. It panics when b.Open is
// nil or scheme is registered already.
func Register(scheme string, b Backend) {
	scheme = strings.ToLower(scheme)
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if b.Open == nil {
		panic("source: Register of " + scheme + ":// without Open")
	}
	if _, dup := backends[scheme]; dup {
		panic("source: Register called twice for " + scheme + "://")
	}
	backends[scheme] = b
}

// knownSchemes names the package that registers each scheme of this
// module, for the error that says what to import.
var knownSchemes = map[string]string{
	"http":   "github.com/godwarfs/godwarfs/source/httpsource",
	"https":  "github.com/godwarfs/godwarfs/source/httpsource",
	"s3":     "github.com/godwarfs/godwarfs/source/s3source",
	"docker": "github.com/godwarfs/godwarfs/source/registrysource",
}

// allRemote is the package that registers every scheme of this module.
const allRemote = "github.com/godwarfs/godwarfs/source/remote"

// ErrNotRegistered reports a remote name whose scheme no imported
// package registered. The error that wraps it names the package.
var ErrNotRegistered = errors.New("scheme not registered")

// notRegistered is ErrNotRegistered for one name, told as what to do.
type notRegistered struct{ name, scheme string }

func (e *notRegistered) Error() string {
	if pkg, known := knownSchemes[e.scheme]; known {
		return fmt.Sprintf("%s: %s:// images need package %s imported (or %s for every kind)", Redact(e.name), e.scheme, pkg, allRemote)
	}
	return fmt.Sprintf("%s: no imported package registered %s://", Redact(e.name), e.scheme)
}

func (e *notRegistered) Is(target error) bool { return target == ErrNotRegistered }

// scheme returns the lower-case scheme of a name of the form
// SCHEME://REST with REST not empty, or "".
func scheme(name string) string {
	i := strings.Index(name, "://")
	if i <= 0 || len(name) == i+3 {
		return ""
	}
	for j, c := range name[:i] {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case j > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return ""
		}
	}
	return strings.ToLower(name[:i])
}

// backend returns the Backend of a remote name, or an error that names
// the package to import.
func backend(name string) (Backend, error) {
	s := scheme(name)
	backendsMu.RLock()
	b, ok := backends[s]
	backendsMu.RUnlock()
	if ok {
		return b, nil
	}
	return Backend{}, &notRegistered{name: name, scheme: s}
}

// newFetcher returns the fetcher of a remote name.
func newFetcher(ctx context.Context, name string, o Options) (Fetcher, error) {
	b, err := backend(name)
	if err != nil {
		return nil, err
	}
	return b.Open(ctx, name, o)
}

// retryable marks an error worth another attempt; after is the server's
// Retry-After hint (0 = none).
type retryable struct {
	err   error
	after time.Duration
}

func (e *retryable) Error() string { return e.err.Error() }
func (e *retryable) Unwrap() error { return e.err }

// Retryable marks err as transient, to be tried again after a backoff
// of at least after (a server's Retry-After; 0 leaves it to the engine)
// while the read's attempts and time last. A nil err stays nil.
func Retryable(err error, after time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryable{err: err, after: after}
}

// IsRetryable reports whether err, or an error it wraps, was marked
// with Retryable.
func IsRetryable(err error) bool {
	var rt *retryable
	return errors.As(err, &rt)
}

// FetcherOf returns the Fetcher a remote Source from Open reads with,
// or nil for other sources, for a backend's own accessors (such as the
// manifest digest of a registry image).
func FetcherOf(s Source) Fetcher {
	if r, ok := s.(*remote); ok {
		return r.f
	}
	return nil
}

// HeaderRequests is the most requests a remote source has in flight at
// open, when it fetches the section headers of an image of small blocks
// (round trips, not bandwidth, bound that). Backends keep as many idle
// connections per host.
const HeaderRequests = 32

package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/godwarfs/godwarfs/ociartifact"
)

// ErrTooLarge reports a file or object larger than ReadSmall allows.
var ErrTooLarge = errors.New("too large")

// Sibling returns the name of the file beside name whose name is name's
// with suffix appended: for a local path, path+suffix; for a URL, the URL
// with suffix appended to its path (for s3://BUCKET/KEY, the object
// KEY+suffix), keeping the query and dropping any fragment.
func Sibling(name, suffix string) string {
	if isRegistry(name) {
		// Another tag of the repository: TAG+suffix, or for a digest
		// sha256-HEX+suffix.
		if s, err := ociartifact.SiblingRef(name, suffix); err == nil {
			return s
		}
		return name + suffix // ReadSmall reports the bad reference
	}
	if !IsRemote(name) {
		return name + suffix
	}
	u, err := url.Parse(name)
	if err != nil {
		return name + suffix // ReadSmall reports the unparsable URL
	}
	u.Fragment, u.RawFragment = "", ""
	u.Path += suffix
	if u.RawPath != "" {
		u.RawPath += url.PathEscape(suffix)
	}
	return u.String()
}

// ReadSmall returns all of the local file or remote object name (an
// http://, https:// or s3:// URL), refusing one larger than limit bytes
// with an error wrapping ErrTooLarge, for small companions of an image
// such as its signature. A remote object is fetched like an image's
// bytes, with opts' timeouts and retries; when share is a remote Source
// of the same protocol (from Open), its connections, and for S3 its
// client and credentials, are used. Errors name the file or object; a
// missing one is an error, never an empty result.
func ReadSmall(ctx context.Context, name string, limit int64, opts Options, share Source) ([]byte, error) {
	if !IsRemote(name) {
		return readSmallFile(name, limit)
	}
	o := opts.withDefaults()
	var f fetcher
	var err error
	if r, ok := share.(*remote); ok && isRegistry(name) {
		if rf, ok := r.f.(*registryFetcher); ok {
			if sf := rf.siblingRef(name); sf != nil {
				f = sf
			}
		}
	} else if ok {
		u, err := url.Parse(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Redact(name), redactErr(err))
		}
		f = r.f.sibling(u)
	}
	if f == nil {
		if f, err = newFetcherName(ctx, name, o); err != nil {
			return nil, err
		}
		defer f.close()
	}
	if rf, ok := f.(*registryFetcher); ok {
		// A companion of an image: its signature, or an image.
		rf.accept = []string{ociartifact.SignatureMediaType, ociartifact.MediaType}
	}
	r := &remote{f: f, o: o}
	_, err = r.retry(ctx, 0, 0, func(ctx context.Context) error {
		var err error
		r.info, err = f.stat(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	if r.info.size > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than %d: %w", f.name(), r.info.size, limit, ErrTooLarge)
	}
	b := make([]byte, r.info.size)
	if len(b) == 0 {
		return b, nil
	}
	if _, err := r.retry(ctx, 0, r.info.size, func(ctx context.Context) error {
		return f.get(ctx, b, 0, r.info, &r.c.bytes)
	}); err != nil {
		return nil, err
	}
	return b, nil
}

func readSmallFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // names the path
	}
	defer f.Close()
	// Read one byte past the limit rather than trust Stat: a device or a
	// pipe reports no size.
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: more than %d bytes: %w", path, limit, ErrTooLarge)
	}
	return b, nil
}

// newFetcher returns the fetcher for u's protocol.
func newFetcher(ctx context.Context, u *url.URL, o Options) (fetcher, error) {
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		return newHTTPFetcher(u, o)
	case "s3":
		return newS3Fetcher(ctx, u, o)
	}
	return nil, fmt.Errorf("%s: unsupported URL scheme %q", Redact(u.String()), u.Scheme)
}

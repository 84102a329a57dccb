package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
)

// ErrTooLarge reports a file or object larger than ReadSmall allows.
var ErrTooLarge = errors.New("too large")

// Sibling returns the name of the file beside name whose name is name's
// with suffix appended: for a local path, path+suffix; for a URL, the URL
// with suffix appended to its path (for s3://BUCKET/KEY, the object
// KEY+suffix), keeping the query and dropping any fragment; for other
// names, what their Backend's Sibling says (for docker://, another tag
// of the repository, see package registrysource).
func Sibling(name, suffix string) string {
	if !IsRemote(name) {
		return name + suffix
	}
	if b, err := backend(name); err == nil && b.Sibling != nil {
		if s, err := b.Sibling(name, suffix); err == nil {
			return s
		}
		return name + suffix // ReadSmall reports the bad name
	}
	if isRegistry(name) {
		return name + suffix // ReadSmall reports the missing backend
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

// ReadSmall returns all of the local file or remote object name,
// refusing one larger than limit bytes with an error wrapping
// ErrTooLarge, for small companions of an image such as its signature. A
// remote object is fetched like an image's bytes, with opts' timeouts
// and retries; when share is a remote Source (from Open) whose Fetcher
// is a Sharer of name's kind, its connections, and for S3 its client and
// credentials, are used. Errors name the file or object; a missing one
// is an error, never an empty result.
func ReadSmall(ctx context.Context, name string, limit int64, opts Options, share Source) ([]byte, error) {
	if !IsRemote(name) {
		return readSmallFile(name, limit)
	}
	o := opts.withDefaults()
	var f Fetcher
	if sh, ok := FetcherOf(share).(Sharer); ok {
		f = sh.Share(name)
	}
	if f == nil {
		var err error
		if f, err = newFetcher(ctx, name, o); err != nil {
			return nil, err
		}
		defer f.Close()
	}
	if c, ok := f.(CompanionReader); ok {
		c.ReadCompanion()
	}
	r := &remote{f: f, o: o}
	_, err := r.retry(ctx, 0, 0, func(ctx context.Context) error {
		var err error
		r.info, err = f.Stat(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	if r.info.Size > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than %d: %w", f.Name(), r.info.Size, limit, ErrTooLarge)
	}
	b := make([]byte, r.info.Size)
	if len(b) == 0 {
		return b, nil
	}
	if _, err := r.retry(ctx, 0, r.info.Size, func(ctx context.Context) error {
		return f.Get(ctx, b, 0, r.info, &r.c.bytes)
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

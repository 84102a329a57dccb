// Package httpsource reads images at http:// and https:// URLs with
// HTTP Range requests. Importing it registers both schemes with package
// source, so that source.Open and godwarfs.Open read such URLs:
//
//	import _ "github.com/godwarfs/godwarfs/source/httpsource"
//
// Credentials in the URL (https://USER:PASSWORD@HOST/...) are sent as
// basic authentication and never appear in messages. Reads are pinned to
// the version opened by its ETag (If-Match), or else its Last-Modified
// time.
package httpsource

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/godwarfs/godwarfs/source"
	"github.com/godwarfs/godwarfs/source/internal/httpfetch"
)

func init() {
	b := source.Backend{Open: open}
	source.Register("http", b)
	source.Register("https", b)
}

// httpFetcher reads an object with HTTP Range requests.
type httpFetcher struct {
	u      *url.URL // without user information
	user   *url.Userinfo
	client *http.Client
	tr     *http.Transport
}

func open(_ context.Context, name string, o source.Options) (source.Fetcher, error) {
	u, err := parse(name)
	if err != nil {
		return nil, err
	}
	tr := NewTransport(o.Workers)
	return newFetcher(u, tr, &http.Client{Transport: tr}), nil
}

// parse parses an http(s):// URL.
func parse(name string) (*url.URL, error) {
	u, err := url.Parse(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source.Redact(name), httpfetch.RedactErr(err))
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return nil, fmt.Errorf("%s: not an http:// or https:// URL", source.Redact(name))
	}
	return u, nil
}

func newFetcher(u *url.URL, tr *http.Transport, client *http.Client) *httpFetcher {
	c := *u
	c.User = nil
	c.Fragment = ""
	return &httpFetcher{u: &c, user: u.User, tr: tr, client: client}
}

// NewTransport returns the transport remote images are read with
// (proxy from the environment, timeouts, TLS 1.2 at least, HTTP/2 where
// offered, no transparent decompression), with idle connections for
// workers concurrent readers. Other HTTP clients of the tools (the
// container registry input) use it too.
func NewTransport(workers int) *http.Transport { return httpfetch.NewTransport(workers) }

// Share implements source.Sharer: another http(s):// object over the
// same connections.
func (h *httpFetcher) Share(name string) source.Fetcher {
	u, err := parse(name)
	if err != nil {
		return nil // of another kind, or a fetcher of its own says why
	}
	return newFetcher(u, h.tr, h.client)
}

func (h *httpFetcher) Name() string { return source.RedactURL(h.u) }
func (h *httpFetcher) Key() string  { return h.u.String() }
func (h *httpFetcher) Close()       { h.tr.CloseIdleConnections() }

func (h *httpFetcher) request(ctx context.Context, rng string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.u.String(), nil)
	if err != nil {
		return nil, httpfetch.RedactErr(err)
	}
	req.Header.Set("Range", rng)
	req.Header.Set("User-Agent", "godwarfs")
	if h.user != nil {
		pw, _ := h.user.Password()
		req.SetBasicAuth(h.user.Username(), pw)
	}
	return req, nil
}

// Stat asks for the first byte: a 206 answer proves that ranges work
// and carries the size in Content-Range.
func (h *httpFetcher) Stat(ctx context.Context) (source.Version, error) {
	req, err := h.request(ctx, "bytes=0-0")
	if err != nil {
		return source.Version{}, err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return source.Version{}, httpfetch.NetErr(err)
	}
	defer httpfetch.Drain(resp.Body)
	if err := httpfetch.StatusErr(resp); err != nil {
		return source.Version{}, err
	}
	info := source.Version{ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")}
	switch resp.StatusCode {
	case http.StatusPartialContent:
		_, _, total, err := httpfetch.ParseContentRange(resp.Header.Get("Content-Range"))
		if err != nil {
			return source.Version{}, err
		}
		if total < 0 {
			return source.Version{}, errors.New("server does not tell the object size (Content-Range */*)")
		}
		info.Size = total
	case http.StatusOK:
		// Only an empty or one-byte object is served whole for 0-0.
		if resp.ContentLength < 0 || resp.ContentLength > 1 {
			return source.Version{}, errors.New("server does not support Range requests (answered 200 to a range)")
		}
		info.Size = resp.ContentLength
	default:
		return source.Version{}, fmt.Errorf("unexpected HTTP status %s", resp.Status)
	}
	return info, nil
}

func (h *httpFetcher) Get(ctx context.Context, p []byte, off int64, pin source.Version, got *atomic.Int64) error {
	end := off + int64(len(p)) - 1
	req, err := h.request(ctx, fmt.Sprintf("bytes=%d-%d", off, end))
	if err != nil {
		return err
	}
	// Pin the version opened: a strong ETag is compared by the server;
	// otherwise the modification time is.
	if pin.ETag != "" && !strings.HasPrefix(pin.ETag, "W/") {
		req.Header.Set("If-Match", pin.ETag)
	} else if pin.LastModified != "" {
		req.Header.Set("If-Unmodified-Since", pin.LastModified)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return httpfetch.NetErr(err)
	}
	defer httpfetch.Drain(resp.Body)
	if resp.StatusCode == http.StatusPreconditionFailed {
		return fmt.Errorf("%w (server answered %s)", source.ErrChanged, resp.Status)
	}
	if err := httpfetch.StatusErr(resp); err != nil {
		return err
	}
	// Servers that ignore If-Match still tell the version they sent.
	if et := resp.Header.Get("ETag"); pin.ETag != "" && et != "" && et != pin.ETag {
		return fmt.Errorf("%w (ETag %s, opened %s)", source.ErrChanged, et, pin.ETag)
	}
	if lm := resp.Header.Get("Last-Modified"); pin.ETag == "" && pin.LastModified != "" && lm != "" && lm != pin.LastModified {
		return fmt.Errorf("%w (Last-Modified %s, opened %s)", source.ErrChanged, lm, pin.LastModified)
	}
	switch resp.StatusCode {
	case http.StatusPartialContent:
		s, e, total, err := httpfetch.ParseContentRange(resp.Header.Get("Content-Range"))
		if err != nil {
			return err
		}
		if total >= 0 && total != pin.Size {
			return fmt.Errorf("%w (size %d, opened %d)", source.ErrChanged, total, pin.Size)
		}
		if s != off || e != end {
			return fmt.Errorf("server sent bytes %d-%d for a request of %d-%d", s, e, off, end)
		}
	case http.StatusOK:
		if off != 0 || int64(len(p)) != pin.Size {
			return errors.New("server ignored the Range header (answered 200)")
		}
	default:
		return fmt.Errorf("unexpected HTTP status %s", resp.Status)
	}
	return httpfetch.ReadBody(resp.Body, p, got)
}

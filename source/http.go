package source

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// httpFetcher reads an object with HTTP Range requests.
type httpFetcher struct {
	u      *url.URL // without user information
	user   *url.Userinfo
	client *http.Client
	tr     *http.Transport
}

func newHTTPFetcher(u *url.URL, o Options) (*httpFetcher, error) {
	c := *u
	c.User = nil
	c.Fragment = ""
	tr := NewHTTPTransport(o.Workers)
	return &httpFetcher{u: &c, user: u.User, tr: tr, client: &http.Client{Transport: tr}}, nil
}

// NewHTTPTransport returns the transport remote images are read with
// (proxy from the environment, timeouts, TLS 1.2 at least, HTTP/2 where
// offered, no transparent decompression), with idle connections for
// workers concurrent readers. Other HTTP clients of the tools (the
// container registry input) use it too.
func NewHTTPTransport(workers int) *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true, // HTTP/2 where the server offers it over TLS
		MaxIdleConns:          max(4*workers, headerWorkers),
		MaxIdleConnsPerHost:   max(2*workers, headerWorkers),
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// Ranges of a compressed transfer would not be byte ranges of
		// the object.
		DisableCompression: true,
		TLSClientConfig:    &tls.Config{MinVersion: tls.VersionTLS12},
	}
}

func (h *httpFetcher) sibling(u *url.URL) fetcher {
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return nil
	}
	c := *u
	c.User = nil
	c.Fragment = ""
	return &httpFetcher{u: &c, user: u.User, tr: h.tr, client: h.client}
}

func (h *httpFetcher) name() string { return redactURL(h.u) }
func (h *httpFetcher) key() string  { return h.u.String() }
func (h *httpFetcher) close()       { h.tr.CloseIdleConnections() }

func (h *httpFetcher) request(ctx context.Context, rng string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.u.String(), nil)
	if err != nil {
		return nil, redactErr(err)
	}
	req.Header.Set("Range", rng)
	req.Header.Set("User-Agent", "godwarfs")
	if h.user != nil {
		pw, _ := h.user.Password()
		req.SetBasicAuth(h.user.Username(), pw)
	}
	return req, nil
}

// stat asks for the first byte: a 206 answer proves that ranges work
// and carries the size in Content-Range.
func (h *httpFetcher) stat(ctx context.Context) (objectInfo, error) {
	req, err := h.request(ctx, "bytes=0-0")
	if err != nil {
		return objectInfo{}, err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return objectInfo{}, classifyNetErr(err)
	}
	defer drain(resp.Body)
	if err := statusErr(resp); err != nil {
		return objectInfo{}, err
	}
	info := objectInfo{etag: resp.Header.Get("ETag"), lastModified: resp.Header.Get("Last-Modified")}
	switch resp.StatusCode {
	case http.StatusPartialContent:
		_, _, total, err := parseContentRange(resp.Header.Get("Content-Range"))
		if err != nil {
			return objectInfo{}, err
		}
		if total < 0 {
			return objectInfo{}, errors.New("server does not tell the object size (Content-Range */*)")
		}
		info.size = total
	case http.StatusOK:
		// Only an empty or one-byte object is served whole for 0-0.
		if resp.ContentLength < 0 || resp.ContentLength > 1 {
			return objectInfo{}, errors.New("server does not support Range requests (answered 200 to a range)")
		}
		info.size = resp.ContentLength
	default:
		return objectInfo{}, fmt.Errorf("unexpected HTTP status %s", resp.Status)
	}
	return info, nil
}

func (h *httpFetcher) get(ctx context.Context, p []byte, off int64, pin objectInfo, got *atomic.Int64) error {
	end := off + int64(len(p)) - 1
	req, err := h.request(ctx, fmt.Sprintf("bytes=%d-%d", off, end))
	if err != nil {
		return err
	}
	// Pin the version opened: a strong ETag is compared by the server;
	// otherwise the modification time is.
	if pin.etag != "" && !strings.HasPrefix(pin.etag, "W/") {
		req.Header.Set("If-Match", pin.etag)
	} else if pin.lastModified != "" {
		req.Header.Set("If-Unmodified-Since", pin.lastModified)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return classifyNetErr(err)
	}
	defer drain(resp.Body)
	if resp.StatusCode == http.StatusPreconditionFailed {
		return fmt.Errorf("%w (server answered %s)", ErrChanged, resp.Status)
	}
	if err := statusErr(resp); err != nil {
		return err
	}
	// Servers that ignore If-Match still tell the version they sent.
	if et := resp.Header.Get("ETag"); pin.etag != "" && et != "" && et != pin.etag {
		return fmt.Errorf("%w (ETag %s, opened %s)", ErrChanged, et, pin.etag)
	}
	if lm := resp.Header.Get("Last-Modified"); pin.etag == "" && pin.lastModified != "" && lm != "" && lm != pin.lastModified {
		return fmt.Errorf("%w (Last-Modified %s, opened %s)", ErrChanged, lm, pin.lastModified)
	}
	switch resp.StatusCode {
	case http.StatusPartialContent:
		s, e, total, err := parseContentRange(resp.Header.Get("Content-Range"))
		if err != nil {
			return err
		}
		if total >= 0 && total != pin.size {
			return fmt.Errorf("%w (size %d, opened %d)", ErrChanged, total, pin.size)
		}
		if s != off || e != end {
			return fmt.Errorf("server sent bytes %d-%d for a request of %d-%d", s, e, off, end)
		}
	case http.StatusOK:
		if off != 0 || int64(len(p)) != pin.size {
			return errors.New("server ignored the Range header (answered 200)")
		}
	default:
		return fmt.Errorf("unexpected HTTP status %s", resp.Status)
	}
	return readBody(resp.Body, p, got)
}

// readBody fills p from body; a short body is a retryable truncation.
func readBody(body io.Reader, p []byte, got *atomic.Int64) error {
	var n int
	for n < len(p) {
		m, err := body.Read(p[n:])
		n += m
		got.Add(int64(m))
		if err != nil {
			if n == len(p) && err == io.EOF {
				break
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return &retryable{err: fmt.Errorf("response body cut short after %d of %d bytes: %w", n, len(p), classifyNetErr(err))}
		}
	}
	return nil
}

func drain(body io.ReadCloser) {
	// Reading a little of what is left lets the connection be reused.
	io.CopyN(io.Discard, body, 64<<10)
	body.Close()
}

// statusErr turns error statuses into errors; throttling and server
// errors are retryable.
func statusErr(resp *http.Response) error {
	c := resp.StatusCode
	if c < 400 {
		return nil
	}
	err := fmt.Errorf("HTTP status %s", resp.Status)
	switch {
	case c == http.StatusTooManyRequests, c == http.StatusRequestTimeout, c >= 500:
		return &retryable{err: err, after: retryAfter(resp.Header.Get("Retry-After"))}
	}
	return err
}

// retryAfter parses a Retry-After header (seconds or an HTTP date),
// capped so a server cannot stall a read for long.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	var d time.Duration
	if s, err := strconv.Atoi(v); err == nil {
		d = time.Duration(s) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = time.Until(t)
	}
	return min(max(d, 0), 10*time.Second)
}

// classifyNetErr marks transport failures as retryable, except context
// cancellation, which ends the read.
func classifyNetErr(err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &retryable{err: errors.New("request timed out")}
	}
	// Resets, refused connections, truncated and broken streams: all
	// transient from the reader's point of view.
	return &retryable{err: redactErr(err)}
}

// parseContentRange parses "bytes START-END/TOTAL"; total is -1 for "*".
func parseContentRange(v string) (start, end, total int64, err error) {
	bad := fmt.Errorf("malformed Content-Range %q", v)
	rest, ok := strings.CutPrefix(v, "bytes ")
	if !ok {
		return 0, 0, 0, bad
	}
	rng, tot, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, 0, 0, bad
	}
	s, e, ok := strings.Cut(rng, "-")
	if !ok {
		return 0, 0, 0, bad
	}
	if start, err = strconv.ParseInt(s, 10, 64); err != nil {
		return 0, 0, 0, bad
	}
	if end, err = strconv.ParseInt(e, 10, 64); err != nil || end < start {
		return 0, 0, 0, bad
	}
	total = -1
	if tot != "*" {
		if total, err = strconv.ParseInt(tot, 10, 64); err != nil || total <= end {
			return 0, 0, 0, bad
		}
	}
	return start, end, total, nil
}

// Package httpfetch holds what the HTTP-based backends of package
// source share: the transport, reading a range's body, and telling
// transient failures (retried) from final ones.
package httpfetch

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

	"github.com/godwarfs/godwarfs/source"
)

// NewTransport returns the transport remote images are read with
// (proxy from the environment, timeouts, TLS 1.2 at least, HTTP/2 where
// offered, no transparent decompression), with idle connections for
// workers concurrent readers and the header requests made at open.
func NewTransport(workers int) *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true, // HTTP/2 where the server offers it over TLS
		MaxIdleConns:          max(4*workers, source.HeaderRequests),
		MaxIdleConnsPerHost:   max(2*workers, source.HeaderRequests),
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// Ranges of a compressed transfer would not be byte ranges of
		// the object.
		DisableCompression: true,
		TLSClientConfig:    &tls.Config{MinVersion: tls.VersionTLS12},
	}
}

// ReadBody fills p from body; a short body is a retryable truncation.
func ReadBody(body io.Reader, p []byte, got *atomic.Int64) error {
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
			return source.Retryable(fmt.Errorf("response body cut short after %d of %d bytes: %w", n, len(p), NetErr(err)), 0)
		}
	}
	return nil
}

// Drain closes a response body, reading a little of it first.
func Drain(body io.ReadCloser) {
	// Reading a little of what is left lets the connection be reused.
	io.CopyN(io.Discard, body, 64<<10)
	body.Close()
}

// StatusErr turns error statuses into errors; throttling and server
// errors are retryable.
func StatusErr(resp *http.Response) error {
	c := resp.StatusCode
	if c < 400 {
		return nil
	}
	err := fmt.Errorf("HTTP status %s", resp.Status)
	switch {
	case c == http.StatusTooManyRequests, c == http.StatusRequestTimeout, c >= 500:
		return source.Retryable(err, RetryAfter(resp.Header.Get("Retry-After")))
	}
	return err
}

// RetryAfter parses a Retry-After header (seconds or an HTTP date),
// capped so a server cannot stall a read for long.
func RetryAfter(v string) time.Duration {
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

// NetErr marks transport failures as retryable, except context
// cancellation, which ends the read. URLs are cut from the message: they
// may carry credentials.
func NetErr(err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return source.Retryable(errors.New("request timed out"), 0)
	}
	// Resets, refused connections, truncated and broken streams: all
	// transient from the reader's point of view.
	return source.Retryable(RedactErr(err), 0)
}

// ParseContentRange parses "bytes START-END/TOTAL"; total is -1 for "*".
func ParseContentRange(v string) (start, end, total int64, err error) {
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

// RedactErr strips URLs from errors of url.Parse and of the HTTP client,
// which quote the URL.
func RedactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

package remotetest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// Fault is what the proxy does to one request.
type Fault struct {
	Delay      time.Duration // wait before forwarding
	Status     int           // answer this status instead of forwarding (0 = forward)
	RetryAfter string        // Retry-After header sent with Status
	ResetAfter int64         // forward, then reset the connection after this many body bytes (0 = off)
	CutAfter   int64         // forward, then close cleanly after this many body bytes (0 = off)
	// Edit, if set, changes the forwarded response: its header in
	// place, its body by returning the new one (not with a cut).
	Edit func(h http.Header, body []byte) []byte
}

// Proxy forwards requests to a real server, injecting faults.
type Proxy struct {
	URL      string
	Requests atomic.Int64
	// Plan decides the fault for the n-th request (1-based).
	Plan func(n int64, r *http.Request) Fault

	up *url.URL
	tr *http.Transport
}

// NewProxy starts a proxy in front of upstream (a base URL).
func NewProxy(t testing.TB, upstream string, plan func(n int64, r *http.Request) Fault) *Proxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Plan: plan, up: u, tr: &http.Transport{DisableCompression: true}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close(); p.tr.CloseIdleConnections() })
	p.URL = "http://" + l.Addr().String()
	return p
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := p.Requests.Add(1)
	var f Fault
	if p.Plan != nil {
		f = p.Plan(n, r)
	}
	if f.Delay > 0 {
		time.Sleep(f.Delay)
	}
	if f.Status != 0 {
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		w.WriteHeader(f.Status)
		fmt.Fprintf(w, "injected %d\n", f.Status)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = p.up.Scheme, p.up.Host
	out.Host = r.Host // signed requests cover the Host header
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	cut := max(f.ResetAfter, f.CutAfter)
	if cut == 0 {
		var body io.Reader = resp.Body
		if f.Edit != nil {
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			b = f.Edit(resp.Header, b)
			resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
			body = bytes.NewReader(b)
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, body)
		return
	}
	// Write the response by hand on the raw connection so that it can
	// end mid-body, either with a reset or a clean close.
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "no hijack", http.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	bw := bufio.NewWriter(conn)
	fmt.Fprintf(bw, "HTTP/1.1 %s\r\n", resp.Status)
	resp.Header.Write(bw)
	if resp.ContentLength >= 0 {
		fmt.Fprintf(bw, "Content-Length: %d\r\n", resp.ContentLength)
	}
	bw.WriteString("\r\n")
	io.CopyN(bw, resp.Body, cut)
	bw.Flush()
	_ = buf
	if f.ResetAfter > 0 {
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0) // close with RST
		}
	}
}

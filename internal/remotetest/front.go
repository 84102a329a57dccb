package remotetest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Front serves h in front of the registry reg and returns its host
// (127.0.0.1:PORT): requests h does not answer itself (it returns false)
// go on to the registry, and modify, if set, may change the registry's
// responses on their way back.
func Front(t testing.TB, reg *Registry, h func(w http.ResponseWriter, r *http.Request, next http.Handler) bool, modify func(*http.Response) error) string {
	t.Helper()
	up, err := url.Parse(reg.URL)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(up)
	rp.ModifyResponse = modify
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h == nil || !h(w, r, rp) {
			rp.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// ShortTokens puts a bearer token service in front of reg whose tokens
// are good for uses requests each, as short-lived tokens expire in the
// middle of long reads: a request without a valid token gets a 401 with
// the WWW-Authenticate challenge naming the service's /token endpoint,
// which gives tokens for the basic credentials user and password. It
// returns the front's host and the count of tokens issued.
func ShortTokens(t testing.TB, reg *Registry, user, password string, uses int) (string, *atomic.Int64) {
	t.Helper()
	var issued atomic.Int64
	var mu sync.Mutex
	used := map[string]int{}
	var host string
	host = Front(t, reg, func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		if r.URL.Path == "/token" {
			if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
				http.Error(w, "bad credentials", http.StatusUnauthorized)
				return true
			}
			tok := fmt.Sprintf("t%d", issued.Add(1))
			mu.Lock()
			used[tok] = 0
			mu.Unlock()
			fmt.Fprintf(w, `{"token":%q}`, tok)
			return true
		}
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		mu.Lock()
		n, ok := used[tok]
		if ok {
			used[tok] = n + 1
		}
		mu.Unlock()
		if !ok || n >= uses {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="http://%s/token",service="test"`, host))
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
			return true
		}
		r.Header.Del("Authorization") // the registry itself is open
		return false
	}, nil)
	return host, &issued
}

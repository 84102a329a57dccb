package registrysource_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/imagetest"
	"github.com/godwarfs/godwarfs/internal/remotetest"
	"github.com/godwarfs/godwarfs/ociartifact"
	"github.com/godwarfs/godwarfs/source"
	"github.com/godwarfs/godwarfs/source/registrysource"
)

// registryImages builds two different images of small blocks.
func registryImages(t *testing.T) (a, b string) {
	t.Helper()
	dir := t.TempDir()
	a, b = filepath.Join(dir, "a.dwarfs"), filepath.Join(dir, "b.dwarfs")
	imagetest.Build(t, imagetest.Tree(t, 1, 40), a, 16)
	imagetest.Build(t, imagetest.Tree(t, 2, 40), b, 16)
	return a, b
}

func localFiles(t *testing.T, path string) map[string][]byte {
	t.Helper()
	im, err := godwarfs.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	return readAll(t, im)
}

func sameFiles(t *testing.T, what string, got, want map[string][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d files, want %d", what, len(got), len(want))
	}
	for p, w := range want {
		if !bytes.Equal(got[p], w) {
			t.Fatalf("%s: %s differs (%d bytes, want %d)", what, p, len(got[p]), len(w))
		}
	}
}

func push(t *testing.T, path, ref string) string {
	t.Helper()
	d, err := ociartifact.Push(context.Background(), path, ref, ociartifact.PushOptions{})
	if err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	return d.String()
}

func TestRegistry(t *testing.T) {
	a, b := registryImages(t)
	wantA, wantB := localFiles(t, a), localFiles(t, b)
	for _, auth := range []bool{false, true} {
		t.Run(fmt.Sprintf("auth=%v", auth), func(t *testing.T) {
			remotetest.IsolateAuth(t)
			user, pw := "", ""
			if auth {
				user, pw = "tester", "s3cret"
			}
			reg := remotetest.ContainerRegistry(t, user, pw)
			ref := "docker://" + reg.Host + "/images/app:v1"
			if auth {
				if _, err := ociartifact.Push(context.Background(), a, ref, ociartifact.PushOptions{}); err == nil || !strings.Contains(err.Error(), "401") {
					t.Fatalf("push without credentials: %v", err)
				}
				if _, err := source.Open(context.Background(), ref, source.Options{Attempts: 1}); err == nil || !strings.Contains(err.Error(), "401") {
					t.Fatalf("open without credentials: %v", err)
				}
				remotetest.Login(t, reg.Host, user, pw)
			}
			mdig := push(t, a, ref)
			src := openSource(t, ref, source.Options{MemCache: -1})
			if d, ok := registrysource.ManifestDigest(src); !ok || d != mdig {
				t.Errorf("manifest digest %q, pushed %s", d, mdig)
			}
			im := openImage(t, src)
			// The tag moves to another image during the "mount": reads
			// stay on the blob opened.
			push(t, b, ref)
			sameFiles(t, "after the tag moved", readAll(t, im), wantA)
			sameFiles(t, "the tag reopened", readAll(t, openImage(t, openSource(t, ref, source.Options{}))), wantB)
			byDigest := openSource(t, "docker://"+reg.Host+"/images/app@"+mdig, source.Options{})
			sameFiles(t, "by digest", readAll(t, openImage(t, byDigest)), wantA)
			if byDigest.Identity() != src.Identity() {
				t.Errorf("identity by digest %q, by tag %q: the same blob", byDigest.Identity(), src.Identity())
			}
			raw, err := os.ReadFile(a)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := source.ReadSmall(context.Background(), "docker://"+reg.Host+"/images/app@"+mdig, 1<<30, source.Options{}, src); err != nil || !bytes.Equal(got, raw) {
				t.Errorf("ReadSmall: %d bytes, %v", len(got), err)
			}
			if _, err := source.ReadSmall(context.Background(), "docker://"+reg.Host+"/images/app@"+mdig, 1000, source.Options{}, src); !errors.Is(err, source.ErrTooLarge) {
				t.Errorf("ReadSmall over the limit: %v", err)
			}
			// The disk cache is keyed by the blob: what a read by one
			// reference fetched serves another naming the same blob.
			cache := t.TempDir()
			c1 := openSource(t, "docker://"+reg.Host+"/images/app@"+mdig, source.Options{DiskCache: cache, MemCache: -1})
			readAll(t, openImage(t, c1))
			push(t, a, "docker://"+reg.Host+"/images/app:again")
			c2 := openSource(t, "docker://"+reg.Host+"/images/app:again", source.Options{DiskCache: cache, MemCache: -1})
			sameFiles(t, "from the disk cache", readAll(t, openImage(t, c2)), wantA)
			if st1, st2 := c1.Stats(), c2.Stats(); st2.DiskHits == 0 || st2.BytesFetched >= st1.BytesFetched {
				t.Errorf("second reference: %v; first: %v", st2, st1)
			}
			if _, err := source.Open(context.Background(), "docker://"+reg.Host+"/images/app:nope", source.Options{Attempts: 1}); err == nil || !strings.Contains(err.Error(), "404") {
				t.Errorf("missing tag: %v", err)
			}
		})
	}
}

func TestRegistryNotDwarFS(t *testing.T) {
	for _, c := range []struct {
		body, ct, want string
	}{
		{`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","size":2,"digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},"layers":[]}`, "application/vnd.oci.image.manifest.v1+json", "a container image with 0 layers"},
		{`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}`, "application/vnd.oci.image.index.v1+json", "image index"},
		{`{"schemaVersion":2,"artifactType":"application/x-other","config":{"mediaType":"application/vnd.oci.empty.v1+json","size":2,"digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},"layers":[]}`, "", "artifact of type application/x-other"},
		{`{"schemaVersion":2,"config":{"mediaType":"application/vnd.oci.empty.v1+json","size":2,"digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},"layers":[{"mediaType":"` + ociartifact.MediaType + `","size":-1,"digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"}]}`, "", "invalid size"},
		{`<html>`, "text/html", "manifest"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v2/" {
				return
			}
			w.Header().Set("Content-Type", c.ct)
			fmt.Fprint(w, c.body)
		}))
		_, err := source.Open(context.Background(), "docker://"+strings.TrimPrefix(srv.URL, "http://")+"/x/y:1", source.Options{Attempts: 1})
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.body, err, c.want)
		}
	}
}

func TestRegistryRanges(t *testing.T) {
	a, _ := registryImages(t)
	remotetest.IsolateAuth(t)
	reg := remotetest.ContainerRegistry(t, "", "")
	push(t, a, "docker://"+reg.Host+"/images/app:v1")
	isBlob := func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/blobs/") }
	for _, c := range []struct {
		name   string
		h      func(w http.ResponseWriter, r *http.Request, next http.Handler) bool
		modify func(*http.Response) error
		want   string
	}{
		{"200 for a range", func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
			r.Header.Del("Range") // a proxy that drops ranges: the registry sends it all
			return false
		}, nil, "does not serve ranges"},
		{"an HTML page", nil, func(resp *http.Response) error {
			if isBlob(resp.Request) {
				resp.Header.Set("Content-Type", "text/html; charset=utf-8")
			}
			return nil
		}, "HTML page"},
		{"a login page", func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
			if !isBlob(r) {
				return false
			}
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html>please log in</html>")
			return true
		}, nil, "HTML page"},
	} {
		t.Run(c.name, func(t *testing.T) {
			host := remotetest.Front(t, reg, c.h, c.modify)
			_, err := source.Open(context.Background(), "docker://"+host+"/images/app:v1", source.Options{Attempts: 2, RetryWait: time.Millisecond})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

func TestRegistryFaults(t *testing.T) {
	a, _ := registryImages(t)
	want := localFiles(t, a)
	remotetest.IsolateAuth(t)
	reg := remotetest.ContainerRegistry(t, "", "")
	push(t, a, "docker://"+reg.Host+"/images/app:v1")
	// The first try of every request fails, in a rotating way, the
	// handshake and the manifest included; the second goes through (so
	// concurrent requests cannot pile failures on one range).
	var mu sync.Mutex
	tries := map[string]int{}
	var failed int64
	plan := func(n int64, r *http.Request) remotetest.Fault {
		mu.Lock()
		defer mu.Unlock()
		k := r.Method + " " + r.URL.Path + " " + r.Header.Get("Range")
		tries[k]++
		if tries[k] > 1 {
			return remotetest.Fault{}
		}
		failed++
		switch failed % 3 {
		case 0:
			return remotetest.Fault{Status: http.StatusServiceUnavailable, RetryAfter: "0"}
		case 1:
			return remotetest.Fault{ResetAfter: 100}
		}
		return remotetest.Fault{CutAfter: 10}
	}
	px := remotetest.NewProxy(t, reg.URL, plan)
	ref := "docker://" + strings.TrimPrefix(px.URL, "http://") + "/images/app:v1"
	src := openSource(t, ref, source.Options{RetryWait: time.Millisecond, MemCache: -1})
	sameFiles(t, "through faults", readAll(t, openImage(t, src)), want)
	if st := src.Stats(); st.Retries == 0 || st.Errors != 0 {
		t.Errorf("stats %+v: want retries and no errors", st)
	}
}

// TestRegistryTokenRenewal puts a token service in front of the
// registry whose tokens are good for three requests: the reads renew
// theirs through the WWW-Authenticate challenge as they go.
func TestRegistryTokenRenewal(t *testing.T) {
	a, _ := registryImages(t)
	want := localFiles(t, a)
	remotetest.IsolateAuth(t)
	reg := remotetest.ContainerRegistry(t, "", "")
	push(t, a, "docker://"+reg.Host+"/images/app:v1")
	host, issued := remotetest.ShortTokens(t, reg, "tester", "s3cret", 3)
	ref := "docker://" + host + "/images/app:v1"
	if _, err := source.Open(context.Background(), ref, source.Options{Attempts: 1}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("without credentials: %v", err)
	}
	remotetest.Login(t, host, "tester", "s3cret")
	issued.Store(0)
	src := openSource(t, ref, source.Options{MemCache: -1})
	sameFiles(t, "with renewed tokens", readAll(t, openImage(t, src)), want)
	if st := src.Stats(); st.Errors != 0 || st.Requests < 9 || issued.Load() < 3 {
		t.Errorf("stats %+v, %d tokens: want several renewals and no errors", st, issued.Load())
	}
}

// TestRegistryRedirect serves blobs from "storage" on another port, as
// registries redirect to object storage: reads follow the redirect, and
// the registry's credentials stay with the registry.
func TestRegistryRedirect(t *testing.T) {
	a, _ := registryImages(t)
	want := localFiles(t, a)
	remotetest.IsolateAuth(t)
	reg := remotetest.ContainerRegistry(t, "", "")
	push(t, a, "docker://"+reg.Host+"/images/app:v1")
	var leaked, served atomic.Int64
	storage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		served.Add(1)
		http.ServeFile(w, r, a)
	}))
	t.Cleanup(storage.Close)
	host := remotetest.Front(t, reg, func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		if u, p, ok := r.BasicAuth(); !ok || u != "tester" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "login", http.StatusUnauthorized)
			return true
		}
		if strings.Contains(r.URL.Path, "/blobs/") && r.Method == http.MethodGet {
			http.Redirect(w, r, storage.URL+"/blob?sig=1", http.StatusTemporaryRedirect)
			return true
		}
		return false
	}, nil)
	remotetest.Login(t, host, "tester", "s3cret")
	src := openSource(t, "docker://"+host+"/images/app:v1", source.Options{MemCache: -1})
	sameFiles(t, "through redirects", readAll(t, openImage(t, src)), want)
	if served.Load() == 0 || leaked.Load() != 0 {
		t.Errorf("storage served %d requests, %d with the registry's credentials", served.Load(), leaked.Load())
	}
}

//go:build unix

package s3input_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/internal/remotetest"
	"github.com/godwarfs/godwarfs/s3input"
	"github.com/godwarfs/godwarfs/source"
)

func put(t *testing.T, w *remotetest.S3, bucket, key string, data []byte) {
	t.Helper()
	_, err := w.Client.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: &bucket, Key: &key, Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
	})
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// files flattens a tree into path -> node for its regular files.
func files(n *dedup.TreeNode, dir string, out map[string]*dedup.TreeNode) {
	for _, c := range n.Children {
		p := c.Name
		if dir != "" {
			p = dir + "/" + c.Name
		}
		if c.Mode&syscall.S_IFMT == syscall.S_IFREG {
			out[p] = c
		}
		files(c, p, out)
	}
}

func readAll(n *dedup.TreeNode) ([]byte, error) {
	b := make([]byte, n.Size)
	m, err := n.Data.R.ReadAt(b, n.Data.Off)
	if m == len(b) {
		err = nil
	}
	return b, err
}

// faultOptions retry fast.
func faultOptions() source.Options {
	return source.Options{RetryWait: 10_000_000, Attempts: 6}
}

func TestS3(t *testing.T) {
	w := remotetest.SeaweedFS(t)
	w.Env(t)
	w.Bucket(t, "bkt")

	// 40 objects, a few large enough for several parts.
	want := map[string][]byte{}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 40 {
		size := rng.IntN(3000)
		if i%13 == 0 {
			size = 8<<20 + 12345 // two parts
		}
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		p := fmt.Sprintf("d%d/f%02d", i%3, i)
		want[p] = b
		put(t, w, "bkt", "tree/"+p, b)
	}
	put(t, w, "bkt", "tree/empty/", nil)
	put(t, w, "bkt", "other/outside", []byte("not below the prefix"))

	check := func(t *testing.T, root *dedup.TreeNode) {
		t.Helper()
		got := map[string]*dedup.TreeNode{}
		files(root, "", got)
		if len(got) != len(want) {
			t.Errorf("%d files, want %d", len(got), len(want))
		}
		for p, b := range want {
			n := got[p]
			if n == nil {
				t.Errorf("%s missing", p)
				continue
			}
			data, err := readAll(n)
			if err != nil {
				t.Errorf("%s: %v", p, err)
			} else if !bytes.Equal(data, b) {
				t.Errorf("%s: content differs", p)
			}
		}
		var empty bool
		for _, c := range root.Children {
			empty = empty || c.Name == "empty" && c.Mode&syscall.S_IFMT == syscall.S_IFDIR && len(c.Children) == 0
		}
		if !empty {
			t.Error("the key empty/ did not become an empty directory")
		}
	}
	warn := func(f string, a ...any) { t.Errorf("warning: "+f, a...) }

	t.Run("pagination", func(t *testing.T) {
		var lists atomic.Int64
		px := remotetest.NewProxy(t, w.URL, func(n int64, r *http.Request) remotetest.Fault {
			if r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2" {
				lists.Add(1)
			}
			return remotetest.Fault{}
		})
		t.Setenv("AWS_ENDPOINT_URL_S3", px.URL)
		ents, err := s3input.List(context.Background(), "s3://bkt/tree", s3input.Options{PageSize: 7})
		if err != nil {
			t.Fatal(err)
		}
		// 41 keys at 7 a page.
		if n := lists.Load(); n < 6 {
			t.Errorf("%d listing requests for 41 keys at 7 a page", n)
		}
		// root, d0, d1, d2, empty and the files, sorted.
		if len(ents) != len(want)+5 {
			t.Errorf("%d entries, want %d", len(ents), len(want)+5)
		}
		for i := 1; i < len(ents); i++ {
			if ents[i-1].Path >= ents[i].Path {
				t.Errorf("entries not sorted: %q before %q", ents[i-1].Path, ents[i].Path)
			}
		}
		for _, e := range ents {
			if !e.IsDir && e.Size != int64(len(want[e.Path])) {
				t.Errorf("%s: size %d, want %d", e.Path, e.Size, len(want[e.Path]))
			}
		}
	})

	t.Run("faults are retried", func(t *testing.T) {
		// Every third request fails: a 503, a reset mid-body or a clean
		// cut, in listings and object reads alike.
		var lists, gets atomic.Int64
		px := remotetest.NewProxy(t, w.URL, func(n int64, r *http.Request) remotetest.Fault {
			isList := r.URL.Query().Get("list-type") == "2"
			if isList {
				lists.Add(1)
			} else {
				gets.Add(1)
			}
			switch n % 9 {
			case 1:
				return remotetest.Fault{Status: http.StatusServiceUnavailable, RetryAfter: "0"}
			case 4:
				return remotetest.Fault{ResetAfter: 100}
			case 7:
				if !isList {
					return remotetest.Fault{CutAfter: 10}
				}
			}
			return remotetest.Fault{}
		})
		t.Setenv("AWS_ENDPOINT_URL_S3", px.URL)
		src := s3input.New("s3://bkt/tree/", s3input.Options{Source: faultOptions(), PageSize: 5, TempDir: t.TempDir()})
		defer src.Close()
		root, err := src.ReadTree(context.Background(), func(int64) {}, warn)
		if err != nil {
			t.Fatal(err)
		}
		check(t, root)
		if lists.Load() < 9 || gets.Load() < int64(len(want)) {
			t.Errorf("%d listing and %d other requests", lists.Load(), gets.Load())
		}
	})

	t.Run("reads in any order and twice", func(t *testing.T) {
		src := s3input.New("s3://bkt/tree/", s3input.Options{TempDir: t.TempDir(), ReadAhead: 1})
		defer src.Close()
		root, err := src.ReadTree(context.Background(), func(int64) {}, warn)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]*dedup.TreeNode{}
		files(root, "", got)
		var wg sync.WaitGroup
		for p, n := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 2 {
					b, err := readAll(n)
					if err != nil || !bytes.Equal(b, want[p]) {
						t.Errorf("%s: %v", p, err)
					}
				}
				// A read in the middle.
				if len(want[p]) > 10 {
					b := make([]byte, 5)
					if _, err := n.Data.R.ReadAt(b, 5); err != nil || !bytes.Equal(b, want[p][5:10]) {
						t.Errorf("%s: bytes 5-9: %v", p, err)
					}
				}
			}()
		}
		wg.Wait()
		if f := src.Fetched(); f == 0 {
			t.Error("nothing fetched")
		}
	})

	t.Run("select", func(t *testing.T) {
		src := s3input.New("s3://bkt/tree/", s3input.Options{TempDir: t.TempDir(),
			Select: func(e s3input.Entry) bool { return e.Path != "d1" }})
		defer src.Close()
		root, err := src.ReadTree(context.Background(), func(int64) {}, warn)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]*dedup.TreeNode{}
		files(root, "", got)
		for p := range got {
			if strings.HasPrefix(p, "d1/") {
				t.Errorf("%s selected", p)
			}
		}
		if len(got) == 0 {
			t.Error("nothing selected")
		}
	})

	// An object changed or deleted after the listing fails its reads
	// with an error naming it.
	for _, tc := range []struct {
		name   string
		mutate func(t *testing.T, key string)
		want   error
		text   string
	}{
		{"changed", func(t *testing.T, key string) { put(t, w, "bkt", key, []byte("new content")) }, source.ErrChanged, "changed during the build"},
		{"same size", func(t *testing.T, key string) { put(t, w, "bkt", key, bytes.Repeat([]byte{'x'}, 2000)) }, source.ErrChanged, "changed during the build"},
		{"deleted", func(t *testing.T, key string) {
			if _, err := w.Client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: &key}); err != nil {
				t.Fatal(err)
			}
		}, nil, "vanished during the build"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := "mut-" + strings.ReplaceAll(tc.name, " ", "-") + "/"
			put(t, w, "bkt", prefix+"victim", bytes.Repeat([]byte{'v'}, 2000))
			put(t, w, "bkt", prefix+"bystander", []byte("stays"))
			var once sync.Once
			px := remotetest.NewProxy(t, w.URL, func(n int64, r *http.Request) remotetest.Fault {
				if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/victim") {
					once.Do(func() { tc.mutate(t, prefix+"victim") })
				}
				return remotetest.Fault{}
			})
			t.Setenv("AWS_ENDPOINT_URL_S3", px.URL)
			src := s3input.New("s3://bkt/"+prefix, s3input.Options{TempDir: t.TempDir()})
			defer src.Close()
			root, err := src.ReadTree(context.Background(), func(int64) {}, warn)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]*dedup.TreeNode{}
			files(root, "", got)
			_, err = readAll(got["victim"])
			if err == nil {
				t.Fatal("read of a mutated object succeeded")
			}
			if !strings.Contains(err.Error(), "s3://bkt/"+prefix+"victim") || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("error %q does not name the key and say %q", err, tc.text)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("error %v is not %v", err, tc.want)
			}
			if b, err := readAll(got["bystander"]); err != nil || string(b) != "stays" {
				t.Errorf("bystander: %q, %v", b, err)
			}
		})
	}

	// gets counts the object GETs per key below prefix through a proxy;
	// edit, if set, changes requests and responses.
	gets := func(t *testing.T, prefix string, edit func(r *http.Request) func(http.Header, []byte) []byte) *sync.Map {
		var m sync.Map
		px := remotetest.NewProxy(t, w.URL, func(n int64, r *http.Request) remotetest.Fault {
			if r.URL.Query().Get("list-type") != "2" {
				if k, ok := strings.CutPrefix(r.URL.Path, "/bkt/"+prefix); ok {
					c, _ := m.LoadOrStore(k, new(atomic.Int64))
					c.(*atomic.Int64).Add(1)
				}
			}
			if edit == nil {
				return remotetest.Fault{}
			}
			return remotetest.Fault{Edit: edit(r)}
		})
		t.Setenv("AWS_ENDPOINT_URL_S3", px.URL)
		return &m
	}
	count := func(m *sync.Map, key string) int64 {
		if c, ok := m.Load(key); ok {
			return c.(*atomic.Int64).Load()
		}
		return 0
	}
	readTree := func(t *testing.T, prefix string, want map[string][]byte) *s3input.Source {
		t.Helper()
		src := s3input.New("s3://bkt/"+prefix, s3input.Options{TempDir: t.TempDir()})
		t.Cleanup(func() { src.Close() })
		root, err := src.ReadTree(context.Background(), func(int64) {}, warn)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]*dedup.TreeNode{}
		files(root, "", got)
		for p, b := range want {
			if data, err := readAll(got[p]); err != nil || !bytes.Equal(data, b) {
				t.Errorf("%s: %d bytes, %v; want its %d bytes", p, len(data), err, len(b))
			}
		}
		return src
	}

	t.Run("same contents fetched once", func(t *testing.T) {
		// Keys of the same size and MD5 ETag share one fetch, a
		// two-part object's included; the same size alone does not.
		rnd := func(n int) []byte {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.IntN(256))
			}
			return b
		}
		small, big, other := rnd(3000), rnd(8<<20+999), rnd(3000)
		want := map[string][]byte{"a1": small, "d/a2": small, "d/e/a3": small, "z/a4": small,
			"b1": big, "z/b2": big, "c": other}
		for k, b := range want {
			put(t, w, "bkt", "same/"+k, b)
		}
		m := gets(t, "same/", nil)
		src := readTree(t, "same/", want)
		for k, n := range map[string]int64{"a1": 1, "d/a2": 0, "d/e/a3": 0, "z/a4": 0, "b1": 2, "z/b2": 0, "c": 1} {
			if got := count(m, k); got != n {
				t.Errorf("%s: %d GETs, want %d", k, got, n)
			}
		}
		if f, want := src.Fetched(), int64(2*3000+8<<20+999); f != want {
			t.Errorf("fetched %d bytes, want %d", f, want)
		}
	})

	t.Run("ETags that are not MD5s", func(t *testing.T) {
		// A store that gives two different objects of one size the same
		// ETag, not their MD5: the second is fetched on its own.
		x, y := bytes.Repeat([]byte{'x'}, 2000), bytes.Repeat([]byte{'y'}, 2000)
		want := map[string][]byte{"x": x, "y": y}
		real := map[string]string{}
		for k, b := range want {
			put(t, w, "bkt", "fake/"+k, b)
			real[k] = fmt.Sprintf("%x", md5.Sum(b))
		}
		const fake = "00112233445566778899aabbccddeeff"
		m := gets(t, "fake/", func(r *http.Request) func(http.Header, []byte) []byte {
			if k, ok := strings.CutPrefix(r.URL.Path, "/bkt/fake/"); ok {
				// A GET pinned to the fake ETag asks for the real one.
				if im := r.Header.Get("If-Match"); im != "" {
					r.Header.Set("If-Match", strings.ReplaceAll(im, fake, real[k]))
				}
			}
			return func(h http.Header, body []byte) []byte {
				for _, e := range real {
					if et := h.Get("ETag"); et != "" {
						h.Set("ETag", strings.ReplaceAll(et, e, fake))
					}
					body = bytes.ReplaceAll(body, []byte(e), []byte(fake))
				}
				return body
			}
		})
		ents, err := s3input.List(context.Background(), "s3://bkt/fake/", s3input.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if !e.IsDir && !strings.Contains(e.Object.ETag, fake) {
				t.Fatalf("%s: ETag %s, the proxy's is %s", e.Path, e.Object.ETag, fake)
			}
		}
		readTree(t, "fake/", want)
		if count(m, "x") != 1 || count(m, "y") != 1 {
			t.Errorf("GETs: x %d, y %d; want one each", count(m, "x"), count(m, "y"))
		}
	})

	t.Run("missing bucket", func(t *testing.T) {
		_, err := s3input.List(context.Background(), "s3://no-such-bucket/x/", s3input.Options{})
		if err == nil || !strings.Contains(err.Error(), "s3://no-such-bucket/x/") {
			t.Errorf("error %v does not name the prefix", err)
		}
	})
}

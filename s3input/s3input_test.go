//go:build unix

package s3input_test

import (
	"bytes"
	"context"
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

	t.Run("missing bucket", func(t *testing.T) {
		_, err := s3input.List(context.Background(), "s3://no-such-bucket/x/", s3input.Options{})
		if err == nil || !strings.Contains(err.Error(), "s3://no-such-bucket/x/") {
			t.Errorf("error %v does not name the prefix", err)
		}
	})
}

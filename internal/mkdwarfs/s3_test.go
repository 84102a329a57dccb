//go:build unix

package mkdwarfs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/remotetest"
)

// s3Tree writes a small tree with nested and empty directories, an
// empty file, duplicates and a file of several fetch parts, and uploads
// it below prefix: files as objects, the empty directory as a key
// ending in a slash.
func s3TestTree(t *testing.T, w *remotetest.S3, bucket, prefix string) string {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	write := func(rel string, data []byte) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abcdefgh \n"[rng.IntN(10)]
		}
		return b
	}
	write("README", []byte("hello\n"))
	write("empty-file", nil)
	write("src/a.c", text(5000))
	write("src/b.c", text(7000))
	write("src/copy-of-a.c", mustRead(t, filepath.Join(dir, "src/a.c")))
	write("src/deep/er/x.h", text(300))
	write("src-2/y", text(100)) // sorts between src and src/ in a listing
	write("big/blob", text(9<<20))
	if err := os.MkdirAll(filepath.Join(dir, "empty-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if ents, _ := os.ReadDir(p); len(ents) == 0 {
				w.Upload(t, bucket, prefix+rel+"/", "/dev/null")
			}
			return nil
		}
		w.Upload(t, bucket, prefix+rel, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mkErr runs Main expecting a failure and returns its stderr.
func mkErr(t *testing.T, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	code := Main(context.Background(), append([]string{"mkdwarfs"}, args...), cli.Stdio{Out: io.Discard, Err: &stderr})
	if code == 0 {
		t.Fatalf("mkdwarfs %v succeeded", args)
	}
	return stderr.String()
}

// download fetches an object into a file.
func download(t *testing.T, w *remotetest.S3, bucket, key string) string {
	t.Helper()
	out, err := w.Client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	p := filepath.Join(t.TempDir(), filepath.Base(key))
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// exists reports whether bucket/key is there.
func exists(t *testing.T, w *remotetest.S3, bucket, key string) bool {
	t.Helper()
	_, err := w.Client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
	return err == nil
}

// pendingUploads lists the multipart uploads not completed or aborted.
func pendingUploads(t *testing.T, w *remotetest.S3, bucket string) []string {
	t.Helper()
	out, err := w.Client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: &bucket})
	if err != nil {
		t.Fatalf("list multipart uploads: %v", err)
	}
	var keys []string
	for _, u := range out.Uploads {
		keys = append(keys, aws.ToString(u.Key))
	}
	return keys
}

// listTimes returns the listing's modification times by key.
func listTimes(t *testing.T, w *remotetest.S3, bucket, prefix string) map[string]time.Time {
	t.Helper()
	out, err := w.Client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]time.Time{}
	for _, o := range out.Contents {
		m[strings.TrimPrefix(aws.ToString(o.Key), prefix)] = aws.ToTime(o.LastModified)
	}
	return m
}

func TestS3Build(t *testing.T) {
	w := remotetest.SeaweedFS(t)
	w.Env(t)
	w.Bucket(t, "bkt")
	dir := s3TestTree(t, w, "bkt", "in/")
	out := t.TempDir()
	quiet := []string{"-l", "1", "--log-level", "warn", "--no-progress"}

	t.Run("equals a directory build", func(t *testing.T) {
		fromS3 := filepath.Join(out, "s3.dwarfs")
		fromDir := filepath.Join(out, "dir.dwarfs")
		mk(t, append([]string{"-i", "s3://bkt/in/", "-o", fromS3}, quiet...)...)
		// The directory build with the attributes an S3 input documents.
		mk(t, append([]string{"-i", dir, "-o", fromDir, "--set-owner", "0", "--set-group", "0", "--chmod", "F644,D755"}, quiet...)...)
		want, got := snapshot(t, fromDir), snapshot(t, fromS3)
		times := listTimes(t, w, "bkt", "in/")
		for p, e := range got {
			// Files take the listing's time, at the default resolution
			// of a second.
			if e.mode&syscall.S_IFMT == syscall.S_IFREG {
				lm, ok := times[p]
				if !ok {
					t.Errorf("%s: not in the listing", p)
				} else if e.mtime.Unix() != lm.Unix() {
					t.Errorf("%s: mtime %v, listed %v", p, e.mtime, lm)
				}
			}
			e.mtime = time.Time{}
			got[p] = e
		}
		for p, e := range want {
			e.mtime = time.Time{}
			want[p] = e
		}
		compareSnapshots(t, want, got)
		if e, ok := got["empty-dir"]; !ok || e.mode != syscall.S_IFDIR|0o755 {
			t.Errorf("empty-dir: %+v, %v", e, ok)
		}
	})

	t.Run("prefix without slash and filters", func(t *testing.T) {
		img := filepath.Join(out, "filtered.dwarfs")
		mk(t, append([]string{"-i", "s3://bkt/in", "-o", img, "-F", "- /big/", "-F", "- deep/"}, quiet...)...)
		got := snapshot(t, img)
		if _, ok := got["big/blob"]; ok {
			t.Error("big/blob not filtered out")
		}
		if _, ok := got["src/deep/er/x.h"]; ok {
			t.Error("src/deep not filtered out")
		}
		if _, ok := got["src/a.c"]; !ok {
			t.Error("src/a.c missing")
		}
	})

	t.Run("to S3 and merged by pattern", func(t *testing.T) {
		// Two shards, uploaded; a third object that the pattern must
		// not match.
		for i, sub := range []string{"src", "big"} {
			mk(t, append([]string{"-i", filepath.Join(dir, sub), "-o", fmt.Sprintf("s3://bkt/shards/shard-%d.dwarfs", i)}, quiet...)...)
		}
		w.Upload(t, "bkt", "shards/notes.txt", filepath.Join(dir, "README"))
		if p := pendingUploads(t, w, "bkt"); len(p) != 0 {
			t.Errorf("multipart uploads left: %v", p)
		}
		mk(t, append([]string{"--merge", "--merge-into-root", "s3://bkt/shards/shard-*.dwarfs", "-o", "s3://bkt/merged.dwarfs"}, quiet...)...)
		local := filepath.Join(out, "local-merge.dwarfs")
		s0, s1 := filepath.Join(out, "shard-0.dwarfs"), filepath.Join(out, "shard-1.dwarfs")
		mk(t, append([]string{"-i", filepath.Join(dir, "src"), "-o", s0}, quiet...)...)
		mk(t, append([]string{"-i", filepath.Join(dir, "big"), "-o", s1}, quiet...)...)
		mk(t, append([]string{"--merge", "--merge-into-root", s0, s1, "-o", local}, quiet...)...)
		merged := snapshot(t, download(t, w, "bkt", "merged.dwarfs"))
		compareSnapshots(t, snapshot(t, local), merged)
		if _, ok := merged["blob"]; !ok {
			t.Error("the second shard is missing from the merge")
		}

		// Without NAME= and --merge-into-root, each goes to its own
		// directory.
		mk(t, append([]string{"--merge", "s3://bkt/shards/shard-?.dwarfs", "-o", filepath.Join(out, "dirs.dwarfs")}, quiet...)...)
		if _, ok := snapshot(t, filepath.Join(out, "dirs.dwarfs"))["shard-1/blob"]; !ok {
			t.Error("shard-1/blob missing")
		}

		msg := mkErr(t, append([]string{"--merge", "--merge-into-root", "s3://bkt/shards/part-*.dwarfs", "-o", filepath.Join(out, "none.dwarfs")}, quiet...)...)
		if !strings.Contains(msg, "s3://bkt/shards/part-*.dwarfs: no object matches") {
			t.Errorf("no match: %s", msg)
		}
		// An existing object is kept unless -f.
		msg = mkErr(t, append([]string{"-i", filepath.Join(dir, "src"), "-o", "s3://bkt/merged.dwarfs"}, quiet...)...)
		if !strings.Contains(msg, "s3://bkt/merged.dwarfs: the object exists (use -f to overwrite)") {
			t.Errorf("existing output: %s", msg)
		}
		mk(t, append([]string{"-i", filepath.Join(dir, "src"), "-o", "s3://bkt/merged.dwarfs", "-f"}, quiet...)...)
		compareSnapshots(t, snapshot(t, s0), snapshot(t, download(t, w, "bkt", "merged.dwarfs")))
		// A rewrite reads from and writes to S3.
		mk(t, append([]string{"-i", "s3://bkt/merged.dwarfs", "--recompress", "-o", "s3://bkt/rewritten.dwarfs"}, quiet...)...)
		compareSnapshots(t, snapshot(t, s0), snapshot(t, download(t, w, "bkt", "rewritten.dwarfs")))
	})

	t.Run("listing and upload faults are retried", func(t *testing.T) {
		var lists, parts, listFaults, partFaults atomic.Int64
		px := remotetest.NewProxy(t, w.URL, func(n int64, r *http.Request) remotetest.Fault {
			q := r.URL.Query()
			switch {
			case r.Method == http.MethodGet && q.Get("list-type") == "2":
				switch lists.Add(1) {
				case 1:
					listFaults.Add(1)
					return remotetest.Fault{Status: http.StatusInternalServerError}
				case 2:
					listFaults.Add(1)
					return remotetest.Fault{ResetAfter: 50}
				}
			case r.Method == http.MethodPut && q.Get("partNumber") != "":
				switch parts.Add(1) {
				case 1:
					partFaults.Add(1)
					return remotetest.Fault{Status: http.StatusServiceUnavailable, RetryAfter: "0"}
				case 2:
					// The part is stored, then the answer is lost.
					partFaults.Add(1)
					return remotetest.Fault{ResetAfter: 1}
				}
			}
			return remotetest.Fault{}
		})
		t.Setenv("AWS_ENDPOINT_URL_S3", px.URL)
		mk(t, append([]string{"-i", "s3://bkt/in/", "-o", "s3://bkt/retried.dwarfs", "-C", "null"}, quiet...)...)
		if listFaults.Load() != 2 || partFaults.Load() != 2 || parts.Load() < 3 {
			t.Errorf("%d listing faults, %d part faults in %d part requests", listFaults.Load(), partFaults.Load(), parts.Load())
		}
		t.Setenv("AWS_ENDPOINT_URL_S3", w.URL)
		want := snapshot(t, filepath.Join(out, "s3.dwarfs"))
		compareSnapshots(t, want, snapshot(t, download(t, w, "bkt", "retried.dwarfs")))
		if p := pendingUploads(t, w, "bkt"); len(p) != 0 {
			t.Errorf("multipart uploads left: %v", p)
		}
	})

	t.Run("a failed upload leaves nothing", func(t *testing.T) {
		var parts atomic.Int64
		px := remotetest.NewProxy(t, w.URL, func(n int64, r *http.Request) remotetest.Fault {
			if r.Method == http.MethodPut && r.URL.Query().Get("partNumber") == "2" {
				parts.Add(1)
				return remotetest.Fault{Status: http.StatusForbidden}
			}
			return remotetest.Fault{}
		})
		t.Setenv("AWS_ENDPOINT_URL_S3", px.URL)
		// Stored, so that the image has parts 1 and 2.
		msg := mkErr(t, append([]string{"-i", "s3://bkt/in/", "-o", "s3://bkt/failed.dwarfs", "-C", "null"}, quiet...)...)
		if !strings.Contains(msg, "not uploaded") || !strings.Contains(msg, "part 2") || !strings.Contains(msg, "403") {
			t.Errorf("message: %s", msg)
		}
		if parts.Load() != 1 {
			t.Errorf("a refused part was tried %d times", parts.Load())
		}
		t.Setenv("AWS_ENDPOINT_URL_S3", w.URL)
		if exists(t, w, "bkt", "failed.dwarfs") {
			t.Error("failed.dwarfs exists")
		}
		if p := pendingUploads(t, w, "bkt"); len(p) != 0 {
			t.Errorf("multipart uploads left: %v", p)
		}
	})

	// An object that changes or vanishes while the build runs fails it,
	// naming the key; nothing is uploaded.
	for _, tc := range []struct {
		name, text string
		mutate     func(key string)
	}{
		{"changed", "changed during the build", func(key string) {
			w.Upload(t, "bkt", key, filepath.Join(dir, "README"))
		}},
		{"vanished", "vanished during the build", func(key string) {
			w.Client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: &key})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := "mut-" + tc.name + "/"
			s3TestTree(t, w, "bkt", prefix)
			victim := prefix + "src/b.c"
			var once sync.Once
			px := remotetest.NewProxy(t, w.URL, func(n int64, r *http.Request) remotetest.Fault {
				if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/"+victim) {
					once.Do(func() { tc.mutate(victim) })
				}
				return remotetest.Fault{}
			})
			t.Setenv("AWS_ENDPOINT_URL_S3", px.URL)
			msg := mkErr(t, append([]string{"-i", "s3://bkt/" + prefix, "-o", "s3://bkt/" + tc.name + ".dwarfs"}, quiet...)...)
			if !strings.Contains(msg, "s3://bkt/"+victim) || !strings.Contains(msg, tc.text) {
				t.Errorf("message does not name the key and say %q: %s", tc.text, msg)
			}
			t.Setenv("AWS_ENDPOINT_URL_S3", w.URL)
			if exists(t, w, "bkt", tc.name+".dwarfs") {
				t.Errorf("%s.dwarfs exists", tc.name)
			}
			if p := pendingUploads(t, w, "bkt"); len(p) != 0 {
				t.Errorf("multipart uploads left: %v", p)
			}
		})
	}

	t.Run("bad locations", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"-i", dir, "-o", "s3://bkt/"}, "s3://bkt/: an S3 output is s3://BUCKET/KEY, not a prefix"},
			{[]string{"-i", dir, "-o", "s3://bkt/dir/"}, "not a prefix"},
			{[]string{"-i", "s3://no-such-bucket/x/", "-o", filepath.Join(out, "x.dwarfs")}, "listing s3://no-such-bucket/x/"},
			{[]string{"-i", "s3://bkt/in/", "--input-list", "/dev/null", "-o", filepath.Join(out, "x.dwarfs")}, "--input-list cannot select from an S3 input"},
			{[]string{"-i", "s3://bkt/merged.dwarfs", "-o", filepath.Join(out, "x.dwarfs")}, "s3://bkt/merged.dwarfs: no objects below the prefix"},
		} {
			if msg := mkErr(t, append(tc.args, quiet...)...); !strings.Contains(msg, tc.want) {
				t.Errorf("%v: %s, want %q", tc.args, msg, tc.want)
			}
		}
		if _, err := os.Stat(filepath.Join(out, "x.dwarfs")); err == nil {
			t.Error("x.dwarfs written")
		}
	})
}

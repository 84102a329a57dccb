package source_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/internal/manifest"
	"github.com/godwarfs/godwarfs/internal/remotetest"
	"github.com/godwarfs/godwarfs/source"
	_ "github.com/godwarfs/godwarfs/source/remote" // reads http(s)://, s3:// and docker://
)

func goodImages(t *testing.T) []fixtures.Image {
	t.Helper()
	return fixtures.Good(t)
}

// rel is the path of p below the fixtures directory, as served.
func rel(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.Rel(fixtures.Dir(), p)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.ToSlash(r)
}

func openImage(t *testing.T, src source.Source) *godwarfs.Image {
	t.Helper()
	o := godwarfs.Options{NoCheck: true} // a remote open must not read every block
	if off, ok := source.ImageOffset(src); ok {
		o.ImageOffset, o.ExactOffset = off, true
	}
	im, err := godwarfs.OpenReaderAt(src, src.Size(), src.Name(), &o)
	if err != nil {
		t.Fatalf("open %s: %v", src.Name(), err)
	}
	t.Cleanup(func() { im.Close() })
	return im
}

func openSource(t *testing.T, url string, o source.Options) source.Source {
	t.Helper()
	src, err := source.Open(context.Background(), url, o)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// checkContent compares every regular file and symlink of im with the
// manifest and fails on missing or extra entries.
func checkContent(t *testing.T, im *godwarfs.Image, manifestPath string) {
	t.Helper()
	want, err := manifest.ParseFile(manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range want {
		seen[e.Path] = true
		switch e.Type {
		case '-':
			b, err := fs.ReadFile(im, e.Path)
			if err != nil {
				// Sockets extract as empty files; the image keeps them.
				if fi, serr := im.Lstat(e.Path); serr == nil && fi.Mode()&fs.ModeSocket != 0 && e.Size == 0 {
					continue
				}
				t.Errorf("%s: %v", e.Path, err)
				continue
			}
			h := sha256.Sum256(b)
			if got := hex.EncodeToString(h[:]); got != e.SHA256 {
				t.Errorf("%s: sha256 %s, want %s", e.Path, got, e.SHA256)
			}
		case 'l':
			if got, err := im.ReadLink(e.Path); err != nil || got != e.Target {
				t.Errorf("%s: readlink %q %v, want %q", e.Path, got, err, e.Target)
			}
		default:
			if _, err := im.Lstat(e.Path); err != nil {
				t.Errorf("%s: %v", e.Path, err)
			}
		}
	}
	fs.WalkDir(im, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Errorf("walk %s: %v", p, err)
			return nil
		}
		if p != "." && !seen[p] {
			t.Errorf("unexpected entry %s", p)
		}
		return nil
	})
}

// readAll reads every regular file of im and returns name -> content.
func readAll(t *testing.T, im *godwarfs.Image) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := fs.WalkDir(im, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := fs.ReadFile(im, p)
		out[p] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestHTTPFixtures(t *testing.T) {
	imgs := goodImages(t)
	ng := remotetest.Nginx(t, fixtures.Require(t))
	for _, img := range imgs {
		if img.Manifest == "" {
			continue
		}
		t.Run(img.Name, func(t *testing.T) {
			t.Parallel()
			src := openSource(t, ng.URL+"/"+rel(t, img.Path), source.Options{})
			st, _ := os.Stat(img.Path)
			if src.Size() != st.Size() {
				t.Fatalf("size %d, want %d", src.Size(), st.Size())
			}
			checkContent(t, openImage(t, src), img.Manifest)
		})
	}
}

func TestS3Fixtures(t *testing.T) {
	imgs := goodImages(t)
	w := remotetest.SeaweedFS(t)
	w.Bucket(t, "images")
	for _, img := range imgs {
		w.Upload(t, "images", img.Name+".dwarfs", img.Path)
	}
	w.Env(t)
	for _, img := range imgs {
		if img.Manifest == "" {
			continue
		}
		t.Run(img.Name, func(t *testing.T) {
			src := openSource(t, "s3://images/"+img.Name+".dwarfs", source.Options{})
			if !strings.Contains(src.Identity(), "\"") {
				t.Errorf("identity %q carries no ETag", src.Identity())
			}
			checkContent(t, openImage(t, src), img.Manifest)
		})
	}
	t.Run("missing", func(t *testing.T) {
		_, err := source.Open(context.Background(), "s3://images/nope.dwarfs", source.Options{Attempts: 1})
		if err == nil || !strings.Contains(err.Error(), "s3://images/nope.dwarfs") || !strings.Contains(err.Error(), "404") {
			t.Errorf("missing object: %v", err)
		}
	})
}

// bigFixture is the largest reference image with a manifest.
func bigFixture(t *testing.T) fixtures.Image {
	var best fixtures.Image
	var bestSize int64
	for _, img := range goodImages(t) {
		st, err := os.Stat(img.Path)
		if err == nil && img.Manifest != "" && st.Size() > bestSize {
			best, bestSize = img, st.Size()
		}
	}
	return best
}

func TestFaultProxy(t *testing.T) {
	img := bigFixture(t)
	ng := remotetest.Nginx(t, fixtures.Require(t))
	// Every request but the first few fails in a rotating way; no more
	// than three in a row, so five attempts always get through.
	plan := func(n int64, r *http.Request) remotetest.Fault {
		switch n % 6 {
		case 1:
			return remotetest.Fault{Status: http.StatusServiceUnavailable, RetryAfter: "0"}
		case 2:
			return remotetest.Fault{ResetAfter: 100}
		case 3:
			return remotetest.Fault{CutAfter: 10}
		case 4:
			return remotetest.Fault{Delay: 20 * time.Millisecond}
		case 5:
			return remotetest.Fault{Status: http.StatusTooManyRequests}
		}
		return remotetest.Fault{}
	}
	px := remotetest.NewProxy(t, ng.URL, plan)
	src := openSource(t, px.URL+"/"+rel(t, img.Path), source.Options{RetryWait: time.Millisecond, MemCache: -1})
	checkContent(t, openImage(t, src), img.Manifest)
	st := src.Stats()
	if st.Retries == 0 || st.Errors != 0 {
		t.Errorf("stats %+v: want retries and no errors", st)
	}
	t.Logf("%s: %v", img.Name, st)
}

func TestHTTPErrors(t *testing.T) {
	img := bigFixture(t)
	dir := t.TempDir()
	data, err := os.ReadFile(img.Path)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "img.dwarfs")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ng := remotetest.Nginx(t, dir)
	url := ng.URL + "/img.dwarfs"

	t.Run("missing", func(t *testing.T) {
		_, err := source.Open(context.Background(), ng.URL+"/nope.dwarfs", source.Options{})
		if err == nil || !strings.Contains(err.Error(), "/nope.dwarfs") || !strings.Contains(err.Error(), "404") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("credentials redacted", func(t *testing.T) {
		u := strings.Replace(ng.URL, "http://", "http://user:s3cret@", 1) + "/nope.dwarfs"
		_, err := source.Open(context.Background(), u, source.Options{})
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("got %v", err)
		}
		if r := source.Redact(u); strings.Contains(r, "s3cret") {
			t.Errorf("Redact kept the password: %s", r)
		}
	})
	t.Run("changed object", func(t *testing.T) {
		src := openSource(t, url, source.Options{MemCache: -1})
		im := openImage(t, src)
		before := readAll(t, im)
		// Same size, different bytes, later mtime: a new version.
		changed := bytes.Clone(data)
		for i := 100; i < len(changed)-100; i += 4096 {
			changed[i] ^= 0xff
		}
		tmp := p + ".new"
		os.WriteFile(tmp, changed, 0o644)
		future := time.Now().Add(time.Hour)
		os.Chtimes(tmp, future, future)
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.WriteFile(p, data, 0o644) })
		buf := make([]byte, 4096)
		_, err := src.ReadAt(buf, 0)
		if !errors.Is(err, source.ErrChanged) || !strings.Contains(err.Error(), "bytes 0-4095") || !strings.Contains(err.Error(), "/img.dwarfs") {
			t.Errorf("read of changed object: %v", err)
		}
		// A fresh image on the same source fails, not mixes, as well.
		o := godwarfs.Options{NoCheck: true, CacheSize: 1, ExactOffset: true}
		im2, err := godwarfs.OpenReaderAt(src, src.Size(), src.Name(), &o)
		if err == nil {
			defer im2.Close()
			for name := range before {
				if _, err := fs.ReadFile(im2, name); err == nil {
					// Only data held from before the change may be served.
					continue
				} else if !errors.Is(err, source.ErrChanged) {
					t.Errorf("%s: %v, want ErrChanged", name, err)
				}
			}
		}
	})
}

func TestServerStopped(t *testing.T) {
	img := bigFixture(t)
	ng := remotetest.Nginx(t, fixtures.Require(t))
	src := openSource(t, ng.URL+"/"+rel(t, img.Path), source.Options{Timeout: 2 * time.Second, RetryWait: 10 * time.Millisecond})
	im := openImage(t, src)
	var names []string
	fs.WalkDir(im, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			names = append(names, p)
		}
		return nil
	})
	first, err := fs.ReadFile(im, names[0])
	if err != nil {
		t.Fatal(err)
	}
	ng.Stop()
	// Nothing else was fetched: some read must need the server now.
	var failed error
	for _, n := range names[1:] {
		if _, err := fs.ReadFile(im, n); err != nil {
			failed = err
			break
		}
	}
	if failed == nil || !strings.Contains(failed.Error(), "bytes ") || !strings.Contains(failed.Error(), ng.URL) {
		t.Errorf("read with the server stopped: %v", failed)
	}
	// What was read before is still served.
	again, err := fs.ReadFile(im, names[0])
	if err != nil || !bytes.Equal(again, first) {
		t.Errorf("cached file after stop: %v", err)
	}
}

func TestSmallReadTransfersItsBlocks(t *testing.T) {
	img := bigFixture(t)
	ng := remotetest.Nginx(t, fixtures.Require(t))
	src := openSource(t, ng.URL+"/"+rel(t, img.Path), source.Options{})
	im := openImage(t, src)
	opened := src.Stats().BytesFetched
	if opened > src.Size()/2 && src.Size() > 1<<20 {
		t.Errorf("open fetched %d of %d bytes", opened, src.Size())
	}
	// The smallest non-empty file.
	var name string
	var ino uint32
	var size int64 = 1 << 62
	fs.WalkDir(im, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			fi, _ := d.Info()
			if fi.Size() > 0 && fi.Size() < size {
				name, size = p, fi.Size()
			}
		}
		return nil
	})
	ino, err := im.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := im.OpenInode(ino)
	if err != nil {
		t.Fatal(err)
	}
	parts := imageaccess.Of(im)
	chunks, err := parts.FS.FileChunks(ino)
	if err != nil {
		t.Fatal(err)
	}
	var budget int64
	seen := map[uint32]bool{}
	for _, c := range chunks {
		if !c.Hole && !seen[c.Block] {
			seen[c.Block] = true
			b, _ := parts.Blocks.Block(int(c.Block))
			budget += b.Length
		}
	}
	if _, err := io.ReadAll(r); err != nil {
		t.Fatal(err)
	}
	got := src.Stats().BytesFetched - opened
	if got > budget || got == 0 {
		t.Errorf("reading %s (%d bytes) fetched %d bytes; its blocks hold %d", name, size, got, budget)
	}
	t.Logf("open fetched %d of %d bytes; %s fetched %d (blocks %d)", opened, src.Size(), name, got, budget)
}

func TestDiskCache(t *testing.T) {
	img := bigFixture(t)
	ng := remotetest.Nginx(t, fixtures.Require(t))
	url := ng.URL + "/" + rel(t, img.Path)
	cache := t.TempDir()
	o := source.Options{DiskCache: cache, MemCache: -1}

	src := openSource(t, url, o)
	want := readAll(t, openImage(t, src))
	first := src.Stats()
	if first.BytesFetched == 0 {
		t.Fatalf("first pass: %+v", first)
	}

	// A second open of the same object, as after a remount: nothing new.
	src2 := openSource(t, url, o)
	got := readAll(t, openImage(t, src2))
	if st := src2.Stats(); st.BytesFetched != 0 || st.Requests != 1 || st.DiskHits == 0 {
		t.Errorf("warm pass fetched: %+v (only the version check may go out)", st)
	}
	for n, b := range want {
		if !bytes.Equal(got[n], b) {
			t.Errorf("%s differs on the warm pass", n)
		}
	}

	// Damage every entry: each is detected, refetched, and the content
	// stays right.
	ents, _ := filepath.Glob(filepath.Join(cache, "*", "*-*"))
	if len(ents) == 0 {
		t.Fatal("no cache entries written")
	}
	for i, e := range ents {
		b, _ := os.ReadFile(e)
		switch i % 3 {
		case 0:
			b[len(b)-1] ^= 1
		case 1:
			b = b[:len(b)/2] // torn write
		case 2:
			b[70%len(b)] ^= 0x80
		}
		os.WriteFile(e, b, 0o600)
	}
	src3 := openSource(t, url, o)
	got = readAll(t, openImage(t, src3))
	st := src3.Stats()
	if st.DiskCorrupt == 0 || st.BytesFetched == 0 {
		t.Errorf("damaged cache not detected: %+v", st)
	}
	for n, b := range want {
		if !bytes.Equal(got[n], b) {
			t.Errorf("%s differs after cache damage", n)
		}
	}

	// A small limit keeps the directory small.
	small := t.TempDir()
	src4 := openSource(t, url, source.Options{DiskCache: small, DiskCacheSize: 64 << 10, MemCache: -1})
	readAll(t, openImage(t, src4))
	var total int64
	filepath.Walk(small, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			total += fi.Size()
		}
		return nil
	})
	if total > 64<<10+(1<<20) { // the limit, plus at most one entry in flight
		t.Errorf("cache dir holds %d bytes with a 64 KiB limit", total)
	}
}

func TestIsRemote(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"http://h/x", true}, {"HTTPS://h/x", true}, {"s3://b/k", true}, {"docker://r/repo:tag", true}, {"docker://", false},
		{"/tmp/x.dwarfs", false}, {"x.dwarfs", false}, {"http:/x", false}, {"ftp://h/x", false},
	} {
		if got := source.IsRemote(c.in); got != c.want {
			t.Errorf("IsRemote(%q) = %v", c.in, got)
		}
	}
}

//go:build linux && !386 && !arm

package fusefs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/dwarfs"
	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/internal/manifest"
	"github.com/godwarfs/godwarfs/internal/mountopts"
	"github.com/godwarfs/godwarfs/internal/remotetest"
	"github.com/godwarfs/godwarfs/source"
	_ "github.com/godwarfs/godwarfs/source/remote" // reads http(s)://, s3:// and docker://
	"golang.org/x/sys/unix"
)

// mountURL opens url the way the dwarfs command does and mounts it.
func mountURL(t *testing.T, url, opts string) (*fusefs.Server, *fusefs.ImageSource) {
	t.Helper()
	requireFuse(t)
	o := mountopts.Defaults()
	if err := o.ParseString(opts); err != nil {
		t.Fatal(err)
	}
	src, closer, err := dwarfs.OpenImage(url, o)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { closer.Close() })
	return mountSrc(t, src, opts), src.(*fusefs.ImageSource)
}

func remoteStats(t *testing.T, dir string) source.Stats {
	t.Helper()
	buf := make([]byte, 4096)
	n, err := unix.Getxattr(dir, fusefs.XattrRemote, buf)
	if err != nil {
		t.Fatalf("getxattr %s: %v", fusefs.XattrRemote, err)
	}
	var st source.Stats
	if err := json.Unmarshal(buf[:n], &st); err != nil {
		t.Fatalf("%s: %q: %v", fusefs.XattrRemote, buf[:n], err)
	}
	return st
}

// imageList returns the paths of every good fixture image.
func imageList(t *testing.T) []string {
	var all []string
	for _, img := range fixtures.Good(t) {
		all = append(all, img.Path)
	}
	return all
}

func readManifest(t *testing.T, p string) []manifest.Entry {
	t.Helper()
	m, err := manifest.ParseFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func manifestOf(img string) string {
	name := strings.TrimSuffix(filepath.Base(img), ".dwarfs")
	m := filepath.Join(filepath.Dir(filepath.Dir(img)), "expected", name+".manifest.tsv")
	if filepath.Base(filepath.Dir(img)) != "images" {
		m = filepath.Join(filepath.Dir(img), "expected", name+".manifest.tsv")
	}
	if _, err := os.Stat(m); err != nil {
		return ""
	}
	return m
}

func fixturesRoot(t *testing.T) string {
	a, err := filepath.Abs(fixtures.Require(t))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func relFixture(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	r, err := filepath.Rel(fixturesRoot(t), a)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.ToSlash(r)
}

// TestRemoteImages mounts every fixture image over HTTP (nginx) and S3
// (SeaweedFS) and checks it against its manifest through system calls.
func TestRemoteImages(t *testing.T) {
	requireFuse(t)
	imgs := imageList(t)
	ng := remotetest.Nginx(t, fixturesRoot(t))
	for _, scheme := range []string{"http", "s3"} {
		t.Run(scheme, func(t *testing.T) {
			if scheme == "s3" {
				w := remotetest.SeaweedFS(t)
				w.Bucket(t, "fixtures")
				for _, img := range imgs {
					w.Upload(t, "fixtures", relFixture(t, img), img)
				}
				w.Env(t)
			}
			for _, img := range imgs {
				m := manifestOf(img)
				if m == "" {
					continue
				}
				url := ng.URL + "/" + relFixture(t, img)
				if scheme == "s3" {
					url = "s3://fixtures/" + relFixture(t, img)
				}
				t.Run(strings.TrimSuffix(filepath.Base(img), ".dwarfs"), func(t *testing.T) {
					t.Parallel()
					srv, src := mountURL(t, url, "")
					checkManifest(t, srv.Dir(), readManifest(t, m), legacyLinkTimes(src.Image()))
					if st := remoteStats(t, srv.Dir()); st.Requests == 0 || st.Errors != 0 {
						t.Errorf("stats %+v", st)
					}
				})
			}
		})
	}
}

func biggestFixture(t *testing.T) string {
	var best string
	var size int64
	for _, img := range imageList(t) {
		if st, err := os.Stat(img); err == nil && st.Size() > size && manifestOf(img) != "" {
			best, size = img, st.Size()
		}
	}
	return best
}

// hashTree hashes every regular file below dir through read(2).
func hashTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return err
		}
		h, err := hashFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = h
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRemoteDiskCacheRemount(t *testing.T) {
	requireFuse(t)
	img := biggestFixture(t)
	ng := remotetest.Nginx(t, fixturesRoot(t))
	url := ng.URL + "/" + relFixture(t, img)
	cache := t.TempDir()
	opts := "disk_cache=" + cache + ",disk_cache_size=64m"

	srv, _ := mountURL(t, url, opts)
	want := hashTree(t, srv.Dir())
	if st := remoteStats(t, srv.Dir()); st.BytesFetched == 0 {
		t.Fatalf("first mount fetched nothing: %+v", st)
	}
	if err := srv.Unmount(); err != nil {
		t.Fatal(err)
	}

	srv2, _ := mountURL(t, url, opts)
	got := hashTree(t, srv2.Dir())
	st := remoteStats(t, srv2.Dir())
	if st.BytesFetched != 0 || st.DiskHits == 0 {
		t.Errorf("remount with a warm cache fetched: %+v", st)
	}
	if len(got) != len(want) {
		t.Errorf("%d files, want %d", len(got), len(want))
	}
	for p, h := range want {
		if got[p] != h {
			t.Errorf("%s differs after remount", p)
		}
	}
	pm := make([]byte, 8192)
	n, err := unix.Getxattr(srv2.Dir(), fusefs.XattrPerfmon, pm)
	if err != nil || !strings.Contains(string(pm[:n]), "remote: ") {
		t.Errorf("perfmon has no remote line: %q %v", pm[:max(n, 0)], err)
	}
}

func TestRemoteFaultsAndOutages(t *testing.T) {
	requireFuse(t)
	img := biggestFixture(t)
	m := manifestOf(img)
	ng := remotetest.Nginx(t, fixturesRoot(t))

	t.Run("fault proxy tar", func(t *testing.T) {
		plan := func(n int64, r *http.Request) remotetest.Fault {
			switch n % 5 {
			case 1:
				return remotetest.Fault{Status: http.StatusServiceUnavailable, RetryAfter: "0"}
			case 2:
				return remotetest.Fault{ResetAfter: 1000}
			case 3:
				return remotetest.Fault{Delay: 30 * time.Millisecond, CutAfter: 100}
			}
			return remotetest.Fault{}
		}
		px := remotetest.NewProxy(t, ng.URL, plan)
		srv, _ := mountURL(t, px.URL+"/"+relFixture(t, img), "")
		out := t.TempDir()
		tar := exec.Command("sh", "-c", `tar -cf - -C "$1" . | tar -xf - -C "$2"`, "sh", srv.Dir(), out)
		if b, err := tar.CombinedOutput(); err != nil {
			t.Fatalf("tar: %v\n%s", err, b)
		}
		got := hashTree(t, out)
		n := 0
		for _, e := range readManifest(t, m) {
			if e.SHA256 != "" && e.Type == '-' && e.Size > 0 {
				n++
				if got[e.Path] != e.SHA256 {
					t.Errorf("%s: sha256 %s after tar through the fault proxy, want %s", e.Path, got[e.Path], e.SHA256)
				}
			}
		}
		if st := remoteStats(t, srv.Dir()); st.Retries == 0 || st.Errors != 0 {
			t.Errorf("stats %+v: want retries, no errors", st)
		}
		if n == 0 {
			t.Fatal("no files compared")
		}
	})

	t.Run("server stopped", func(t *testing.T) {
		ng2 := remotetest.Nginx(t, fixturesRoot(t))
		srv, _ := mountURL(t, ng2.URL+"/"+relFixture(t, img), "remote_timeout=2,remote_attempts=3")
		var files []string
		filepath.Walk(srv.Dir(), func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
				files = append(files, p)
			}
			return nil
		})
		first, err := hashFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		ng2.Stop()
		var failed error
		for _, f := range files[1:] {
			if _, err := hashFile(f); err != nil {
				failed = err
				break
			}
		}
		if !errors.Is(failed, syscall.EIO) {
			t.Errorf("read with the server stopped: %v, want EIO", failed)
		}
		// Still responsive for what it has.
		if h, err := hashFile(files[0]); err != nil || h != first {
			t.Errorf("cached file after the server stopped: %v", err)
		}
		if _, err := os.ReadDir(srv.Dir()); err != nil {
			t.Errorf("readdir after the server stopped: %v", err)
		}
	})

	t.Run("changed object", func(t *testing.T) {
		dir := t.TempDir()
		data, err := os.ReadFile(img)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "img.dwarfs")
		os.WriteFile(p, data, 0o644)
		ng3 := remotetest.Nginx(t, dir)
		srv, _ := mountURL(t, ng3.URL+"/img.dwarfs", "")
		changed := bytes.Clone(data)
		for i := 64; i < len(changed)-64; i += 512 {
			changed[i] ^= 0x55
		}
		os.WriteFile(p+".new", changed, 0o644)
		later := time.Now().Add(time.Hour)
		os.Chtimes(p+".new", later, later)
		os.Rename(p+".new", p)
		want := map[string]string{}
		for _, e := range readManifest(t, m) {
			if e.SHA256 != "" {
				want[e.Path] = e.SHA256
			}
		}
		var failed error
		filepath.Walk(srv.Dir(), func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() && fi.Size() > 0 && failed == nil {
				rel, _ := filepath.Rel(srv.Dir(), p)
				if h, err := hashFile(p); err != nil {
					failed = err
				} else if h != want[rel] {
					t.Errorf("%s: served mixed content after the object changed", rel)
				}
			}
			return nil
		})
		if !errors.Is(failed, syscall.EIO) {
			t.Errorf("read of a changed object: %v, want EIO", failed)
		}
	})
}

// TestRemoteLargeObjectOpen mounts an image at the end of a 1 GiB object
// (a sparse prefix, found through the section index) and checks that
// mounting and `ls -lR` transfer less than 1% of it.
func TestRemoteLargeObjectOpen(t *testing.T) {
	requireFuse(t)
	img := biggestFixture(t)
	data, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "big.dwarfs"))
	if err != nil {
		t.Fatal(err)
	}
	const prefix = 1 << 30
	if _, err := f.WriteAt(data, prefix); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ng := remotetest.Nginx(t, dir)
	size := int64(prefix + len(data))
	srv, src := mountURL(t, ng.URL+"/big.dwarfs", "offset=auto")
	out, err := exec.Command("ls", "-lR", srv.Dir()).CombinedOutput()
	if err != nil {
		t.Fatalf("ls -lR: %v\n%s", err, out)
	}
	st := remoteStats(t, srv.Dir())
	if st.BytesFetched*100 >= size {
		t.Errorf("mount and ls -lR fetched %d bytes of %d (%.2f%%)", st.BytesFetched, size, 100*float64(st.BytesFetched)/float64(size))
	}
	t.Logf("mount + ls -lR of a %d-byte object: %d bytes in %d requests", size, st.BytesFetched, st.Requests)

	// Reading one small file fetches at most the blocks that hold it.
	parts := imageaccess.Of(src.Image())
	var small string
	var ino uint32
	smallest := int64(1 << 62)
	filepath.Walk(srv.Dir(), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Size() > 0 && fi.Size() < smallest {
			small, smallest = p, fi.Size()
			ino = uint32(fi.Sys().(*syscall.Stat_t).Ino - 1) // st_ino is inode + 1
		}
		return nil
	})
	chunks, err := parts.FS.FileChunks(ino)
	if err != nil {
		t.Fatal(err)
	}
	var budget, total int64
	seen := map[uint32]bool{}
	for _, c := range chunks {
		total += int64(c.Size)
		if !c.Hole && !seen[c.Block] {
			seen[c.Block] = true
			b, _ := parts.Blocks.Block(int(c.Block))
			budget += b.Length
		}
	}
	if total != smallest {
		t.Fatalf("inode %d holds %d bytes, %s has %d", ino, total, small, smallest)
	}
	if _, err := hashFile(small); err != nil {
		t.Fatal(err)
	}
	if got := remoteStats(t, srv.Dir()).BytesFetched - st.BytesFetched; got > budget {
		t.Errorf("reading %s (%d bytes) fetched %d bytes; its blocks hold %d", small, smallest, got, budget)
	}
	checkManifest(t, srv.Dir(), readManifest(t, manifestOf(img)), nil)
}

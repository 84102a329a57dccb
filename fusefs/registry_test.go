//go:build linux && !386 && !arm

package fusefs_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/sync/errgroup"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/dwarfsck"
	"github.com/godwarfs/godwarfs/internal/dwarfsextract"
	"github.com/godwarfs/godwarfs/internal/imagetest"
	"github.com/godwarfs/godwarfs/internal/mkdwarfs"
	"github.com/godwarfs/godwarfs/internal/remotetest"
	"github.com/godwarfs/godwarfs/source"
	"github.com/godwarfs/godwarfs/source/registrysource"
)

func mk(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var stderr bytes.Buffer
	code := mkdwarfs.Main(context.Background(), append([]string{"mkdwarfs"}, append(args, "--log-level=error")...), cli.Stdio{Out: &bytes.Buffer{}, Err: &stderr})
	return code, stderr.String()
}

// treeFiles returns the regular files below dir, by slash path.
func treeFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		r, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(r)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, what string, got, want map[string][]byte) {
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

// TestRegistryImage pushes an image with mkdwarfs -o docker://, then
// checks, extracts, merges and mounts it from the registry, with and
// without registry auth.
func TestRegistryImage(t *testing.T) {
	requireFuse(t)
	treeA, treeB := imagetest.Tree(t, 11, 120), imagetest.Tree(t, 12, 30)
	wantA, wantB := treeFiles(t, treeA), treeFiles(t, treeB)
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
				if code, msg := mk(t, "-i", treeA, "-o", ref, "-S", "16"); code == 0 || !strings.Contains(msg, "401") {
					t.Fatalf("push without credentials: exit %d: %s", code, msg)
				}
				remotetest.Login(t, reg.Host, user, pw)
			}
			// A failed build pushes nothing.
			if code, _ := mk(t, "-i", filepath.Join(treeA, "nonexistent"), "-o", ref); code == 0 {
				t.Fatal("a build of a missing directory succeeded")
			}
			if _, err := source.Open(context.Background(), ref, source.Options{Attempts: 1}); err == nil || !strings.Contains(err.Error(), "404") {
				t.Fatalf("after a failed build: %v, want no tag (404)", err)
			}
			if code, msg := mk(t, "-i", treeA, "-o", ref, "-S", "16"); code != 0 {
				t.Fatalf("mkdwarfs -o %s: exit %d: %s", ref, code, msg)
			}

			var out, errb bytes.Buffer
			if code := dwarfsck.Main(context.Background(), []string{"dwarfsck", "--check-integrity", ref}, cli.Stdio{Out: &out, Err: &errb}); code != 0 {
				t.Fatalf("dwarfsck --check-integrity: exit %d: %s", code, errb.String())
			}
			ext := t.TempDir()
			if code := dwarfsextract.Main(context.Background(), []string{"dwarfsextract", "-i", ref, "-o", ext}, cli.Stdio{Out: &out, Err: &errb}); code != 0 {
				t.Fatalf("dwarfsextract: exit %d: %s", code, errb.String())
			}
			sameTree(t, "extracted", treeFiles(t, ext), wantA)

			// --merge takes it as an input image, named after the
			// repository.
			local := filepath.Join(t.TempDir(), "b.dwarfs")
			if code, msg := mk(t, "-i", treeB, "-o", local); code != 0 {
				t.Fatalf("exit %d: %s", code, msg)
			}
			merged := filepath.Join(t.TempDir(), "merged.dwarfs")
			if code, msg := mk(t, "--merge", ref, local, "-o", merged); code != 0 {
				t.Fatalf("--merge: exit %d: %s", code, msg)
			}
			im, err := godwarfs.Open(merged, nil)
			if err != nil {
				t.Fatal(err)
			}
			for p, w := range wantA {
				if b, err := fs.ReadFile(im, "app/"+p); err != nil || !bytes.Equal(b, w) {
					t.Fatalf("merged app/%s: %v", p, err)
				}
			}
			im.Close()
			// Rewrites and merges push as builds do.
			for _, c := range []struct {
				tag  string
				args []string
				dir  string // where wantA is in the result
			}{
				{"recompressed", []string{"-i", ref, "--recompress", "-C", "zstd:level=3"}, ""},
				{"merged", []string{"--merge", ref, local}, "app"},
			} {
				out2 := "docker://" + reg.Host + "/images/derived:" + c.tag
				if code, msg := mk(t, append(c.args, "-o", out2)...); code != 0 {
					t.Fatalf("%q -o %s: exit %d: %s", c.args, out2, code, msg)
				}
				x := t.TempDir()
				if code := dwarfsextract.Main(context.Background(), []string{"dwarfsextract", "-i", out2, "-o", x}, cli.Stdio{Out: &out, Err: &errb}); code != 0 {
					t.Fatalf("dwarfsextract %s: exit %d: %s", out2, code, errb.String())
				}
				sameTree(t, out2, treeFiles(t, filepath.Join(x, c.dir)), wantA)
			}
			if _, err := os.Lstat("docker:"); err == nil {
				t.Fatal("a push left a local file named docker:")
			}

			// Mounted: a listing and a few files fetch a small part of
			// the blob.
			src, err := source.Open(context.Background(), ref, source.Options{})
			if err != nil {
				t.Fatal(err)
			}
			size := src.Size()
			src.Close()
			srv, _ := mountURL(t, ref, "")
			var names []string
			err = filepath.WalkDir(srv.Dir(), func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if _, err := os.Lstat(p); err != nil {
					return err
				}
				if d.Type().IsRegular() {
					r, _ := filepath.Rel(srv.Dir(), p)
					names = append(names, filepath.ToSlash(r))
				}
				return nil
			})
			if err != nil || len(names) != len(wantA) {
				t.Fatalf("listing: %d files, %v", len(names), err)
			}
			sort.Strings(names)
			for _, n := range names[:4] {
				b, err := os.ReadFile(filepath.Join(srv.Dir(), n))
				if err != nil || !bytes.Equal(b, wantA[n]) {
					t.Fatalf("mounted %s: %v", n, err)
				}
			}
			st := remoteStats(t, srv.Dir())
			t.Logf("listing and 4 files: %d of %d bytes fetched (%.1f%%): %v", st.BytesFetched, size, 100*float64(st.BytesFetched)/float64(size), st)
			if st.BytesFetched*4 > size {
				t.Errorf("fetched %d of the blob's %d bytes for a listing and 4 files", st.BytesFetched, size)
			}

			// The tag moves to another image during the mount: the
			// mount keeps reading the blob it opened.
			if code, msg := mk(t, "-i", treeB, "-o", ref, "-S", "16"); code != 0 {
				t.Fatalf("second push: exit %d: %s", code, msg)
			}
			sameTree(t, "mounted, after the tag moved", treeFiles(t, srv.Dir()), wantA)
			ext2 := t.TempDir()
			if code := dwarfsextract.Main(context.Background(), []string{"dwarfsextract", "-i", ref, "-o", ext2}, cli.Stdio{Out: &out, Err: &errb}); code != 0 {
				t.Fatalf("dwarfsextract: exit %d: %s", code, errb.String())
			}
			sameTree(t, "the moved tag", treeFiles(t, ext2), wantB)
		})
	}
}

// TestRegistrySigned: mkdwarfs --sign -o docker:// pushes the signature
// beside the image, where dwarfsck --verify and a verified mount find it
// by tag and by digest.
func TestRegistrySigned(t *testing.T) {
	requireFuse(t)
	dir := t.TempDir()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	key, allowed := filepath.Join(dir, "key"), filepath.Join(dir, "allowed")
	os.WriteFile(key, pem.EncodeToMemory(blk), 0o600)
	signer, _ := ssh.NewSignerFromKey(priv)
	os.WriteFile(allowed, append([]byte("builder "), ssh.MarshalAuthorizedKey(signer.PublicKey())...), 0o644)

	tree := imagetest.Tree(t, 21, 20)
	want := treeFiles(t, tree)
	remotetest.IsolateAuth(t)
	reg := remotetest.ContainerRegistry(t, "", "")
	ref := "docker://" + reg.Host + "/signed/tools:v1"
	if code, msg := mk(t, "-i", tree, "-o", ref, "-S", "16", "--sign", key); code != 0 {
		t.Fatalf("mkdwarfs --sign -o %s: exit %d: %s", ref, code, msg)
	}
	src, err := source.Open(context.Background(), ref, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mdig, _ := registrysource.ManifestDigest(src)
	src.Close()
	byDigest := "docker://" + reg.Host + "/signed/tools@" + mdig
	for _, r := range []string{ref, byDigest} {
		var out, errb bytes.Buffer
		if code := dwarfsck.Main(context.Background(), []string{"dwarfsck", "--verify=" + allowed, r}, cli.Stdio{Out: &out, Err: &errb}); code != 0 || !strings.Contains(out.String(), "builder") {
			t.Fatalf("dwarfsck --verify %s: exit %d: %s%s", r, code, out.String(), errb.String())
		}
	}
	srv, _ := mountURL(t, byDigest, "verify="+allowed)
	sameTree(t, "verified mount", treeFiles(t, srv.Dir()), want)

	// An image pushed without a signature does not verify.
	plain := "docker://" + reg.Host + "/signed/tools:plain"
	if code, msg := mk(t, "-i", tree, "-o", plain); code != 0 {
		t.Fatalf("exit %d: %s", code, msg)
	}
	var out, errb bytes.Buffer
	if code := dwarfsck.Main(context.Background(), []string{"dwarfsck", "--verify=" + allowed, plain}, cli.Stdio{Out: &out, Err: &errb}); code == 0 || !strings.Contains(errb.String(), "plain.sig") {
		t.Fatalf("unsigned: exit %d: %s", code, errb.String())
	}
}

// TestRegistryTokenExpiry mounts an image through a token service whose
// tokens are good for a few requests each, as short-lived tokens expire
// during a long mount: readers in parallel renew them through the
// WWW-Authenticate challenge, and every file reads back whole.
func TestRegistryTokenExpiry(t *testing.T) {
	requireFuse(t)
	tree := imagetest.Tree(t, 13, 150)
	want := treeFiles(t, tree)
	remotetest.IsolateAuth(t)
	reg := remotetest.ContainerRegistry(t, "", "")
	if code, msg := mk(t, "-i", tree, "-o", "docker://"+reg.Host+"/images/app:v1", "-S", "14"); code != 0 {
		t.Fatalf("push: exit %d: %s", code, msg)
	}
	host, issued := remotetest.ShortTokens(t, reg, "tester", "s3cret", 4)
	remotetest.Login(t, host, "tester", "s3cret")
	srv, _ := mountURL(t, "docker://"+host+"/images/app:v1", "")
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	var g errgroup.Group
	for w := range 8 {
		g.Go(func() error {
			for i := w; i < len(names); i += 8 {
				b, err := os.ReadFile(filepath.Join(srv.Dir(), names[i]))
				if err != nil {
					return err
				}
				if !bytes.Equal(b, want[names[i]]) {
					return fmt.Errorf("%s differs (%d bytes, want %d)", names[i], len(b), len(want[names[i]]))
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	st := remoteStats(t, srv.Dir())
	if st.Errors != 0 || issued.Load() < 3 {
		t.Fatalf("%d tokens issued, stats %+v: want renewals and no failed reads", issued.Load(), st)
	}
	t.Logf("%d files read with %d tokens: %+v", len(names), issued.Load(), st)
}

//go:build unix

package mkdwarfs

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/remotetest"
	"github.com/godwarfs/godwarfs/source"
)

// makeSecondTree is a tree to add to makeTree's: new files, one with the
// contents of makeTree's text/log.txt, one near a version file.
func makeSecondTree(t testing.TB, first string) string {
	t.Helper()
	root := t.TempDir()
	log, err := os.ReadFile(filepath.Join(first, "text/log.txt"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := os.ReadFile(filepath.Join(first, "versions/v0.bin"))
	if err != nil {
		t.Fatal(err)
	}
	v = append(bytes.Clone(v[:60000]), []byte(strings.Repeat("new tail ", 500))...)
	for rel, data := range map[string][]byte{
		"copy-of-log.txt": log, "versions/v9.bin": v, "notes/readme": []byte("appended\n"), "notes/empty": nil,
	} {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("readme", filepath.Join(root, "notes/link")); err != nil {
		t.Fatal(err)
	}
	for i, rel := range []string{"notes/link", "notes/readme", "notes/empty", "notes", "versions/v9.bin", "versions", "copy-of-log.txt", "."} {
		if err := lutimes(filepath.Join(root, rel), time.Unix(1710000000+int64(i)*61, 0)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// under returns the entries of tree below the directory at.
func under(tree map[string]node, at string) map[string]node {
	out := map[string]node{}
	for p, n := range tree {
		if p == "" {
			out[at] = n
		} else {
			out[at+"/"+p] = n
		}
	}
	return out
}

func TestAppendCLI(t *testing.T) {
	a := makeTree(t)
	b := makeSecondTree(t, a)
	dir := t.TempDir()
	old := filepath.Join(dir, "old.dwarfs")
	mk(t, "-i", a, "-o", old, "-l", "3", "-S", "16", "--log-level", "warn")
	wantA, wantB := expected(t, a), expected(t, b)
	for _, at := range []string{"", "added"} {
		out := filepath.Join(dir, "new"+at+".dwarfs")
		args := []string{"-i", old, "--append", b, "-o", out, "-l", "3", "--log-level", "warn"}
		if at != "" {
			args = append(args, "--append-at", at)
		}
		mk(t, args...)
		want := map[string]node{}
		for p, n := range wantA {
			want[p] = n
		}
		add := under(wantB, at)
		if at == "" {
			add = wantB
		}
		for p, n := range add {
			if _, ok := want[p]; !ok || at != "" {
				// A directory both have keeps the image's attributes.
				want[p] = n
			}
		}
		got, md := readBack(t, out)
		compareTrees(t, want, got, cmpOpts{})
		if md.BlockSize != 1<<16 {
			t.Errorf("block size %d, want the image's %d", md.BlockSize, 1<<16)
		}
		oldBlocks, newBlocks := openBlocks(t, old).Blocks(), openBlocks(t, out).Blocks()
		if len(newBlocks) <= len(oldBlocks) {
			t.Errorf("%d blocks after append, %d before", len(newBlocks), len(oldBlocks))
		}
	}
	// A path both have is an error naming it, and no image is written.
	out := filepath.Join(dir, "clash.dwarfs")
	var stderr bytes.Buffer
	code := Main(context.Background(), []string{"mkdwarfs", "-i", old, "--append", a, "-o", out, "--log-level", "warn"}, cli.Stdio{Out: &bytes.Buffer{}, Err: &stderr})
	if code != 1 || !strings.Contains(stderr.String(), "path exists") || !strings.Contains(stderr.String(), "--replace") {
		t.Errorf("collision: exit %d, %s", code, stderr.String())
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("image written despite the collision")
	}
	// With --replace the appended tree wins; a is the same tree, so the
	// result is a's.
	mk(t, "-i", old, "--append", a, "--replace", "-o", out, "--log-level", "warn")
	got, _ := readBack(t, out)
	compareTrees(t, wantA, got, cmpOpts{})
}

func TestMergeCLI(t *testing.T) {
	a := makeTree(t)
	b := makeSecondTree(t, a)
	dir := t.TempDir()
	imgA, imgB := filepath.Join(dir, "first.dwarfs"), filepath.Join(dir, "second.dwarfs")
	mk(t, "-i", a, "-o", imgA, "-l", "3", "-S", "16", "--log-level", "warn")
	mk(t, "-i", b, "-o", imgB, "-l", "5", "-S", "20", "--log-level", "warn")
	wantA, wantB := expected(t, a), expected(t, b)
	want := under(wantA, "first")
	for p, n := range under(wantB, "x/second") {
		want[p] = n
	}
	want[""] = wantA[""]
	want["x"] = wantB[""]
	out := filepath.Join(dir, "merged.dwarfs")
	mk(t, "--merge", imgA, "x/second="+imgB, "-o", out, "--log-level", "warn")
	got, md := readBack(t, out)
	compareTrees(t, want, got, cmpOpts{})
	if md.BlockSize != 1<<20 {
		t.Errorf("block size %d, want the larger input's", md.BlockSize)
	}
	// All into the root: the trees have no path in common but the root
	// and the versions directory.
	mk(t, "--merge", imgA, imgB, "--merge-into-root", "-o", out, "-f", "--log-level", "warn")
	got, _ = readBack(t, out)
	want = map[string]node{}
	for p, n := range wantB {
		want[p] = n
	}
	for p, n := range wantA {
		want[p] = n
	}
	compareTrees(t, want, got, cmpOpts{})
	// NAME= wins over --merge-into-root.
	mk(t, "--merge", "--merge-into-root", imgA, "added="+imgB, "-o", out, "-f", "--log-level", "warn")
	got, _ = readBack(t, out)
	want = under(wantB, "added")
	for p, n := range wantA {
		want[p] = n
	}
	compareTrees(t, want, got, cmpOpts{})
	// A missing or corrupt input is named.
	for _, bad := range []string{filepath.Join(dir, "missing.dwarfs"), a + "/small.txt"} {
		var stderr bytes.Buffer
		o := filepath.Join(dir, "bad.dwarfs")
		if code := Main(context.Background(), []string{"mkdwarfs", "--merge", imgA, bad, "-o", o}, cli.Stdio{Out: &bytes.Buffer{}, Err: &stderr}); code != 1 || !strings.Contains(stderr.String(), bad) {
			t.Errorf("%s: exit %d, %s", bad, code, stderr.String())
		}
		if _, err := os.Stat(o); !os.IsNotExist(err) {
			t.Errorf("%s: image written", bad)
		}
	}
}

// TestMergeFromS3 merges images straight from an S3 server.
func TestMergeFromS3(t *testing.T) {
	a := makeTree(t)
	b := makeSecondTree(t, a)
	dir := t.TempDir()
	imgA, imgB := filepath.Join(dir, "first.dwarfs"), filepath.Join(dir, "second.dwarfs")
	mk(t, "-i", a, "-o", imgA, "-l", "3", "--log-level", "warn")
	mk(t, "-i", b, "-o", imgB, "-l", "3", "--log-level", "warn")
	w := remotetest.SeaweedFS(t)
	w.Bucket(t, "merge")
	w.Upload(t, "merge", "first.dwarfs", imgA)
	w.Upload(t, "merge", "sub/second.dwarfs", imgB)
	w.Env(t)
	// SeaweedFS may answer a first read of a fresh object with a response
	// the S3 client cannot parse: wait until both objects read.
	for _, u := range []string{"s3://merge/first.dwarfs", "s3://merge/sub/second.dwarfs"} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			src, err := source.Open(context.Background(), u, source.Options{Attempts: 1})
			if err == nil {
				_, err = src.ReadAt(make([]byte, 16), 0)
				src.Close()
				if err == nil {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never became readable: %v", u, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	local, remote := filepath.Join(dir, "local.dwarfs"), filepath.Join(dir, "remote.dwarfs")
	mk(t, "--merge", imgA, imgB, "-o", local, "--no-history-timestamps", "--log-level", "warn")
	mk(t, "--merge", "s3://merge/first.dwarfs", "s3://merge/sub/second.dwarfs", "-o", remote, "--no-history-timestamps", "--log-level", "warn")
	l, _ := readBack(t, local)
	r, _ := readBack(t, remote)
	compareTrees(t, l, r, cmpOpts{})
	if lb, rb := openBlocks(t, local).Blocks(), openBlocks(t, remote).Blocks(); len(lb) != len(rb) {
		t.Errorf("%d blocks from S3, %d from files", len(rb), len(lb))
	}
}

func TestGrowUsage(t *testing.T) {
	a := makeTree(t)
	dir := t.TempDir()
	img := filepath.Join(dir, "a.dwarfs")
	mk(t, "-i", a, "-o", img, "-l", "1", "--log-level", "warn")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-i", a, "--append", a, "-o", "x.dwarfs"}, "is a directory"},
		{[]string{"-i", img, "--append", a, "--recompress", "-o", "x.dwarfs"}, "cannot be used together"},
		{[]string{"-i", img, "--append-at", "x", "-o", "x.dwarfs"}, "--append-at needs --append"},
		{[]string{"-i", img, "--no-merge-dedup", "-o", "x.dwarfs"}, "--no-merge-dedup needs --merge"},
		{[]string{"--merge", "-o", "x.dwarfs"}, "needs the images"},
		{[]string{"--merge", img, "-i", a, "-o", "x.dwarfs"}, "cannot be used together"},
		{[]string{"--merge", img, img, "-o", img, "-f"}, "same as the input"},
	} {
		var stderr bytes.Buffer
		if code := Main(context.Background(), append([]string{"mkdwarfs"}, tc.args...), cli.Stdio{Out: &bytes.Buffer{}, Err: &stderr}); code == 0 || !strings.Contains(stderr.String(), tc.msg) {
			t.Errorf("%v: exit %d, %q; want %q", tc.args, code, stderr.String(), tc.msg)
		}
	}
	for _, tc := range []struct{ arg, name, image string }{
		{"a=b.dwarfs", "a", "b.dwarfs"},
		{"x/y=s3://bucket/k?v=1", "x/y", "s3://bucket/k?v=1"},
		{"s3://bucket/k?v=1", "", ""},
		{"./a=b.dwarfs", "", ""},
		{"/tmp/a=b.dwarfs", "", ""},
	} {
		name, image, ok := explicitName(tc.arg)
		if name != tc.name || image != tc.image || ok != (tc.name != "") {
			t.Errorf("explicitName(%q) = %q, %q, %v", tc.arg, name, image, ok)
		}
	}
}

// TestAppendFromURL appends to an image read over HTTP with range
// requests, and merges it with itself from there.
func TestAppendFromURL(t *testing.T) {
	a := makeTree(t)
	b := makeSecondTree(t, a)
	dir := t.TempDir()
	old := filepath.Join(dir, "old.dwarfs")
	mk(t, "-i", a, "-o", old, "-l", "3", "--log-level", "warn")
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	local, remote := filepath.Join(t.TempDir(), "local.dwarfs"), filepath.Join(t.TempDir(), "remote.dwarfs")
	mk(t, "-i", old, "--append", b, "--append-at", "b", "-o", local, "-l", "3", "--no-history-timestamps", "--log-level", "warn")
	mk(t, "-i", srv.URL+"/old.dwarfs", "--append", b, "--append-at", "b", "-o", remote, "-l", "3", "--no-history-timestamps", "--log-level", "warn")
	l, _ := readBack(t, local)
	r, _ := readBack(t, remote)
	compareTrees(t, l, r, cmpOpts{})
	merged := filepath.Join(t.TempDir(), "merged.dwarfs")
	out := mk(t, "--merge", srv.URL+"/old.dwarfs", "again="+srv.URL+"/old.dwarfs", "-o", merged, "--log-level", "info")
	if !strings.Contains(out, "fetched") {
		t.Errorf("the summary does not say what was fetched:\n%s", out)
	}
	want := expected(t, a)
	got, _ := readBack(t, merged)
	all := under(want, "old")
	for p, n := range under(want, "again") {
		n.inoKey += " again" // a second copy: other inodes
		all[p] = n
	}
	all[""] = want[""]
	compareTrees(t, all, got, cmpOpts{})
}

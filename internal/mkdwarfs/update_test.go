//go:build unix

package mkdwarfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/dwarfsck"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/metadata"
	"github.com/godwarfs/godwarfs/writer"
)

// updateTree writes a tree for update tests: files of random (so
// incompressible, and unique) data in several directories, a file of
// several blocks, a symlink and a hard link, every mtime fixed.
func updateTree(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 8))
	rnd := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	files := map[string][]byte{
		"keep/a.bin": rnd(30000), "keep/b.bin": rnd(50000), "keep/c.txt": []byte("unchanged text\n"),
		"big/large.bin": rnd(300000), "gone/x.bin": rnd(200000), "gone/y.bin": rnd(150000),
		"mod/m.bin": rnd(100000), "mod/same-size.bin": rnd(20000), "ren/r.bin": rnd(40000),
		"tools/run.sh": []byte("#!/bin/sh\necho hi\n"),
		// Equal contents, mtimes of their own.
		"dup/1.txt": []byte("the same\n"), "dup/2.txt": []byte("the same\n"), "dup/3.txt": []byte("the same\n"),
	}
	for rel, data := range files {
		write(t, filepath.Join(root, rel), data)
	}
	must(t, os.Symlink("../keep/c.txt", filepath.Join(root, "tools/link")))
	must(t, os.Link(filepath.Join(root, "keep/b.bin"), filepath.Join(root, "tools/b-hard")))
	stamp(t, root, 1700000000)
	return root
}

func write(t testing.TB, p string, data []byte) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, data, 0o644))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// stamp gives every entry below root the mtime sec (plus a second per
// entry, in walk order), children before their directories.
func stamp(t testing.TB, root string, sec int64) {
	t.Helper()
	var paths []string
	must(t, filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		paths = append(paths, p)
		return err
	}))
	for i := len(paths) - 1; i >= 0; i-- {
		must(t, lutimes(paths[i], time.Unix(sec+int64(i), 0)))
	}
}

// copyTree copies src to a new directory, keeping modes, mtimes, symlinks
// and hard links.
func copyTree(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "tree")
	out, err := exec.Command("cp", "-a", src, dst).CombinedOutput()
	if err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
	return dst
}

// imageParts opens img and returns its metadata view and each block's
// stored bytes.
func imageParts(t testing.TB, img string) (*metadata.FS, [][]byte) {
	t.Helper()
	im, err := godwarfs.Open(img, nil)
	if err != nil {
		t.Fatalf("open %s: %v", img, err)
	}
	t.Cleanup(func() { im.Close() })
	p := imageaccess.Of(im)
	var raw [][]byte
	for _, s := range p.Blocks.Blocks() {
		b, err := p.Blocks.ReadRaw(s)
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, b)
	}
	return p.FS, raw
}

// fileBlocks returns the stored bytes of the blocks of rel's chunks, with
// each chunk's offset and size.
func fileBlocks(t testing.TB, f *metadata.FS, raw [][]byte, rel string) []string {
	t.Helper()
	ino, err := f.LookupPath(rel)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	chunks, err := f.FileChunks(ino)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range chunks {
		out = append(out, fmt.Sprintf("%x@%d+%d", raw[c.Block], c.Offset, c.Size))
	}
	return out
}

// unreferenced returns the blocks of img that no chunk refers to.
func unreferenced(t testing.TB, img string) []int {
	t.Helper()
	f, raw := imageParts(t, img)
	used := make([]bool, len(raw))
	must(t, f.Walk(func(_ string, ino uint32, e metadata.Inode) error {
		if e.Mode&syscall.S_IFMT != syscall.S_IFREG {
			return nil
		}
		chunks, err := f.FileChunks(ino)
		for _, c := range chunks {
			if !c.Hole {
				used[c.Block] = true
			}
		}
		return err
	}))
	var out []int
	for i, u := range used {
		if !u {
			out = append(out, i)
		}
	}
	return out
}

func TestUpdateCLI(t *testing.T) {
	old := updateTree(t)
	dir := t.TempDir()
	oldImg := filepath.Join(dir, "old.dwarfs")
	mk(t, "-i", old, "-o", oldImg, "-l", "3", "-S", "16", "--log-level", "warn")
	oldSum := fileHash(t, oldImg)
	oldFS, oldRaw := imageParts(t, oldImg)
	rng := rand.New(rand.NewPCG(9, 10))
	rnd := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	cases := []struct {
		name   string
		change func(t *testing.T, root string)
		args   []string
		// kept are files whose chunks must be the old image's.
		kept []string
		// fewer: the update must drop old blocks.
		fewer bool
	}{
		{name: "unchanged", change: func(*testing.T, string) {}, kept: []string{"keep/a.bin", "big/large.bin", "mod/m.bin"}},
		{name: "modified", change: func(t *testing.T, root string) {
			p := filepath.Join(root, "mod/m.bin")
			b, _ := os.ReadFile(p)
			copy(b[50000:], "a change in the middle")
			write(t, p, append(b, "and a new tail"...))
		}, kept: []string{"keep/a.bin", "big/large.bin"}},
		{name: "added", change: func(t *testing.T, root string) {
			write(t, filepath.Join(root, "new/n.bin"), rnd(60000))
			write(t, filepath.Join(root, "keep/new.txt"), []byte("new\n"))
		}, kept: []string{"keep/a.bin", "mod/m.bin"}},
		{name: "deleted", change: func(t *testing.T, root string) {
			must(t, os.RemoveAll(filepath.Join(root, "gone")))
			must(t, os.Remove(filepath.Join(root, "keep/c.txt")))
		}, kept: []string{"keep/a.bin", "big/large.bin"}, fewer: true},
		{name: "renamed", change: func(t *testing.T, root string) {
			must(t, os.Rename(filepath.Join(root, "ren/r.bin"), filepath.Join(root, "keep/r-moved.bin")))
			must(t, os.Rename(filepath.Join(root, "big"), filepath.Join(root, "huge")))
		}, kept: []string{"keep/a.bin", "huge/large.bin", "keep/r-moved.bin"}},
		{name: "modes", change: func(t *testing.T, root string) {
			must(t, os.Chmod(filepath.Join(root, "keep/a.bin"), 0o600))
			must(t, os.Chmod(filepath.Join(root, "tools/run.sh"), 0o755))
			must(t, os.Chmod(filepath.Join(root, "mod"), 0o700))
		}, kept: []string{"keep/a.bin", "tools/run.sh"}},
		{name: "symlinks", change: func(t *testing.T, root string) {
			must(t, os.Remove(filepath.Join(root, "tools/link")))
			must(t, os.Symlink("../big/large.bin", filepath.Join(root, "tools/link")))
			must(t, os.Symlink("run.sh", filepath.Join(root, "tools/link2")))
		}, kept: []string{"keep/a.bin"}},
		{name: "hardlinks", change: func(t *testing.T, root string) {
			must(t, os.Remove(filepath.Join(root, "tools/b-hard")))
			must(t, os.Link(filepath.Join(root, "keep/a.bin"), filepath.Join(root, "tools/a-hard")))
		}, kept: []string{"keep/a.bin", "keep/b.bin"}},
		{name: "same size and mtime, hash check", args: []string{"--update-check=hash"}, change: func(t *testing.T, root string) {
			p := filepath.Join(root, "mod/same-size.bin")
			st, _ := os.Stat(p)
			b, _ := os.ReadFile(p)
			b[100] ^= 0xff
			write(t, p, b)
			must(t, lutimes(p, st.ModTime()))
		}, kept: []string{"keep/a.bin", "big/large.bin"}},
		{name: "all at once", change: func(t *testing.T, root string) {
			must(t, os.RemoveAll(filepath.Join(root, "gone")))
			must(t, os.Rename(filepath.Join(root, "ren"), filepath.Join(root, "ren2")))
			write(t, filepath.Join(root, "mod/m.bin"), rnd(100000))
			write(t, filepath.Join(root, "new/deep/n.bin"), rnd(10000))
			must(t, os.Chmod(filepath.Join(root, "keep/b.bin"), 0o640))
		}, kept: []string{"keep/a.bin", "big/large.bin", "ren2/r.bin"}, fewer: true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tree := copyTree(t, old)
			tc.change(t, tree)
			want := expected(t, tree)
			out := filepath.Join(dir, "new"+string(rune('a'+i))+".dwarfs")
			// No compaction: the kept files must stay where they were.
			args := append([]string{"-i", oldImg, "--update", tree, "-o", out, "-l", "3", "--max-dead=100", "--log-level", "verbose"}, tc.args...)
			log := mk(t, args...)
			if !strings.Contains(log, "update:") {
				t.Errorf("no update counts in the log:\n%s", log)
			}
			if tc.name == "unchanged" {
				// Every file is found by path, size and mtime, so none is read.
				files := map[string]bool{}
				for _, n := range want {
					if n.mode&syscall.S_IFMT == syscall.S_IFREG {
						files[n.inoKey] = true
					}
				}
				if w := fmt.Sprintf(" %d files have the path, size and mtime of a base file", len(files)); !strings.Contains(log, w) {
					t.Errorf("log lacks %q:\n%s", w, log)
				}
			}
			got, _ := readBack(t, out)
			compareTrees(t, want, got, cmpOpts{})
			f, raw := imageParts(t, out)
			for _, rel := range tc.kept {
				oldRel := rel
				switch rel {
				case "huge/large.bin":
					oldRel = "big/large.bin"
				case "keep/r-moved.bin", "ren2/r.bin":
					oldRel = "ren/r.bin"
				}
				if a, b := fileBlocks(t, oldFS, oldRaw, oldRel), fileBlocks(t, f, raw, rel); !equalStrings(a, b) {
					t.Errorf("%s: not stored in the old image's blocks", rel)
				}
			}
			if u := unreferenced(t, out); len(u) > 0 {
				t.Errorf("blocks %v: nothing refers to them", u)
			}
			if tc.fewer {
				oldBlocks := map[string]bool{}
				for _, b := range oldRaw {
					oldBlocks[string(b)] = true
				}
				kept := 0
				for _, b := range raw {
					if oldBlocks[string(b)] {
						kept++
					}
				}
				if kept >= len(oldRaw) {
					t.Errorf("all %d old blocks kept: none dropped", kept)
				}
			}
		})
	}
	if fileHash(t, oldImg) != oldSum {
		t.Error("the old image changed")
	}
	noTemps(t, dir)
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestUpdateChangingTree changes a file the update does not read (same
// path, size and mtime as in the image) while it segments: the update
// fails naming it, and leaves no output.
func TestUpdateChangingTree(t *testing.T) {
	old := updateTree(t)
	dir := t.TempDir()
	oldImg := filepath.Join(dir, "old.dwarfs")
	mk(t, "-i", old, "-o", oldImg, "-l", "1", "-S", "16", "--log-level", "warn")
	tree := copyTree(t, old)
	write(t, filepath.Join(tree, "new.bin"), bytes.Repeat([]byte("new data "), 1000))
	victim := filepath.Join(tree, "keep/a.bin")
	out := filepath.Join(dir, "new.dwarfs")
	_, err := writer.Update(context.Background(), writer.UpdateOptions{
		Target: writer.Target{Output: out, BlockCompression: "zstd:level=1"}, Image: oldImg, Input: tree, MaxDead: -1,
		Configure: func(o *dedup.Options) {
			o.Phase = func(name string) {
				if name == "segmenting" {
					must(t, lutimes(victim, time.Unix(1800000000, 0)))
				}
			}
		},
	})
	if !errors.Is(err, dedup.ErrChanged) || !strings.Contains(err.Error(), victim) {
		t.Fatalf("got %v, want an error naming %s as changed", err, victim)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output exists after a failed update: %v", err)
	}
	noTemps(t, dir)
}

func TestUpdateUsage(t *testing.T) {
	old := updateTree(t)
	dir := t.TempDir()
	oldImg := filepath.Join(dir, "old.dwarfs")
	mk(t, "-i", old, "-o", oldImg, "-l", "1", "-S", "16", "--log-level", "warn")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-i", oldImg, "--update", old, "--append", old, "-o", filepath.Join(dir, "x.dwarfs")}, "--append"},
		{[]string{"-i", old, "--update", old, "-o", filepath.Join(dir, "x.dwarfs")}, "needs an image"},
		{[]string{"-i", oldImg, "--compact", "-o", filepath.Join(dir, "x.dwarfs")}, "--compact needs --update"},
		{[]string{"-i", oldImg, "--update", old, "--update-check=mtime", "-o", filepath.Join(dir, "x.dwarfs")}, "--update-check"},
		{[]string{"-i", oldImg, "--update", old, "--max-dead=200", "-o", filepath.Join(dir, "x.dwarfs")}, "--max-dead"},
		{[]string{"-i", oldImg, "--update", old, "-o", oldImg, "-f"}, "same as the input"},
	} {
		code, _, stderr := run(tc.args...)
		if code != cli.ExitError || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error with %q", tc.args, code, stderr, tc.want)
		}
	}
	noTemps(t, dir)
}

// deadOf returns the dead block bytes dwarfsck reports for img.
func deadOf(t testing.TB, img string) int64 {
	t.Helper()
	im, err := godwarfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	info, err := dwarfsck.Gather(im)
	if err != nil {
		t.Fatal(err)
	}
	return info.DeadBytes
}

// TestUpdateCompact deletes files whose data shares blocks with kept
// files: without compaction the kept blocks hold dead bytes, which
// dwarfsck reports; --compact (or passing --max-dead) rewrites those
// blocks, leaving no dead bytes and an image about the size of a fresh
// build.
func TestUpdateCompact(t *testing.T) {
	old := updateTree(t)
	dir := t.TempDir()
	oldImg := filepath.Join(dir, "old.dwarfs")
	common := []string{"-l", "3", "-S", "16", "--log-level", "warn"}
	mk(t, append([]string{"-i", old, "-o", oldImg}, common...)...)
	tree := copyTree(t, old)
	for _, p := range []string{"gone", "mod", "ren"} {
		must(t, os.RemoveAll(filepath.Join(tree, p)))
	}
	want := expected(t, tree)
	fresh := filepath.Join(dir, "fresh.dwarfs")
	mk(t, append([]string{"-i", tree, "-o", fresh}, common...)...)
	freshSize := fileSize(t, fresh)
	for _, tc := range []struct {
		name  string
		args  []string
		dead  bool
		ratio float64 // largest size as a multiple of the fresh build's
	}{
		{"no compaction", []string{"--max-dead=100"}, true, 0},
		{"max-dead passed", []string{"--max-dead=5"}, false, 1.05},
		{"compact", []string{"--compact"}, false, 1.05},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".dwarfs")
			mk(t, append(append([]string{"-i", oldImg, "--update", tree, "-o", out}, common...), tc.args...)...)
			got, _ := readBack(t, out)
			compareTrees(t, want, got, cmpOpts{})
			dead := deadOf(t, out)
			if tc.dead != (dead > 0) {
				t.Errorf("%d dead bytes; want dead bytes: %v", dead, tc.dead)
			}
			if size := fileSize(t, out); tc.ratio > 0 && float64(size) > tc.ratio*float64(freshSize) {
				t.Errorf("%d bytes, a fresh build %d: more than %.2fx", size, freshSize, tc.ratio)
			}
		})
	}
	if d := deadOf(t, fresh); d != 0 {
		t.Errorf("fresh build: %d dead bytes", d)
	}
}

func fileSize(t testing.TB, p string) int64 {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

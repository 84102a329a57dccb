//go:build unix

package mkdwarfs

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/dwarfsck"
	"github.com/godwarfs/godwarfs/shard"
)

// runck runs dwarfsck on an image.
func runck(img string) (int, string, string) {
	var out, errb bytes.Buffer
	code := dwarfsck.Main(context.Background(), []string{"dwarfsck", "-i", img}, cli.Stdio{Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// shardTree makes a tree with every kind of entry a shard plan must place:
// loose files and an empty directory at the top, symlinks, hard links
// within one directory, directories with their own modes, and one
// directory ("big") with most of the bytes, which plans of two or more
// shards split. reverse creates the entries in the opposite order, so
// that the directories list them in another order.
func shardTree(t *testing.T, reverse bool) string {
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
	type item struct {
		rel    string
		data   []byte
		mode   os.FileMode
		link   string // symlink target
		hard   string // hard link to this path
		dir    bool
		lmtime bool
	}
	var items []item
	file := func(rel string, data []byte, mode os.FileMode) {
		items = append(items, item{rel: rel, data: data, mode: mode})
	}
	base := rnd(30000)
	for v := range 6 {
		for j := range 3 {
			d := slices.Clone(base)
			d[(v*3+j)*101%len(d)] ^= 0xff
			file(fmt.Sprintf("big/v%d/f%d.bin", v, j), append(d, rnd(2000+v*500)...), 0o644)
		}
	}
	file("big/v3/deep/x/y/file", rnd(700), 0o600)
	file("big/README", []byte("versions\n"), 0o644)
	items = append(items, item{rel: "big/empty", dir: true, mode: 0o755})
	file("lib/one.js", rnd(900), 0o644)
	file("lib/sub/two.js", rnd(1200), 0o644)
	file("lib/hl-a", rnd(400), 0o644)
	items = append(items, item{rel: "lib/sub/hl-b", hard: "lib/hl-a"})
	items = append(items, item{rel: "empty", dir: true, mode: 0o700})
	file("top.txt", []byte("top\n"), 0o644)
	file("top-exec", []byte("#!/bin/sh\n"), 0o755)
	file("empty-file", nil, 0o600)
	items = append(items,
		item{rel: "links/rel", link: "../top.txt"},
		item{rel: "links/abs", link: "/etc/passwd"},
		item{rel: "links/dangling", link: "does/not/exist"},
		item{rel: "links/dir", link: "../lib"})
	if reverse {
		slices.Reverse(items)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, it := range items {
		p := filepath.Join(root, it.rel)
		must(os.MkdirAll(filepath.Dir(p), 0o755))
		switch {
		case it.dir:
			must(os.MkdirAll(p, it.mode))
			must(os.Chmod(p, it.mode))
		case it.link != "":
			must(os.Symlink(it.link, p))
		case it.hard != "":
			h := filepath.Join(root, it.hard)
			if _, err := os.Stat(h); os.IsNotExist(err) {
				must(os.WriteFile(h, rnd(400), 0o644))
			}
			must(os.Link(h, p))
		default:
			if _, err := os.Lstat(p); err == nil {
				continue // made as the target of a hard link
			}
			must(os.WriteFile(p, it.data, it.mode))
			must(os.Chmod(p, it.mode))
		}
	}
	must(os.Chmod(filepath.Join(root, "lib"), 0o751))
	must(os.Chmod(filepath.Join(root, "big/v2"), 0o700))
	// Distinct mtimes, directories after their entries.
	var paths []string
	must(filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		paths = append(paths, p)
		return err
	}))
	sort.Sort(sort.Reverse(sort.StringSlice(paths)))
	for i, p := range paths {
		must(lutimes(p, time.Unix(1690000000+int64(i)*4099, 0)))
	}
	return root
}

// shardPlan runs mkdwarfs --shard-plan.
func shardPlan(t *testing.T, args ...string) shard.Plan {
	t.Helper()
	code, out, errs := run(append([]string{"--shard-plan"}, args...)...)
	if code != 0 {
		t.Fatalf("--shard-plan %q: exit %d: %s", args, code, errs)
	}
	var p shard.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("--shard-plan %q: %v\n%s", args, err, out)
	}
	return p
}

// buildShards builds the n shards of src into dir and returns their
// paths, in shard order.
func buildShards(t *testing.T, src, dir string, n int, extra ...string) []string {
	t.Helper()
	var imgs []string
	for k := range n {
		img := filepath.Join(dir, fmt.Sprintf("shard-%d-of-%d.dwarfs", k, n))
		mk(t, append([]string{"-i", src, "-o", img, "--shard", fmt.Sprintf("%d/%d", k, n), "-l", "3", "--log-level", "warn"}, extra...)...)
		imgs = append(imgs, img)
	}
	return imgs
}

func TestShardsMergeIntoTheTree(t *testing.T) {
	src := shardTree(t, false)
	want := expected(t, src)
	for _, tc := range []struct {
		n     int
		extra []string
	}{
		{1, nil}, {2, nil}, {3, nil}, {4, nil}, {5, nil},
		{3, []string{"--shard-depth=2"}},
	} {
		t.Run(fmt.Sprintf("%d%s", tc.n, strings.Join(tc.extra, "")), func(t *testing.T) {
			dir := t.TempDir()
			plan := shardPlan(t, append([]string{"-i", src, "--shard", fmt.Sprint(tc.n)}, tc.extra...)...)
			if len(plan.Shards) != tc.n {
				t.Fatalf("plan of %d shards: %+v", tc.n, plan)
			}
			split := false
			for _, s := range plan.Shards {
				for _, p := range s.Paths {
					split = split || strings.HasPrefix(p, "big/")
				}
			}
			if split != (tc.n > 1) {
				t.Errorf("big split: %v, want %v (plan %+v)", split, tc.n > 1, plan.Shards)
			}
			// lib's hard links are in one shard unless lib is cut (depth 2).
			if crossed := planOwner(plan, "lib/hl-a") != planOwner(plan, "lib/sub/hl-b"); crossed != (tc.extra != nil) {
				t.Errorf("hard links in two shards: %v, want %v", crossed, tc.extra != nil)
			}
			imgs := buildShards(t, src, dir, tc.n, tc.extra...)
			// Every entry but the directories is in exactly one shard.
			seen := map[string]int{}
			for k, img := range imgs {
				got, _ := readBack(t, img)
				for p, nd := range got {
					if nd.mode&syscall.S_IFMT != syscall.S_IFDIR {
						seen[p]++
						if o := planOwner(plan, p); o != k {
							t.Errorf("shard %d has %s, which the plan gives to %d", k, p, o)
						}
					}
				}
			}
			for p, nd := range want {
				if nd.mode&syscall.S_IFMT != syscall.S_IFDIR && seen[p] != 1 {
					t.Errorf("%s is in %d shards", p, seen[p])
				}
			}
			// Given in any order, the shards merge into the tree.
			rev := slices.Clone(imgs)
			slices.Reverse(rev)
			out := filepath.Join(dir, "merged.dwarfs")
			mk(t, append([]string{"--merge", "--merge-into-root", "-o", out, "--log-level", "warn"}, rev...)...)
			got, _ := readBack(t, out)
			compareTrees(t, crossShardLinks(want, plan), got, cmpOpts{})
			if code, stdout, errs := runck(out); code != 0 || strings.Contains(stdout, "shard:") {
				t.Errorf("dwarfsck of the merged image: exit %d, %s%s", code, stdout, errs)
			}
			if code, stdout, errs := runck(imgs[tc.n-1]); code != 0 || !strings.Contains(stdout, fmt.Sprintf("shard: %d/%d plan %s\n", tc.n-1, tc.n, plan.Digest)) {
				t.Errorf("dwarfsck of the last shard: exit %d, %s%s", code, stdout, errs)
			}
		})
	}
}

// crossShardLinks is the tree want as a merge of the plan's shards has
// it: hard links of one file in several shards are a file in each shard,
// linked to those in its shard only (with the same contents).
func crossShardLinks(want map[string]node, plan shard.Plan) map[string]node {
	out := map[string]node{}
	links := map[string]uint32{} // source inode and shard: entries
	for p, n := range want {
		if n.mode&syscall.S_IFMT == syscall.S_IFREG && n.nlink > 1 {
			n.inoKey = fmt.Sprintf("%s@%d", n.inoKey, planOwner(plan, p))
			links[n.inoKey]++
		}
		out[p] = n
	}
	for p, n := range out {
		if c, ok := links[n.inoKey]; ok {
			n.nlink = c
			out[p] = n
		}
	}
	return out
}

// planOwner is the shard whose units hold p.
func planOwner(p shard.Plan, path string) int {
	for _, s := range p.Shards {
		for _, u := range s.Paths {
			if path == u || strings.HasPrefix(path, u+"/") {
				return s.Index
			}
		}
	}
	return -1
}

// TestShardPlanIndependentOfReaddir plans two copies of a tree whose
// directories list their entries in different orders.
func TestShardPlanIndependentOfReaddir(t *testing.T) {
	a, b := shardTree(t, false), shardTree(t, true)
	for _, n := range []string{"2", "3"} {
		pa, pb := shardPlan(t, "-i", a, "--shard", n), shardPlan(t, "-i", b, "--shard", "0/"+n)
		if pa.Digest != pb.Digest || !slices.EqualFunc(pa.Shards, pb.Shards, func(x, y shard.Shard) bool {
			return x.Index == y.Index && x.Bytes == y.Bytes && slices.Equal(x.Paths, y.Paths)
		}) {
			t.Errorf("%s shards: plans differ:\n%+v\n%+v", n, pa, pb)
		}
	}
	// A change to the tree changes the digest.
	if err := os.WriteFile(filepath.Join(b, "lib/one.js"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if pa, pb := shardPlan(t, "-i", a, "--shard", "2"), shardPlan(t, "-i", b, "--shard", "2"); pa.Digest == pb.Digest {
		t.Errorf("a changed file kept the digest %s", pa.Digest)
	}
}

func TestShardMergeRefusals(t *testing.T) {
	src := shardTree(t, false)
	dir := t.TempDir()
	imgs := buildShards(t, src, dir, 3)
	// The same tree with one file more: another plan.
	other := shardTree(t, false)
	if err := os.WriteFile(filepath.Join(other, "extra"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	foreignDir := t.TempDir()
	foreign := buildShards(t, other, foreignDir, 3)
	plain := filepath.Join(dir, "plain.dwarfs")
	mk(t, "-i", src, "-o", plain, "-l", "1", "--log-level", "warn")
	out := filepath.Join(dir, "out.dwarfs")
	for _, tc := range []struct {
		name   string
		inputs []string
		extra  []string
		want   []string
	}{
		{"missing", imgs[:2], nil, []string{"shard 2/3 is missing"}},
		{"duplicate", []string{imgs[0], imgs[1], imgs[1], imgs[2]}, nil,
			[]string{"shard 1/3 is given 2 times: " + imgs[1] + ", " + imgs[1]}},
		{"foreign", []string{imgs[0], foreign[1], imgs[2], imgs[1]}, nil,
			[]string{foreign[1] + " is shard 1/3 of another plan"}},
		{"foreign and so missing", []string{imgs[0], imgs[1], foreign[2]}, nil,
			[]string{foreign[2] + " is shard 2/3 of another plan", "shard 2/3 is missing"}},
		{"not a shard", []string{imgs[0], imgs[1], imgs[2], plain}, nil, []string{plain + " is not a shard"}},
		{"without a history entry", imgs, []string{"--no-history"}, []string{"needs its own history entry"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--merge", "--merge-into-root", "-o", out}, tc.extra...)
			code, _, errs := run(append(args, tc.inputs...)...)
			if code != 1 {
				t.Errorf("exit %d, want 1: %s", code, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Errorf("error %q, want it to say %q", errs, w)
				}
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s was written", out)
			}
			noTemps(t, dir)
		})
	}
	// A merged image is not a shard: merging it again with a shard is refused.
	merged := filepath.Join(dir, "merged.dwarfs")
	mk(t, append([]string{"--merge", "--merge-into-root", "-o", merged, "--log-level", "warn"}, imgs...)...)
	if code, _, errs := run("--merge", "-o", out, merged, imgs[0]); code != 1 || !strings.Contains(errs, merged+" is not a shard") {
		t.Errorf("merged image and a shard: exit %d: %s", code, errs)
	}
}

func TestShardUsage(t *testing.T) {
	src := shardTree(t, false)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.dwarfs")
	plan := shardPlan(t, "-i", src, "--shard", "2")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-i", src, "-o", out, "--shard", "2/2"}, "invalid value '2/2' for option '--shard'"},
		{[]string{"-i", src, "-o", out, "--shard", "2"}, "invalid value '2' for option '--shard'"},
		{[]string{"-i", src, "-o", out, "--shard-plan"}, "--shard-plan needs --shard"},
		{[]string{"-i", src, "-o", out, "--shard-depth=2"}, "--shard-depth needs --shard"},
		{[]string{"-i", src, "-o", out, "--shard=0/2", "--shard-depth=0"}, "--shard-depth"},
		{[]string{"-i", src, "-o", out, "--shard=0/2", "--no-history"}, "'--shard' and '--no-history' cannot be used together"},
		{[]string{"-i", src, "-o", out, "--shard=0/2", "--shard-digest=abc"}, "invalid value 'abc' for option '--shard-digest'"},
		{[]string{"--merge", "-o", out, "--shard=0/2", out}, "'--shard' and '--merge' cannot be used together"},
		// A tree that changed since it was planned.
		{[]string{"-i", src, "-o", out, "--shard=0/3", "--shard-digest=" + plan.Digest}, "the tree is not the one planned"},
		{[]string{"-i", src, "--shard=3", "--shard-plan", "--shard-digest=" + plan.Digest}, "the tree is not the one planned"},
	} {
		code, _, errs := run(tc.args...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%q: exit %d, %q; want %q", tc.args, code, errs, tc.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%q: %s was written", tc.args, out)
		}
	}
	noTemps(t, dir)
	// The digest a plan printed is the one the shard builds come to; with
	// no command line recorded, the history still records the shard.
	mk(t, "-i", src, "-o", out, "--shard=1/2", "--shard-digest="+plan.Digest, "--no-history-command-line", "--log-level", "warn")
	if code, stdout, errs := runck(out); code != 0 || !strings.Contains(stdout, "shard: 1/2 plan "+plan.Digest+"\n") ||
		!strings.Contains(stdout, "args: mkdwarfs --shard=1/2 --shard-digest="+plan.Digest+"\n") {
		t.Errorf("dwarfsck: exit %d, %s%s", code, stdout, errs)
	}
}

// TestShardTarInput plans a tar archive of the tree: another lister feeds
// the same planner, and the archive plans as the directory does (its hard
// links are separate files of the same size).
func TestShardTarInput(t *testing.T) {
	src := shardTree(t, false)
	archive := filepath.Join(t.TempDir(), "tree.tar")
	f, err := os.Create(archive)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	if err := tw.AddFS(os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	dirPlan, tarPlan := shardPlan(t, "-i", src, "--shard", "3"), shardPlan(t, "-i", archive, "--shard", "3")
	if dirPlan.Digest != tarPlan.Digest {
		t.Errorf("the archive plans to %s, the directory to %s", tarPlan.Digest, dirPlan.Digest)
	}
	dir := t.TempDir()
	imgs := buildShards(t, archive, dir, 3)
	out := filepath.Join(dir, "merged.dwarfs")
	mk(t, append([]string{"--merge", "--merge-into-root", "-o", out, "--log-level", "warn"}, imgs...)...)
	got, _ := readBack(t, out)
	for p, n := range expected(t, src) {
		g, ok := got[p]
		if !ok {
			t.Errorf("%s is missing", p)
			continue
		}
		if g.mode&syscall.S_IFMT != n.mode&syscall.S_IFMT || g.content != n.content || g.target != n.target {
			t.Errorf("%s: %v, want %v", p, g, n)
		}
	}
	if len(got) != len(expected(t, src)) {
		t.Errorf("%d entries, want %d", len(got), len(expected(t, src)))
	}
}

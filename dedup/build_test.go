package dedup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/internal/fixtures"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func testOpts(root string) Options {
	o := DefaultOptions()
	o.Input = root
	o.BlockSizeBits = 16
	o.NoCreateTime = true
	return o
}

// names returns the sorted paths of the built metadata.
func paths(t *testing.T, o Options) []string {
	t.Helper()
	var col collect
	md, _, err := Build(context.Background(), o, col.sink)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var names []string
	if md.CompactNames != nil {
		st := md.CompactNames
		for i := 0; i+1 < len(st.Index); i++ {
			names = append(names, string(st.Buffer[st.Index[i]:st.Index[i+1]]))
		}
	} else {
		names = md.Names
	}
	var walk func(dir uint32, prefix string)
	walk = func(dir uint32, prefix string) {
		for e := md.Directories[dir].FirstEntry; e < md.Directories[dir+1].FirstEntry; e++ {
			de := md.DirEntries[e]
			p := prefix + names[de.NameIndex]
			out = append(out, p)
			if int(de.InodeNum) < len(md.Directories)-1 {
				walk(de.InodeNum, p+"/")
			}
		}
	}
	walk(0, "")
	return out
}

func TestFilterRules(t *testing.T) {
	tree := map[string]string{
		"a.o": "", "a.c": "", "src/b.o": "", "src/b.c": "", "src/sub/c.c": "", "keep/x.o": "", "doc/": "",
	}
	root := writeTree(t, tree)
	for _, tc := range []struct {
		rules []string
		rm    bool
		want  string
	}{
		{nil, false, "a.c a.o doc keep keep/x.o src src/b.c src/b.o src/sub src/sub/c.c"},
		{[]string{"- *.o"}, false, "a.c doc keep src src/b.c src/sub src/sub/c.c"},
		{[]string{"+ keep/**", "- *.o"}, false, "a.c doc keep keep/x.o src src/b.c src/sub src/sub/c.c"},
		{[]string{"- /src/sub/"}, false, "a.c a.o doc keep keep/x.o src src/b.c src/b.o"},
		{[]string{"+ src/**", "- *"}, false, "doc keep src src/b.c src/b.o src/sub src/sub/c.c"},
		{[]string{"+ src/**", "- *", "- */"}, false, "src src/b.c src/b.o src/sub src/sub/c.c"},
		{[]string{"- *.o"}, true, "a.c src src/b.c src/sub src/sub/c.c"},
		{[]string{"- sub/*.c"}, true, "a.c a.o keep keep/x.o src src/b.c src/b.o"},
	} {
		t.Run(strings.Join(tc.rules, ","), func(t *testing.T) {
			o := testOpts(root)
			o.RemoveEmpty = tc.rm
			for _, r := range tc.rules {
				fr, err := ParseFilterRule(r)
				if err != nil {
					t.Fatal(err)
				}
				o.Filters = append(o.Filters, fr)
			}
			if got := strings.Join(paths(t, o), " "); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	if _, err := ParseFilterRule("x foo"); err == nil {
		t.Error("bad rule accepted")
	}
}

func TestInputList(t *testing.T) {
	root := writeTree(t, map[string]string{"a/b/c": "1", "a/d": "2", "e": "3", "f/": ""})
	o := testOpts(root)
	o.InputList = []string{"a/b/c", "./e", "f"}
	if got, want := strings.Join(paths(t, o), " "), "a a/b a/b/c e f"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	o.InputList = []string{"../x"}
	if _, _, err := Build(context.Background(), o, (&collect{}).sink); err == nil {
		t.Error("path outside the input accepted")
	}
}

func TestBuildErrors(t *testing.T) {
	root := writeTree(t, map[string]string{"ok": "fine", "bad/unreadable": "secret", "dir/x": "x"})
	badPath := filepath.Join(root, "bad/unreadable")
	denied := func(name string) (*os.File, error) {
		if name == badPath {
			return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EACCES}
		}
		return os.Open(name)
	}
	t.Run("unreadable", func(t *testing.T) {
		o := testOpts(root)
		o.OpenFile = denied
		_, _, err := Build(context.Background(), o, (&collect{}).sink)
		if err == nil || !strings.Contains(err.Error(), badPath) || !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("want permission error naming %s, got %v", badPath, err)
		}
	})
	t.Run("continue", func(t *testing.T) {
		o := testOpts(root)
		o.OpenFile = denied
		o.ContinueOnErr = true
		var log strings.Builder
		o.Log = &log
		if got := strings.Join(paths(t, o), " "); got != "bad dir dir/x ok" {
			t.Errorf("got %q", got)
		}
		if !strings.Contains(log.String(), badPath) {
			t.Errorf("no warning naming the file: %q", log.String())
		}
	})
	t.Run("vanished-dir", func(t *testing.T) {
		o := testOpts(root)
		dir := filepath.Join(root, "dir")
		o.OpenFile = func(name string) (*os.File, error) {
			if name == dir {
				return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOENT}
			}
			return os.Open(name)
		}
		_, _, err := Build(context.Background(), o, (&collect{}).sink)
		if err == nil || !strings.Contains(err.Error(), dir) {
			t.Fatalf("want error naming %s, got %v", dir, err)
		}
	})
	t.Run("size-changed", func(t *testing.T) {
		r2 := writeTree(t, map[string]string{"grow": "0123456789"})
		p := filepath.Join(r2, "grow")
		o := testOpts(r2)
		o.FileHash = nil
		o.Order = OrderPath // no similarity read: the change happens before segmenting
		o.OpenFile = func(name string) (*os.File, error) {
			if name == p {
				os.WriteFile(p, []byte("0123"), 0o644)
			}
			return os.Open(name)
		}
		_, _, err := Build(context.Background(), o, (&collect{}).sink)
		if err == nil || !errors.Is(err, errSizeChanged) || !strings.Contains(err.Error(), p) {
			t.Fatalf("want size change error naming %s, got %v", p, err)
		}
	})
	t.Run("sink-error", func(t *testing.T) {
		o := testOpts(root)
		boom := errors.New("disk full")
		_, _, err := Build(context.Background(), o, func(context.Context, []byte) error { return boom })
		if !errors.Is(err, boom) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, _, err := Build(ctx, testOpts(root), (&collect{}).sink); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("not-a-dir", func(t *testing.T) {
		o := testOpts(badPath)
		if _, _, err := Build(context.Background(), o, (&collect{}).sink); err == nil {
			t.Fatal("file as input accepted")
		}
	})
}

func TestBuildDeterministic(t *testing.T) {
	files := map[string]string{}
	for i := range 40 {
		files[fmt.Sprintf("d%d/f%d", i%5, i)] = strings.Repeat(fmt.Sprintf("content %d ", i%13), 500+i%13*37)
	}
	root := writeTree(t, files)
	var ref []any
	for _, workers := range []int{1, 4, 1} {
		o := testOpts(root)
		o.ScannerWorkers = workers
		var col collect
		md, st, err := Build(context.Background(), o, col.sink)
		if err != nil {
			t.Fatal(err)
		}
		got := []any{md, col.blocks}
		if ref == nil {
			ref = got
			if st.DupFiles == 0 {
				t.Errorf("expected duplicate files: %+v", st)
			}
			continue
		}
		if !reflect.DeepEqual(ref, got) {
			t.Fatalf("build with %d workers differs", workers)
		}
	}
}

func TestSimilarityOrder(t *testing.T) {
	// Two families of near-identical files, interleaved by name: the
	// nilsimsa order must keep each family together.
	a, b := randBytes(11, 20000), randBytes(12, 20000)
	files := map[string]string{}
	for i := range 4 {
		va := append([]byte(nil), a...)
		vb := append([]byte(nil), b...)
		va[i*100] ^= 1
		vb[i*100] ^= 1
		files[fmt.Sprintf("%d-a", i)] = string(va)
		files[fmt.Sprintf("%d-b", i)] = string(vb)
	}
	root := writeTree(t, files)
	o := testOpts(root)
	_, fl := scanTree(t, &o, root)
	o.Order = OrderNilsimsa
	order, _ := orderContents(groupContents(fl, true), &o, nil)
	changes := 0
	for i := 1; i < len(order); i++ {
		if order[i].rep.firstEntry.name[2] != order[i-1].rep.firstEntry.name[2] {
			changes++
		}
	}
	if changes != 1 {
		var names []string
		for _, c := range order {
			names = append(names, c.rep.firstEntry.name)
		}
		t.Errorf("families not grouped: %v", names)
	}
}

func TestTimes(t *testing.T) {
	fixtures.SkipUnlessStatNanoseconds(t)
	root := writeTree(t, map[string]string{"f": "x", "g": "y"})
	ts := time.Unix(1700000123, 456789012)
	os.Chtimes(filepath.Join(root, "f"), ts, ts)
	for _, tc := range []struct {
		res     int64
		wantSub uint64
	}{{1e9, 0}, {1e6, 456}, {1, 456789012}} {
		o := testOpts(root)
		o.TimeResolution = time.Duration(tc.res)
		var col collect
		md, _, err := Build(context.Background(), o, col.sink)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, in := range md.Inodes {
			if md.TimestampBase+in.MtimeOffset == 1700000123 {
				found = true
				if in.MtimeSubsec != tc.wantSub {
					t.Errorf("res %d: subsec %d, want %d", tc.res, in.MtimeSubsec, tc.wantSub)
				}
			}
		}
		if !found {
			t.Errorf("res %d: mtime not found", tc.res)
		}
	}
}

// TestBeforeSegmentingHook: the hook runs once, before the first block.
func TestBeforeSegmentingHook(t *testing.T) {
	files := map[string]string{}
	for i := range 30 {
		files[fmt.Sprintf("d%d/f%d", i%3, i)] = strings.Repeat(fmt.Sprintf("data %d ", i), 4000)
	}
	o := testOpts(writeTree(t, files))
	calls, blocksAtHook := 0, -1
	var col collect
	o.BeforeSegmenting = func() {
		calls++
		blocksAtHook = len(col.blocks)
	}
	if _, _, err := Build(context.Background(), o, col.sink); err != nil {
		t.Fatal(err)
	}
	if calls != 1 || blocksAtHook != 0 || len(col.blocks) == 0 {
		t.Fatalf("hook ran %d times with %d blocks made (of %d)", calls, blocksAtHook, len(col.blocks))
	}
}

// TestDigestsOncePerContent: the nilsimsa digest of every file equals the
// digest of its data whether the file is unique by size, unique by hash
// among equal sizes, or one of several copies (whose digest is computed
// once and shared); files above --max-similarity-size and empty files get
// none; and the copies' data is read once more, not once per copy.
func TestDigestsOncePerContent(t *testing.T) {
	shared, other := randBytes(21, 30000), randBytes(22, 30000)
	files := map[string]string{
		"unique-size": string(randBytes(23, 12345)),
		"copy1":       string(shared), "copy2": string(shared), "copy3": string(shared),
		"same-size": string(other),
		"big":       string(randBytes(24, 70000)),
		"empty":     "",
	}
	root := writeTree(t, files)
	o := testOpts(root)
	o.Order = OrderNilsimsa
	o.MaxSimilaritySize = 65536
	bd, fl := scanTree(t, &o, root)
	if len(fl) != len(files) {
		t.Fatalf("%d files scanned, want %d", len(fl), len(files))
	}
	var total int64
	for _, f := range fl {
		data := files[f.firstEntry.rel()]
		total += int64(len(data))
		wantDigest := len(data) > 0 && len(data) <= 65536
		if f.hasDigest != wantDigest {
			t.Errorf("%s: has digest %v, want %v", f.firstEntry.rel(), f.hasDigest, wantDigest)
			continue
		}
		if !wantDigest {
			continue
		}
		var sa simAcc
		sa.Write([]byte(data))
		d, sim := sa.digest()
		if f.simDigest != d || f.simHash != sim {
			t.Errorf("%s: digest differs from its data's", f.firstEntry.rel())
		}
	}
	// Files of a shared size are read once for hashing, and of the three
	// copies and the file of their size only one copy and that file are
	// read again for digests; the small unique-size file is read once for
	// its digest, and the big one is left to the segmenter.
	if want := total - 70000 + 2*30000; bd.stats.ScannedBytes != want {
		t.Errorf("read %d bytes, want %d", bd.stats.ScannedBytes, want)
	}
}

// scanTree walks root and scans its files as a build does, up to the
// point where contents are grouped.
func scanTree(t *testing.T, o *Options, root string) (*builder, []*inode) {
	t.Helper()
	bd := &builder{opt: o, sc: &scanner{opt: o, root: root, links: map[devIno]*inode{}, warn: func(string, ...any) {}}}
	bd.opt.OpenFile = os.Open
	bd.sc.stats = &bd.stats
	bd.bufs.New = func() any { b := make([]byte, 1<<20); return &b }
	tree, err := bd.sc.walk(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fl, err := bd.scanFiles(context.Background(), bd.collect(tree))
	if err != nil {
		t.Fatal(err)
	}
	return bd, fl
}

// TestFamilyCopiesShardBlocks: a tree of two unrelated projects, one of
// which ships a copy of a file of the other, makes the blocks the two
// projects make when built alone, one after the other: each project
// stores the file, as its own build would.
func TestFamilyCopiesShardBlocks(t *testing.T) {
	text := func(seed, n int) []byte {
		var b []byte
		for i := 0; len(b) < n; i++ {
			b = fmt.Appendf(b, "%d line %d of file %d\n", i*seed%977, i, seed)
		}
		return b[:n]
	}
	version := func(b []byte, at int) string {
		v := append([]byte(nil), b...)
		copy(v[at:], "changed")
		return string(v)
	}
	x, y, lib := text(1, 60000), text(2, 60000), text(3, 20000)
	a := map[string]string{"a/1/x.js": string(x), "a/2/x.js": version(x, 30000), "a/2/lib.js": string(lib)}
	b := map[string]string{"b/1/y.js": string(y), "b/2/y.js": version(y, 20000), "b/1/vendor/dep.js": string(lib), "b/2/vendor/dep.js": version(lib, 15000)}
	build := func(files ...map[string]string) [][]byte {
		all := map[string]string{}
		for _, f := range files {
			maps.Copy(all, f)
		}
		o := testOpts(writeTree(t, all))
		o.Order = OrderNilsimsa
		// With a lookback beyond the block being filled, b's first block
		// could also match a's last one, which no shard can.
		o.Lookback = 1
		var col collect
		if _, _, err := Build(context.Background(), o, col.sink); err != nil {
			t.Fatal(err)
		}
		return col.blocks
	}
	whole := build(a, b)
	shards := append(build(a), build(b)...)
	if !slices.EqualFunc(whole, shards, bytes.Equal) {
		t.Errorf("the tree's %d blocks differ from its projects' %d", len(whole), len(shards))
	}
	// (From 5000 on, b/2/vendor/dep.js matches the copy.)
	if n := bytes.Count(slices.Concat(whole...), lib[5000:6000]); n != 2 {
		t.Errorf("the shared file is stored %d times, want 2", n)
	}
}

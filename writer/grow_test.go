//go:build unix

package writer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/metadata"
)

// growFiles is a small tree: path -> contents ("->target" for a symlink,
// "=path" for a hard link to an earlier path).
type growFiles map[string]string

// write creates the files below dir (prefix, if not "", is a directory
// within it) with fixed times and modes, so that two trees written from
// the same files describe alike.
func (g growFiles) write(t *testing.T, dir, prefix string) {
	t.Helper()
	keys := make([]string, 0, len(g))
	for k := range g {
		keys = append(keys, k)
	}
	// Hard links after their targets.
	for _, hard := range []bool{false, true} {
		for _, k := range keys {
			v := g[k]
			if strings.HasPrefix(v, "=") != hard {
				continue
			}
			p := filepath.Join(dir, prefix, k)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			var err error
			switch {
			case strings.HasPrefix(v, "->"):
				err = os.Symlink(v[2:], p)
			case hard:
				err = os.Link(filepath.Join(dir, prefix, v[1:]), p)
			default:
				err = os.WriteFile(p, []byte(v), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	settle(t, dir)
}

// settle gives every file and directory below dir the same mode bits and
// times.
func settle(t *testing.T, dir string) {
	t.Helper()
	at := time.Unix(1700000000, 0)
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			dirs = append(dirs, p)
			return os.Chmod(p, 0o755)
		default:
			ts := unix.NsecToTimespec(at.UnixNano())
			return unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chtimes(dirs[i], at, at); err != nil {
			t.Fatal(err)
		}
	}
}

func growTarget(out string) Target {
	return Target{Output: out, BlockCompression: "zstd:level=3", Workers: 2, History: History{NoTimestamp: true}}
}

func buildTree(t *testing.T, src, out string) {
	t.Helper()
	scan := dedup.DefaultOptions()
	scan.Input, scan.BlockSizeBits, scan.NoCreateTime = src, 12, true
	if _, err := Build(context.Background(), BuildOptions{Scan: scan, Target: growTarget(out)}); err != nil {
		t.Fatal(err)
	}
}

// filler returns n bytes of text that compresses but does not repeat.
func filler(seed, n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%d line %d of file %d\n", i*seed%977, i, seed)
	}
	return b.String()[:n]
}

var (
	treeA = growFiles{"a.txt": filler(1, 9000), "dir/b.txt": filler(2, 5000), "dir/link": "->../a.txt",
		"dir/hard": "=a.txt", "empty": "", "same1": "same", "same2": "same"}
	treeB = growFiles{"new.txt": filler(3, 7000), "dir/copy-of-a": filler(1, 9000), "sub/c": filler(4, 300), "e2": ""}
)

func TestAppendRoundTrip(t *testing.T) {
	for _, at := range []string{"", "x/y"} {
		t.Run("at="+at, func(t *testing.T) {
			dir := t.TempDir()
			srcA, srcB, srcC := filepath.Join(dir, "A"), filepath.Join(dir, "B"), filepath.Join(dir, "C")
			treeA.write(t, srcA, "")
			treeB.write(t, srcB, "")
			// C is what A with B added looks like.
			treeA.write(t, srcC, "")
			treeB.write(t, srcC, at)
			old, want, got := filepath.Join(dir, "old.dwarfs"), filepath.Join(dir, "want.dwarfs"), filepath.Join(dir, "got.dwarfs")
			buildTree(t, srcA, old)
			buildTree(t, srcC, want)
			var images []string
			for _, workers := range []int{1, 3} {
				tg := growTarget(got)
				tg.Workers, tg.Overwrite = workers, true
				if _, err := Append(context.Background(), AppendOptions{Target: tg, Image: old, Input: srcB, At: at}); err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(got)
				if err != nil {
					t.Fatal(err)
				}
				images = append(images, string(b))
			}
			if images[0] != images[1] {
				t.Error("the image depends on the number of workers")
			}
			o, w, g := openImage(t, old), openImage(t, want), openImage(t, got)
			compareTrees(t, w.tree(t), g.tree(t))
			// The old blocks are copied as they are.
			ob, gb := o.im.Blocks(), g.im.Blocks()
			if len(gb) <= len(ob) {
				t.Fatalf("%d blocks after append, %d before", len(gb), len(ob))
			}
			for i := range ob {
				ra, _ := o.im.ReadRaw(ob[i])
				rb, _ := g.im.ReadRaw(gb[i])
				if ob[i].Compression != gb[i].Compression || !bytes.Equal(ra, rb) {
					t.Errorf("block %d differs", i)
				}
			}
			// A file whose contents the old image has is stored as that
			// file: no new data.
			p := "dir/copy-of-a"
			if at != "" {
				p = at + "/" + p
			}
			if n := bytesFrom(g.chunks(t, p), len(ob)); n > 0 {
				t.Errorf("%s has %d bytes in new blocks", p, n)
			}
			if n := historyEntries(t, g.im); n != historyEntries(t, o.im)+1 {
				t.Errorf("%d history entries", n)
			}
		})
	}
}

func TestMergeRoundTrip(t *testing.T) {
	dir := t.TempDir()
	srcA, srcB, srcC := filepath.Join(dir, "A"), filepath.Join(dir, "B"), filepath.Join(dir, "C")
	treeA.write(t, srcA, "")
	treeB.write(t, srcB, "")
	treeA.write(t, srcC, "a")
	treeB.write(t, srcC, "b/c")
	imgA, imgB, want, got := filepath.Join(dir, "a.dwarfs"), filepath.Join(dir, "b.dwarfs"), filepath.Join(dir, "want.dwarfs"), filepath.Join(dir, "got.dwarfs")
	buildTree(t, srcA, imgA)
	// Other block sizes: blocks keep theirs.
	scan := dedup.DefaultOptions()
	scan.Input, scan.BlockSizeBits, scan.NoCreateTime = srcB, 14, true
	if _, err := Build(context.Background(), BuildOptions{Scan: scan, Target: growTarget(imgB)}); err != nil {
		t.Fatal(err)
	}
	buildTree(t, srcC, want)
	var images []string
	for _, workers := range []int{1, 3} {
		tg := growTarget(got)
		tg.Workers, tg.Overwrite = workers, true
		if _, err := Merge(context.Background(), MergeOptions{Target: tg, Inputs: []MergeInput{{Image: imgA, At: DefaultMergeAt(imgA)}, {Image: imgB, At: "b/c"}}}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(got)
		if err != nil {
			t.Fatal(err)
		}
		images = append(images, string(b))
	}
	if images[0] != images[1] {
		t.Error("the image depends on the number of workers")
	}
	a, b, g := openImage(t, imgA), openImage(t, imgB), openImage(t, got)
	compareTrees(t, openImage(t, want).tree(t), g.tree(t))
	if g.md.BlockSize != b.md.BlockSize {
		t.Errorf("block size %d, want the larger input's %d", g.md.BlockSize, b.md.BlockSize)
	}
	var raws [][]byte
	for _, img := range []*image{a, b} {
		for _, s := range img.im.Blocks() {
			r, _ := img.im.ReadRaw(s)
			raws = append(raws, r)
		}
	}
	gb := g.im.Blocks()
	if len(gb) != len(raws) {
		t.Fatalf("%d blocks, inputs have %d", len(gb), len(raws))
	}
	for i, s := range gb {
		if r, _ := g.im.ReadRaw(s); !bytes.Equal(r, raws[i]) {
			t.Errorf("block %d is not the input's", i)
		}
	}
	if n := historyEntries(t, g.im); n != historyEntries(t, a.im)+historyEntries(t, b.im)+1 {
		t.Errorf("%d history entries", n)
	}
}

func TestGrowCollisions(t *testing.T) {
	dir := t.TempDir()
	srcA, srcB := filepath.Join(dir, "A"), filepath.Join(dir, "B")
	treeA.write(t, srcA, "")
	clash := growFiles{"dir/b.txt": "replaced", "dir/new": "new"}
	clash.write(t, srcB, "")
	imgA, imgB := filepath.Join(dir, "a.dwarfs"), filepath.Join(dir, "b.dwarfs")
	buildTree(t, srcA, imgA)
	buildTree(t, srcB, imgB)
	out := filepath.Join(dir, "out.dwarfs")
	_, err := Merge(context.Background(), MergeOptions{Target: growTarget(out), Inputs: []MergeInput{{Image: imgA}, {Image: imgB}}})
	if !errors.Is(err, dedup.ErrPathExists) || !strings.Contains(err.Error(), "dir/b.txt") || !strings.Contains(err.Error(), imgB) {
		t.Errorf("merge: err = %v, want a collision naming dir/b.txt in %s", err, imgB)
	}
	_, err = Append(context.Background(), AppendOptions{Target: growTarget(out), Image: imgA, Input: srcB})
	if !errors.Is(err, dedup.ErrPathExists) || !strings.Contains(err.Error(), "dir/b.txt") {
		t.Errorf("append: err = %v, want a collision naming dir/b.txt", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatal("output written despite the collision")
	}
	// With Replace the later one wins.
	srcC := filepath.Join(dir, "C")
	treeA.write(t, srcC, "")
	if err := os.WriteFile(filepath.Join(srcC, "dir/b.txt"), []byte("replaced"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(srcC, "dir/new"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	settle(t, srcC)
	want := filepath.Join(dir, "want.dwarfs")
	buildTree(t, srcC, want)
	for _, grow := range []func() error{
		func() error {
			_, err := Merge(context.Background(), MergeOptions{Target: growTarget(out), Inputs: []MergeInput{{Image: imgA}, {Image: imgB}}, Replace: true})
			return err
		},
		func() error {
			tg := growTarget(out)
			tg.Overwrite = true
			_, err := Append(context.Background(), AppendOptions{Target: tg, Image: imgA, Input: srcB, Replace: true})
			return err
		},
	} {
		if err := grow(); err != nil {
			t.Fatal(err)
		}
		compareTrees(t, openImage(t, want).tree(t), openImage(t, out).tree(t))
	}
}

func TestGrowCorruptInput(t *testing.T) {
	src := fixture(t, "upstream/compat-v0.9.10.dwarfs")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.dwarfs")
	if err := os.WriteFile(good, data, 0o644); err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(data)
	flipped[100] ^= 0xff // inside the first block's payload
	truncated := data[:len(data)*2/3]
	out := filepath.Join(dir, "out.dwarfs")
	for _, tc := range []struct {
		name string
		data []byte
	}{{"flipped.dwarfs", flipped}, {"truncated.dwarfs", truncated}} {
		bad := filepath.Join(dir, tc.name)
		if err := os.WriteFile(bad, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Merge(context.Background(), MergeOptions{Target: growTarget(out), Inputs: []MergeInput{{Image: good, At: "g"}, {Image: bad, At: "b"}}})
		if err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("merge %s: err = %v, want one naming it", tc.name, err)
		}
		_, err = Append(context.Background(), AppendOptions{Target: growTarget(out), Image: bad, Input: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("append to %s: err = %v, want one naming it", tc.name, err)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s: output written", tc.name)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 3 {
		t.Errorf("left behind: %v", ents)
	}
}

func TestGrowCancel(t *testing.T) {
	in := fixture(t, "upstream/catdata.dwarfs")
	dir := t.TempDir()
	out := filepath.Join(dir, "out.dwarfs")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tg := growTarget(out)
	tg.Progress = func(p Progress) {
		if p.Blocks > 0 {
			cancel() // after the first block is written
		}
	}
	_, err := Merge(ctx, MergeOptions{Target: tg, Inputs: []MergeInput{{Image: in, At: "one"}, {Image: in, At: "two"}}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("merge: err = %v, want context.Canceled", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("merge left behind: %v", ents)
	}
	// Append, cancelled while the new tree is scanned.
	src := t.TempDir()
	treeB.write(t, src, "")
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	tg = growTarget(out)
	tg.Progress = func(p Progress) {
		if p.Stats.FilesScanned > 0 {
			cancel()
		}
	}
	_, err = Append(ctx, AppendOptions{Target: tg, Image: in, Input: src, At: "new"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("append: err = %v, want context.Canceled", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("append left behind: %v", ents)
	}
}

// TestMergeFixtures merges reference images of several kinds (categories,
// holes, old formats, nanosecond times) and reads every file back.
func TestMergeFixtures(t *testing.T) {
	names := []string{"reference/images/default.dwarfs", "upstream/catdata.dwarfs", "upstream/compat-v0.4.1.dwarfs",
		"reference/images/nanosecond-times.dwarfs", "upstream/gh307.dwarfs"}
	var inputs []MergeInput
	var imgs []*image
	for i, n := range names {
		p := fixture(t, n)
		inputs = append(inputs, MergeInput{Image: p, At: fmt.Sprintf("in%d", i)})
		imgs = append(imgs, openImage(t, p))
	}
	out := filepath.Join(t.TempDir(), "out.dwarfs")
	if _, err := Merge(context.Background(), MergeOptions{Target: growTarget(out), Inputs: inputs}); err != nil {
		t.Fatal(err)
	}
	g := openImage(t, out).tree(t)
	for i, img := range imgs {
		want := img.tree(t)
		prefix := fmt.Sprintf("in%d", i)
		sub := map[string]string{}
		for p, d := range g {
			if p == prefix || strings.HasPrefix(p, prefix+"/") {
				sub[strings.TrimPrefix(strings.TrimPrefix(p, prefix), "/")] = d
			}
		}
		// The image's root and times at the new image's resolution may
		// differ; compare the contents.
		for p, d := range want {
			gd, ok := sub[p]
			if !ok {
				t.Errorf("%s: %s missing", names[i], p)
				continue
			}
			if content(d) != content(gd) {
				t.Errorf("%s: %s: %q vs %q", names[i], p, d, gd)
			}
		}
		if len(sub) != len(want) {
			t.Errorf("%s: %d entries, want %d", names[i], len(sub), len(want))
		}
	}
}

// content is a tree description without its time.
func content(desc string) string {
	f := strings.Fields(desc)
	if len(f) > 2 {
		f = append(f[:2], f[3:]...)
	}
	return strings.Join(f, " ")
}

// TestAppendSegmentsAgainstImage: a new file that differs from one in the
// image in a few bytes refers to the image's blocks for the rest, unless
// SegmentIndex turns that off.
func TestAppendSegmentsAgainstImage(t *testing.T) {
	dir := t.TempDir()
	srcA, srcB := filepath.Join(dir, "A"), filepath.Join(dir, "B")
	big := filler(7, 200000)
	growFiles{"big": big, "other": filler(8, 30000)}.write(t, srcA, "")
	edited := big[:100000] + "an edit in the middle" + big[100000:]
	growFiles{"big-v2": edited}.write(t, srcB, "")
	old := filepath.Join(dir, "old.dwarfs")
	buildTree(t, srcA, old)
	oldBlocks := openImage(t, old).im.NumBlocks()
	for _, tc := range []struct {
		index   int64
		maxData int64 // bytes of big-v2 allowed in new blocks
	}{{0, 20000}, {-1, int64(len(edited))}} {
		out := filepath.Join(dir, fmt.Sprintf("new%d.dwarfs", tc.index))
		if _, err := Append(context.Background(), AppendOptions{Target: growTarget(out), Image: old, Input: srcB, SegmentIndex: tc.index}); err != nil {
			t.Fatal(err)
		}
		g := openImage(t, out)
		inNew := bytesFrom(g.chunks(t, "big-v2"), oldBlocks)
		if tc.index >= 0 && inNew > tc.maxData {
			t.Errorf("SegmentIndex %d: %d of %d bytes in new blocks, want at most %d", tc.index, inNew, len(edited), tc.maxData)
		}
		if tc.index < 0 && inNew != int64(len(edited)) {
			t.Errorf("SegmentIndex %d: %d of %d bytes in new blocks, want all", tc.index, inNew, len(edited))
		}
		srcC := filepath.Join(dir, fmt.Sprintf("C%d", tc.index))
		growFiles{"big": big, "other": filler(8, 30000), "big-v2": edited}.write(t, srcC, "")
		want := filepath.Join(dir, fmt.Sprintf("want%d.dwarfs", tc.index))
		buildTree(t, srcC, want)
		compareTrees(t, openImage(t, want).tree(t), g.tree(t))
	}
}

// TestAppendFineWindow: an append segments with AppendWindowBits, so a new
// version of a file that differs from the old one every kilobyte (no 4 KiB
// window in common) still refers to the image for most of its bytes; a
// build's window finds nothing.
func TestAppendFineWindow(t *testing.T) {
	dir := t.TempDir()
	srcA, srcB := filepath.Join(dir, "A"), filepath.Join(dir, "B")
	rnd := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 300000)
	for i := range data {
		data[i] = byte(rnd.Uint32())
	}
	edited := bytes.Clone(data)
	for i := 500; i < len(edited); i += 1000 {
		edited[i] ^= 0xff
	}
	growFiles{"v1": string(data)}.write(t, srcA, "")
	growFiles{"v2": string(edited)}.write(t, srcB, "")
	old := filepath.Join(dir, "old.dwarfs")
	buildTree(t, srcA, old)
	oldBlocks := openImage(t, old).im.NumBlocks()
	for _, tc := range []struct {
		window         int // 0: the append's default
		minNew, maxNew int64
	}{{0, 0, int64(len(edited)) / 4}, {12, int64(len(edited)) * 9 / 10, int64(len(edited))}} {
		out := filepath.Join(dir, fmt.Sprintf("new%d.dwarfs", tc.window))
		ao := AppendOptions{Target: growTarget(out), Image: old, Input: srcB}
		if tc.window > 0 {
			ao.Configure = func(o *dedup.Options) { o.WindowBits = tc.window }
		}
		if _, err := Append(context.Background(), ao); err != nil {
			t.Fatal(err)
		}
		g := openImage(t, out)
		inNew := bytesFrom(g.chunks(t, "v2"), oldBlocks)
		if inNew < tc.minNew || inNew > tc.maxNew {
			t.Errorf("window %d: %d of %d bytes in new blocks, want %d..%d", tc.window, inNew, len(edited), tc.minNew, tc.maxNew)
		}
		im, err := godwarfs.Open(out, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fs.ReadFile(im, "v2")
		im.Close()
		if err != nil || !bytes.Equal(got, edited) {
			t.Errorf("window %d: v2 reads back wrong (%v)", tc.window, err)
		}
	}
}

// TestMergeMatchesAcross: a file with the contents of an earlier input's
// file is stored as that file (its chunks point into the earlier input's
// blocks), a file of the same size with other contents is not, and
// KeepApart leaves both where they were. No block changes either way.
func TestMergeMatchesAcross(t *testing.T) {
	dir := t.TempDir()
	srcA, srcB := filepath.Join(dir, "A"), filepath.Join(dir, "B")
	treeA.write(t, srcA, "")
	treeB.write(t, srcB, "")
	growFiles{"nine": filler(5, 9000)}.write(t, srcB, "") // a.txt's size, not its contents
	imgA, imgB := filepath.Join(dir, "a.dwarfs"), filepath.Join(dir, "b.dwarfs")
	buildTree(t, srcA, imgA)
	buildTree(t, srcB, imgB)
	blocksA := openImage(t, imgA).im.NumBlocks()
	for _, apart := range []bool{false, true} {
		out := filepath.Join(dir, fmt.Sprintf("m-%v.dwarfs", apart))
		if _, err := Merge(context.Background(), MergeOptions{Target: growTarget(out), KeepApart: apart,
			Inputs: []MergeInput{{Image: imgA, At: "a"}, {Image: imgB, At: "b"}}}); err != nil {
			t.Fatal(err)
		}
		g := openImage(t, out)
		orig, cp, nine := g.chunks(t, "a/a.txt"), g.chunks(t, "b/dir/copy-of-a"), g.chunks(t, "b/nine")
		if shared := fmt.Sprint(orig) == fmt.Sprint(cp); shared == apart {
			t.Errorf("KeepApart %v: copy-of-a shares a.txt's chunks: %v (%v, %v)", apart, shared, cp, orig)
		}
		for _, c := range nine {
			if int(c.Block) < blocksA {
				t.Errorf("KeepApart %v: nine refers to block %d of the first input", apart, c.Block)
			}
		}
		for _, c := range cp {
			if inA := int(c.Block) < blocksA; inA == apart {
				t.Errorf("KeepApart %v: copy-of-a has a chunk in block %d (first input has %d)", apart, c.Block, blocksA)
			}
		}
		if n := g.im.NumBlocks(); n != blocksA+openImage(t, imgB).im.NumBlocks() {
			t.Errorf("KeepApart %v: %d blocks", apart, n)
		}
		im, err := godwarfs.Open(out, nil)
		if err != nil {
			t.Fatal(err)
		}
		for p, want := range map[string]string{"a/a.txt": filler(1, 9000), "b/dir/copy-of-a": filler(1, 9000), "b/nine": filler(5, 9000)} {
			if got, err := fs.ReadFile(im, p); err != nil || string(got) != want {
				t.Errorf("KeepApart %v: %s reads back wrong (%v)", apart, p, err)
			}
		}
		im.Close()
	}
}

// chunks returns the chunks of the regular file at p.
func (img *image) chunks(t *testing.T, p string) []metadata.ChunkRef {
	t.Helper()
	ino, err := img.fs.LookupPath(p)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := img.fs.FileChunks(ino)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// bytesFrom counts the bytes of cs in blocks first and later.
func bytesFrom(cs []metadata.ChunkRef, first int) int64 {
	var n int64
	for _, c := range cs {
		if !c.Hole && int(c.Block) >= first {
			n += int64(c.Size)
		}
	}
	return n
}

// TestGrowProgressTotals: an append's and a merge's progress counts the
// copied blocks in BlocksTotal as in Blocks, so Blocks never passes
// BlocksTotal and while the new data is compressed the total still lies
// ahead; the last report has every block of the image written.
func TestGrowProgressTotals(t *testing.T) {
	dir := t.TempDir()
	srcA, srcB := filepath.Join(dir, "A"), filepath.Join(dir, "B")
	treeA.write(t, srcA, "")
	treeB.write(t, srcB, "")
	imgA := filepath.Join(dir, "a.dwarfs")
	buildTree(t, srcA, imgA)
	imgB := filepath.Join(dir, "b.dwarfs")
	buildTree(t, srcB, imgB)
	blocksOf := func(p string) int {
		raw, _ := blockPayloads(t, p)
		return len(raw)
	}
	for _, tc := range []struct {
		name string
		run  func(Target) error
		// copied is the number of blocks copied as stored; new, if not
		// 0, the least number of new blocks compressed.
		copied, new int
	}{
		{"append", func(tg Target) error {
			_, err := Append(context.Background(), AppendOptions{Target: tg, Image: imgA, Input: srcB, At: "b"})
			return err
		}, blocksOf(imgA), 1},
		{"merge", func(tg Target) error {
			_, err := Merge(context.Background(), MergeOptions{Target: tg, Inputs: []MergeInput{{Image: imgA, At: "a"}, {Image: imgB, At: "b"}}})
			return err
		}, blocksOf(imgA) + blocksOf(imgB), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.dwarfs")
			tg := growTarget(out)
			var reports []Progress
			tg.Progress = func(p Progress) { reports = append(reports, p) }
			if err := tc.run(tg); err != nil {
				t.Fatal(err)
			}
			total := blocksOf(out)
			if total < tc.copied+tc.new {
				t.Fatalf("%d blocks in the image, want at least %d copied and %d new", total, tc.copied, tc.new)
			}
			compressing := false
			for _, p := range reports {
				if p.BlocksTotal != 0 && p.Blocks > p.BlocksTotal {
					t.Fatalf("report %+v: more blocks written than in total", p)
				}
				if p.Phase == PhaseCompressing && p.BlocksTotal != total {
					t.Fatalf("report %+v while compressing: total %d, the image has %d blocks", p, p.BlocksTotal, total)
				}
				compressing = compressing || p.Phase == PhaseCompressing
			}
			last := reports[len(reports)-1]
			if !compressing || last.Blocks != total || last.BlocksTotal != total {
				t.Errorf("last report %+v (compressing phase seen: %v), want %d of %d blocks", last, compressing, total, total)
			}
		})
	}
}

func TestDefaultMergeAt(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"dir/a.dwarfs", "a"},
		{"https://h/x/b.dwarfs?sig=1", "b"},
		{"s3://bucket/k/c.dwarfs", "c"},
		{"docker://127.0.0.1:5000/ns/app:v1", "app"},
		{"docker://registry.example/app@sha256:" + strings.Repeat("0", 64), "app"},
	} {
		if got := DefaultMergeAt(c.in); got != c.want {
			t.Errorf("DefaultMergeAt(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestGrowKeepsPacking: an append or a merge writes the metadata packed as
// the (first) input image has it, tables the reader unpacks included.
func TestGrowKeepsPacking(t *testing.T) {
	for _, pack := range []string{"all", "names,symlinks"} {
		t.Run(pack, func(t *testing.T) {
			dir := t.TempDir()
			srcA, srcB := filepath.Join(dir, "A"), filepath.Join(dir, "B")
			treeA.write(t, srcA, "")
			treeB.write(t, srcB, "")
			img, appended, merged := filepath.Join(dir, "a.dwarfs"), filepath.Join(dir, "appended.dwarfs"), filepath.Join(dir, "merged.dwarfs")
			scan := dedup.DefaultOptions()
			scan.Input, scan.BlockSizeBits, scan.NoCreateTime, scan.Pack = srcA, 12, true, mustPack(t, pack)
			if _, err := Build(context.Background(), BuildOptions{Scan: scan, Target: growTarget(img)}); err != nil {
				t.Fatal(err)
			}
			if _, err := Append(context.Background(), AppendOptions{Target: growTarget(appended), Image: img, Input: srcB}); err != nil {
				t.Fatal(err)
			}
			inputs := []MergeInput{{Image: img, At: "x"}, {Image: appended, At: "y"}}
			if _, err := Merge(context.Background(), MergeOptions{Target: growTarget(merged), Inputs: inputs}); err != nil {
				t.Fatal(err)
			}
			want := pack == "all"
			for _, p := range []string{img, appended, merged} {
				o := openImage(t, p).md.Options
				got := o != nil && o.PackedChunkTable && o.PackedDirectories && o.PackedSharedFilesTable
				if got != want {
					t.Errorf("%s: chunk table, directories and shared files packed: %v, want %v (%+v)", filepath.Base(p), got, want, o)
				}
			}
		})
	}
}

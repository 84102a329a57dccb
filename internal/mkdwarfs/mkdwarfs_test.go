//go:build unix

package mkdwarfs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/metadata"
)

// node is what we expect (from the source tree) or got (from the image).
type node struct {
	mode     uint32
	uid, gid uint32
	size     int64
	mtime    time.Time
	target   string
	content  [32]byte
	inoKey   string // hard link identity (source dev:ino / image inode)
	nlink    uint32
	rdev     uint64
}

func (n node) String() string {
	return fmt.Sprintf("mode=%o uid=%d gid=%d size=%d mtime=%v target=%q nlink=%d", n.mode, n.uid, n.gid, n.size, n.mtime.UTC(), n.target, n.nlink)
}

// makeTree creates a small tree with every entry kind and redundant data.
func makeTree(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	rnd := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	write := func(rel string, data []byte, mode os.FileMode) {
		p := filepath.Join(root, rel)
		must(os.MkdirAll(filepath.Dir(p), 0o755))
		must(os.WriteFile(p, data, mode))
		must(os.Chmod(p, mode))
	}
	must(os.MkdirAll(filepath.Join(root, "empty"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "a/b/c/d"), 0o750))
	write("empty-file", nil, 0o644)
	write("small.txt", []byte("hello world\n"), 0o644)
	write("a/b/c/d/deep", []byte("deep file"), 0o600)
	write("setuid", []byte("#!/bin/sh\n"), 0o4755)
	must(os.Chmod(filepath.Join(root, "setuid"), 0o4755|os.ModeSetuid))
	unique := rnd(50000)
	write("dup1", unique, 0o644)
	write("a/dup2", unique, 0o600)
	write("a/b/dup3", unique, 0o644)
	write("hl1", rnd(3000), 0o644)
	must(os.Link(filepath.Join(root, "hl1"), filepath.Join(root, "a/hl2")))
	must(os.Link(filepath.Join(root, "hl1"), filepath.Join(root, "a/b/hl3")))
	must(os.Symlink("small.txt", filepath.Join(root, "link-rel")))
	must(os.Symlink("/etc/passwd", filepath.Join(root, "a/link-abs")))
	must(os.Symlink("does/not/exist", filepath.Join(root, "a/b/dangling")))
	must(os.Symlink("small.txt", filepath.Join(root, "link-same")))
	write("héllo-世界 ✓.txt", []byte("unicode"), 0o644)
	write(strings.Repeat("n", 255), []byte("long name"), 0o644)
	write("a/"+strings.Repeat("ü", 127), []byte("long unicode name"), 0o644)
	// Near-identical versions: the segmenter must share most of them.
	base := rnd(120000)
	for i := range 4 {
		v := append([]byte(nil), base...)
		for j := range 20 {
			v[(i*7919+j*5003)%len(v)] ^= byte(i + 1)
		}
		v = append(v, rnd(100)...)
		write(fmt.Sprintf("versions/v%d.bin", i), v, 0o644)
	}
	// Highly compressible text.
	var txt bytes.Buffer
	for i := range 2000 {
		fmt.Fprintf(&txt, "line %d: the quick brown fox jumps over the lazy dog\n", i%37)
	}
	write("text/log.txt", txt.Bytes(), 0o644)
	// Sparse file: 2 MiB hole, data, 1 MiB hole at the end.
	sp := filepath.Join(root, "sparse")
	f, err := os.Create(sp)
	must(err)
	_, err = f.WriteAt(rnd(5000), 2<<20)
	must(err)
	must(f.Truncate(3 << 20))
	must(f.Close())
	// Sub-second mtimes on everything (directories last).
	var paths []string
	must(filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		paths = append(paths, p)
		return err
	}))
	sort.Sort(sort.Reverse(sort.StringSlice(paths)))
	for i, p := range paths {
		ts := time.Unix(1700000000+int64(i)*3677, int64(i)*123456789%1e9)
		if err := lutimes(p, ts); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func lutimes(p string, ts time.Time) error {
	tv := []syscall.Timespec{syscall.NsecToTimespec(ts.UnixNano()), syscall.NsecToTimespec(ts.UnixNano())}
	return utimensat(p, tv)
}

// expected walks the source tree.
func expected(t testing.TB, root string) map[string]node {
	t.Helper()
	out := map[string]node{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			rel = ""
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		n := node{mode: uint32(st.Mode), uid: st.Uid, gid: st.Gid, mtime: time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec)),
			inoKey: fmt.Sprint(st.Dev, ":", st.Ino), nlink: 1, rdev: hostRdev(uint64(st.Rdev))}
		switch uint32(st.Mode) & syscall.S_IFMT {
		case syscall.S_IFREG:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			n.content = sha256.Sum256(b)
			n.size = int64(len(b))
			n.nlink = uint32(st.Nlink)
		case syscall.S_IFLNK:
			n.target, _ = os.Readlink(p)
			n.size = int64(len(n.target))
		}
		out[rel] = n
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// readBack opens an image with the block and metadata packages and returns
// every entry with its content hash.
func readBack(t testing.TB, img string) (map[string]node, *metadata.Metadata) {
	t.Helper()
	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	bi, err := block.OpenImage(f, fi.Size(), block.Options{ImageOffset: -1})
	if err != nil {
		t.Fatalf("open image: %v", err)
	}
	for _, s := range bi.Sections() {
		if err := bi.VerifyFull(s); err != nil {
			t.Fatalf("verify %v: %v", s, err)
		}
	}
	sch := bi.Find(block.SectionMetadataSchema)
	met := bi.Find(block.SectionMetadata)
	if len(sch) != 1 || len(met) != 1 {
		t.Fatalf("schema/metadata sections: %d/%d", len(sch), len(met))
	}
	sb, err := bi.ReadDecompressed(sch[0])
	if err != nil {
		t.Fatal(err)
	}
	mb, err := bi.ReadDecompressed(met[0])
	if err != nil {
		t.Fatal(err)
	}
	md, err := metadata.Decode(sb, mb)
	if err != nil {
		t.Fatalf("decode metadata: %v", err)
	}
	mfs, err := metadata.NewFS(md)
	if err != nil {
		t.Fatalf("metadata.NewFS: %v", err)
	}
	checkFS(t, mfs)
	blocks := make([][]byte, bi.NumBlocks())
	for i := range blocks {
		s, _ := bi.Block(i)
		if blocks[i], err = bi.ReadDecompressed(s); err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
		if len(blocks[i]) > int(md.BlockSize) {
			t.Fatalf("block %d larger than block size", i)
		}
	}
	out := map[string]node{}
	err = mfs.Walk(func(p string, ino uint32, e metadata.Inode) error {
		p = strings.TrimPrefix(p, "/")
		n := node{mode: e.Mode, uid: e.Uid, gid: e.Gid, size: e.Size, nlink: e.Nlink,
			mtime: time.Unix(e.Mtime.Sec, int64(e.Mtime.Nsec)), inoKey: fmt.Sprint(ino), rdev: e.Rdev}
		switch e.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			cs, err := mfs.FileChunks(ino)
			if err != nil {
				return err
			}
			h := sha256.New()
			var total int64
			for _, c := range cs {
				if c.Hole {
					h.Write(make([]byte, c.Size))
				} else {
					if int(c.Block) >= len(blocks) || uint64(c.Offset)+c.Size > uint64(len(blocks[c.Block])) {
						return fmt.Errorf("%s: chunk %+v out of range", p, c)
					}
					h.Write(blocks[c.Block][c.Offset : uint64(c.Offset)+c.Size])
				}
				total += int64(c.Size)
			}
			if total != e.Size {
				return fmt.Errorf("%s: chunks sum %d != size %d", p, total, e.Size)
			}
			copy(n.content[:], h.Sum(nil))
		case syscall.S_IFLNK:
			n.target, err = mfs.Readlink(ino)
			if err != nil {
				return err
			}
		}
		out[p] = n
		return nil
	})
	if err != nil {
		t.Fatalf("walk: %v", err)
	}
	return out, md
}

type cmpOpts struct {
	subsec   bool // compare nanoseconds
	timeRes  int64
	skipTime bool
	uid, gid *uint32
	modeFn   func(uint32) uint32
}

func compareTrees(t testing.TB, want, got map[string]node, o cmpOpts) {
	t.Helper()
	for p := range want {
		if _, ok := got[p]; !ok {
			t.Errorf("missing in image: %q", p)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("unexpected in image: %q", p)
		}
	}
	// Hard link identity: same source inode <=> same image inode.
	src2img := map[string]string{}
	img2src := map[string]string{}
	for p, w := range want {
		g, ok := got[p]
		if !ok {
			continue
		}
		wm := w.mode
		if o.modeFn != nil {
			wm = o.modeFn(wm)
		}
		if g.mode != wm {
			t.Errorf("%q: mode %o, want %o", p, g.mode, wm)
		}
		wu, wg := w.uid, w.gid
		if o.uid != nil {
			wu = *o.uid
		}
		if o.gid != nil {
			wg = *o.gid
		}
		if g.uid != wu || g.gid != wg {
			t.Errorf("%q: uid/gid %d/%d, want %d/%d", p, g.uid, g.gid, wu, wg)
		}
		isDir := w.mode&syscall.S_IFMT == syscall.S_IFDIR
		if !isDir && g.size != w.size {
			t.Errorf("%q: size %d, want %d", p, g.size, w.size)
		}
		if g.content != w.content {
			t.Errorf("%q: content differs", p)
		}
		if g.target != w.target {
			t.Errorf("%q: target %q, want %q", p, g.target, w.target)
		}
		if !o.skipTime {
			wt := w.mtime
			if !o.subsec {
				res := time.Duration(o.timeRes)
				if res == 0 {
					res = time.Second
				}
				wt = time.Unix(0, wt.UnixNano()/int64(res)*int64(res))
			}
			if !g.mtime.Equal(wt) {
				t.Errorf("%q: mtime %v, want %v", p, g.mtime.UTC(), wt.UTC())
			}
		}
		if w.mode&syscall.S_IFMT == syscall.S_IFREG {
			if g.nlink != w.nlink {
				t.Errorf("%q: nlink %d, want %d", p, g.nlink, w.nlink)
			}
			if s, ok := img2src[g.inoKey]; ok && s != w.inoKey {
				t.Errorf("%q: shares image inode with a different source inode", p)
			}
			if i, ok := src2img[w.inoKey]; ok && i != g.inoKey {
				t.Errorf("%q: hard link split into several inodes", p)
			}
			img2src[g.inoKey] = w.inoKey
			src2img[w.inoKey] = g.inoKey
		}
	}
}

// mk runs Main and fails the test on a non-zero exit.
func mk(t testing.TB, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	if code := Main(context.Background(), append([]string{"mkdwarfs"}, args...), cli.Stdio{Out: &bytes.Buffer{}, Err: &stderr}); code != 0 {
		t.Fatalf("mkdwarfs %v: exit %d: %s", args, code, stderr.String())
	}
	return stderr.String()
}

func TestRoundTripLevels(t *testing.T) {
	src := makeTree(t)
	want := expected(t, src)
	out := t.TempDir()
	for lvl := range 10 {
		t.Run(fmt.Sprint("l", lvl), func(t *testing.T) {
			t.Parallel()
			img := filepath.Join(out, fmt.Sprintf("l%d.dwarfs", lvl))
			mk(t, "-i", src, "-o", img, "-l", fmt.Sprint(lvl), "--log-level", "warn")
			got, md := readBack(t, img)
			compareTrees(t, want, got, cmpOpts{})
			if md.HoleBlockIndex == nil || len(md.Features) != 1 || md.Features[0] != "sparsefiles" {
				t.Errorf("sparse file not stored with holes: features %v", md.Features)
			}
		})
	}
}

func TestRoundTripPackAndCompression(t *testing.T) {
	src := makeTree(t)
	want := expected(t, src)
	out := t.TempDir()
	cases := [][]string{
		{"-P", "auto"}, {"-P", "all"}, {"-P", "none"}, {"-P", "chunk_table"}, {"-P", "directories"},
		{"-P", "shared_files"}, {"-P", "names"}, {"-P", "names_index"}, {"-P", "symlinks"},
		{"-P", "symlinks_index"}, {"-P", "force"}, {"-P", "plain"}, {"-P", "all,force"},
		{"-P", "plain,chunk_table,directories,shared_files"},
		{"-C", "null"}, {"-C", "lz4"}, {"-C", "lz4hc:level=9"}, {"-C", "zstd:level=3"},
		{"-C", "lzma:level=1"}, {"-C", "brotli:quality=5"},
		{"--metadata-compression", "lzma:level=1", "--schema-compression", "brotli:quality=3", "--history-compression", "lz4"},
		{"--order", "none"}, {"--order", "path"}, {"--order", "revpath"}, {"--order", "similarity"},
		{"--order", "nilsimsa", "--max-similarity-size", "60k"},
		{"--file-hash", "none"}, {"--file-hash", "sha256"}, {"--file-hash", "sha512"}, {"--file-hash", "xxh3-64"},
		{"-S", "12", "-B", "4"}, {"-S", "16", "-W", "8", "-w", "1"}, {"-W", "0"},
		{"--no-section-index", "--no-history"}, {"--keep-all-times"}, {"--no-hardlink-table"},
	}
	for i, c := range cases {
		t.Run(strings.Join(c, "_"), func(t *testing.T) {
			t.Parallel()
			img := filepath.Join(out, fmt.Sprintf("c%d.dwarfs", i))
			args := append([]string{"-i", src, "-o", img, "-l", "3", "--log-level", "warn"}, c...)
			mk(t, args...)
			got, _ := readBack(t, img)
			compareTrees(t, want, got, cmpOpts{})
		})
	}
}

// A build lowers the collector's percentage for segmenting; the caller's
// setting must be back when it returns, whether the build succeeds or not.
func TestBuildRestoresGCPercent(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set in the environment, so a build leaves the collector alone")
	}
	const mine = 77
	prev := debug.SetGCPercent(mine)
	defer debug.SetGCPercent(prev)
	src := makeTree(t)
	mk(t, "-i", src, "-o", filepath.Join(t.TempDir(), "a.dwarfs"), "-l", "3", "--log-level", "error")
	if got := debug.SetGCPercent(mine); got != mine {
		t.Errorf("GC percent after a build: %d, want %d", got, mine)
	}
	// A build that fails (its output directory does not exist).
	out := filepath.Join(t.TempDir(), "gone", "b.dwarfs")
	var stderr bytes.Buffer
	if code := Main(context.Background(), []string{"mkdwarfs", "-i", src, "-o", out, "--log-level", "error"}, cli.Stdio{Out: &bytes.Buffer{}, Err: &stderr}); code == 0 {
		t.Fatalf("build into a missing directory succeeded")
	}
	if got := debug.SetGCPercent(mine); got != mine {
		t.Errorf("GC percent after a failed build: %d, want %d", got, mine)
	}
}

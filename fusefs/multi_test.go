//go:build linux && !386 && !arm

package fusefs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/imagetest"
)

// multiImage is a test image and the tree it was built from.
type multiImage struct {
	name, path, tree string
}

// multiImages builds n images of different trees (64 KiB blocks).
func multiImages(t *testing.T, n int) []multiImage {
	t.Helper()
	var out []multiImage
	dir := t.TempDir()
	for i := range n {
		name := fmt.Sprintf("img%d", i)
		tree := imagetest.Tree(t, uint64(i+1), 12)
		p := filepath.Join(dir, name+".dwarfs")
		imagetest.Build(t, tree, p, 16)
		out = append(out, multiImage{name: name, path: p, tree: tree})
	}
	return out
}

// closers closes in order.
type closers []interface{ Close() error }

func (c closers) Close() error {
	var errs []error
	for _, x := range c {
		errs = append(errs, x.Close())
	}
	return errors.Join(errs...)
}

// openShared opens path on the shared cache sc, as a Source for Add.
func openShared(t *testing.T, sc *block.SharedCache, path string) (fusefs.Source, closers) {
	t.Helper()
	im, err := godwarfs.Open(path, &godwarfs.Options{Cache: sc, LazyBlockCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	src := fusefs.NewImageSource(im)
	return src, closers{src, im}
}

// mountMulti mounts the images on one shared cache of capacity bytes.
func mountMulti(t *testing.T, capacity int64, imgs []multiImage) (*fusefs.Multi, *fusefs.Server, *block.SharedCache) {
	t.Helper()
	requireFuse(t)
	sc := block.NewSharedCache(block.CacheOptions{Capacity: capacity, Workers: 2})
	m := fusefs.NewMulti(fusefs.MultiConfig{
		SharedStats: func() fusefs.CacheStats {
			st := sc.Stats()
			return fusefs.CacheStats{Hits: st.Hits, Misses: st.Misses, Decoded: st.Decoded, DecodedBytes: st.DecodedBytes,
				Evictions: st.Evictions, CurrentBytes: st.CurrentBytes, PeakBytes: st.PeakBytes, Capacity: st.Capacity}
		},
	})
	for _, im := range imgs {
		src, c := openShared(t, sc, im.path)
		if err := m.Add(im.name, src, c); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	srv, err := m.Mount(dir)
	if err != nil {
		if errors.Is(err, syscall.EPERM) || strings.Contains(err.Error(), "fusermount") {
			fixtures.FUSEUnusable(t, err.Error())
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
		if n := sc.Caches(); n != 0 {
			t.Errorf("%d image caches still open after unmount", n)
		}
	})
	return m, srv, sc
}

func listRoot(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() {
			t.Errorf("%s: %s is not a directory", dir, e.Name())
		}
		names = append(names, e.Name())
	}
	return names
}

func mgetxattr(t *testing.T, p, name string) string {
	t.Helper()
	buf := make([]byte, 64<<10)
	n, err := unix.Getxattr(p, name, buf)
	if err != nil {
		t.Fatalf("getxattr %s %s: %v", p, name, err)
	}
	return string(buf[:n])
}

// TestMultiMount mounts several images on one cache: each reads back as
// its source tree byte for byte, the root lists them, the images' blocks
// together stay within the one capacity, and each image keeps the
// driver's attributes.
func TestMultiMount(t *testing.T) {
	imgs := multiImages(t, 3)
	const capacity = 512 << 10
	m, srv, sc := mountMulti(t, capacity, imgs)
	dir := srv.Dir()
	if got := listRoot(t, dir); !slices.Equal(got, []string{"img0", "img1", "img2"}) {
		t.Errorf("root lists %q", got)
	}
	for _, im := range imgs {
		imagetest.SameTree(t, im.tree, filepath.Join(dir, im.name))
	}
	st := sc.Stats()
	if st.CurrentBytes > capacity || st.PeakBytes > capacity || st.Evictions == 0 || st.Capacity != capacity {
		t.Errorf("shared cache over its capacity or nothing evicted: %+v", st)
	}
	for _, im := range m.Images() {
		if cs := im.Source.CacheStats(); cs.Decoded == 0 || cs.Capacity != capacity {
			t.Errorf("%s: cache stats %+v", im.Name, cs)
		}
	}
	var root, sub unix.Stat_t
	if err := unix.Stat(dir, &root); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(filepath.Join(dir, "img1"), &sub); err != nil {
		t.Fatal(err)
	}
	if root.Ino != 1 || root.Mode != syscall.S_IFDIR|0o555 || root.Nlink != 5 || sub.Mode&syscall.S_IFMT != syscall.S_IFDIR || sub.Ino == root.Ino {
		t.Errorf("root %+v, image root %+v", root, sub)
	}
	if pid := mgetxattr(t, dir, fusefs.XattrPid); pid != fmt.Sprint(os.Getpid()) {
		t.Errorf("root pid %q", pid)
	}
	if pid := mgetxattr(t, filepath.Join(dir, "img2"), fusefs.XattrPid); pid != fmt.Sprint(os.Getpid()) {
		t.Errorf("image pid %q", pid)
	}
	if p := mgetxattr(t, dir, fusefs.XattrPerfmon); !strings.Contains(p, "images: 3\n") || !strings.Contains(p, "image img1: ") {
		t.Errorf("root perfmon:\n%s", p)
	}
	if p := mgetxattr(t, filepath.Join(dir, "img0"), fusefs.XattrPerfmon); !strings.Contains(p, "fuse.read: ") {
		t.Errorf("image perfmon:\n%s", p)
	}
	if info := mgetxattr(t, filepath.Join(dir, "img0", "d0"), fusefs.XattrInodeInfo); !strings.Contains(info, `"mode"`) {
		t.Errorf("inodeinfo %s", info)
	}
	if _, err := os.Stat(filepath.Join(dir, "nothing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stat of a name no image has: %v", err)
	}
	// Names must be valid and unique.
	src, c := openShared(t, sc, imgs[0].path)
	defer c.Close()
	for _, name := range []string{"img1", "", "a/b", "..", "."} {
		if err := m.Add(name, src, c); err == nil {
			t.Errorf("Add(%q) succeeded", name)
		}
	}
}

// TestMultiAddRemoveUnderLoad adds and removes images while 8 readers
// hash files of other images: no reader sees an error, a removed image
// leaves the listing at once and an added one appears at once.
func TestMultiAddRemoveUnderLoad(t *testing.T) {
	imgs := multiImages(t, 4)
	m, srv, sc := mountMulti(t, 384<<10, imgs[:2])
	dir := srv.Dir()
	var files []imagetest.FileWant
	for _, im := range imgs[:2] {
		files = append(files, imagetest.TreeFiles(t, im.tree, filepath.Join(dir, im.name))...)
	}
	stop := imagetest.StartReaders(files, 8)
	// The readers must stop before a failure ends the test (and the
	// mount with it).
	if err := addRemoveRounds(t, m, sc, dir, imgs[2:]); err != nil {
		stop()
		t.Fatal(err)
	}
	reads, err := stop()
	if err != nil {
		t.Error(err)
	}
	if reads == 0 {
		t.Error("the readers read nothing")
	}
	if got := listRoot(t, dir); !slices.Equal(got, []string{"img0", "img1"}) {
		t.Errorf("root lists %q at the end", got)
	}
	if _, _, err := m.Remove("img9"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("removing an unknown name: %v", err)
	}
	if n := sc.Caches(); n != 2 {
		t.Errorf("%d caches open, want 2", n)
	}
}

// addRemoveRounds adds an image, reads it, removes it and checks that it
// is gone, a few times.
func addRemoveRounds(t *testing.T, m *fusefs.Multi, sc *block.SharedCache, dir string, imgs []multiImage) error {
	for round := range 6 {
		im := imgs[round%len(imgs)]
		name := fmt.Sprintf("%s-%d", im.name, round)
		src, c := openShared(t, sc, im.path)
		if err := m.Add(name, src, c); err != nil {
			return err
		}
		if got := listRoot(t, dir); !slices.Contains(got, name) {
			return fmt.Errorf("round %d: %s not listed after Add: %q", round, name, got)
		}
		imagetest.SameTree(t, im.tree, filepath.Join(dir, name))
		// The kernel may still be about to release files compareTree
		// closed: the image is closed once it has.
		_, closed, err := m.Remove(name)
		if err != nil {
			return err
		}
		if got := listRoot(t, dir); slices.Contains(got, name) {
			return fmt.Errorf("round %d: %s still listed after Remove: %q", round, name, got)
		}
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("stat of a removed image: %v", err)
		}
		if _, err := os.ReadFile(filepath.Join(dir, name, "d0", "f000.dat")); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("read in a removed image: %v", err)
		}
		select {
		case <-closed:
		case <-time.After(time.Minute):
			return fmt.Errorf("round %d: removed image %s not closed: %+v", round, name, m.Images())
		}
	}
	return nil
}

// TestMultiRemoveOpen: removing an image with an open file detaches it
// lazily. The name leaves the listing at once and may be used again; the
// open file reads to its end; the image is closed when it is closed.
func TestMultiRemoveOpen(t *testing.T) {
	imgs := multiImages(t, 2)
	m, srv, sc := mountMulti(t, 256<<10, imgs)
	dir := srv.Dir()
	rel := filepath.Join("d1", "f001.dat")
	want, err := os.ReadFile(filepath.Join(imgs[0].tree, rel))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "img0", rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 100)
	if _, err := f.ReadAt(head, 0); err != nil {
		t.Fatal(err)
	}
	dirf, err := os.Open(filepath.Join(dir, "img0", "d2"))
	if err != nil {
		t.Fatal(err)
	}
	defer dirf.Close()
	open, closed, err := m.Remove("img0")
	if err != nil || open < 2 {
		t.Fatalf("Remove: %v, %d open (want at least 2)", err, open)
	}
	// The open directory lists the removed image's entries.
	ents, err := dirf.Readdirnames(-1)
	wantEnts, _ := os.ReadDir(filepath.Join(imgs[0].tree, "d2"))
	if err != nil || len(ents) != len(wantEnts) || len(ents) == 0 {
		t.Errorf("open directory of the removed image: %q %v, want %d entries", ents, err, len(wantEnts))
	}
	dirf.Close()
	if got := listRoot(t, dir); !slices.Equal(got, []string{"img1"}) {
		t.Errorf("root lists %q after removing img0", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "img0")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stat of the removed image: %v", err)
	}
	imgsNow := m.Images()
	if len(imgsNow) != 2 || imgsNow[1].Name != "img0" || !imgsNow[1].Detached || imgsNow[1].Open < 1 {
		t.Errorf("images %+v", imgsNow)
	}
	// The name is free again: another image takes it.
	src, c := openShared(t, sc, imgs[1].path)
	if err := m.Add("img0", src, c); err != nil {
		t.Fatal(err)
	}
	imagetest.SameTree(t, imgs[1].tree, filepath.Join(dir, "img0"))
	// The open file still reads the removed image, to its end. Dropping
	// the kernel's copy of its pages makes the reads reach the driver.
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want)+1)
	n, err := f.ReadAt(got, 0)
	if n != len(want) || !bytes.Equal(got[:n], want) {
		t.Errorf("open file of the removed image: %d bytes, %v", n, err)
	}
	select {
	case <-closed:
		t.Fatal("removed image closed while a file of it is open")
	default:
	}
	f.Close()
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("removed image not closed after its last file was")
	}
	if imgsNow := m.Images(); len(imgsNow) != 2 || imgsNow[0].Detached || imgsNow[1].Detached {
		t.Errorf("images after close %+v", imgsNow)
	}
	if n := sc.Caches(); n != 2 {
		t.Errorf("%d caches open, want 2", n)
	}
}

//go:build linux && !386 && !arm

package fusefs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/godwarfs/godwarfs/internal/gofuse/fs"
	"github.com/godwarfs/godwarfs/internal/gofuse/fuse"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/faultio"
	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/internal/testimage"
)

// mountReaderAt opens an image from r and mounts it in-process.
func mountReaderAt(t *testing.T, r io.ReaderAt, size int64, name string) (*fusefs.Server, *godwarfs.Image) {
	t.Helper()
	im, err := godwarfs.OpenReaderAt(r, size, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	src := fusefs.NewImageSource(im)
	t.Cleanup(func() { src.Close(); im.Close() })
	return mountSrc(t, src, ""), im
}

func blockSpan(im *godwarfs.Image, n int) (off, length int64) {
	bi := imageaccess.Of(im).Blocks
	s := bi.Blocks()[n]
	return bi.Offset() + s.DataOffset, s.Length
}

// checkMount reads every file of sp through the mount: the files needing
// block bad (none if bad < 0) must fail with EIO, all others byte-exact;
// the daemon must still be serving afterwards.
func checkMount(t *testing.T, srv *fusefs.Server, sp *testimage.Spread, bad int) {
	t.Helper()
	for name, want := range sp.Files {
		got, err := os.ReadFile(filepath.Join(srv.Dir(), name))
		switch {
		case bad >= 0 && sp.NeedsBlock(name, bad):
			if !errors.Is(err, syscall.EIO) {
				t.Errorf("%s needs faulty block %d: err %v, want EIO", name, bad, err)
			}
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case !bytes.Equal(got, want):
			t.Errorf("%s: content differs", name)
		}
	}
	select {
	case <-srv.Done():
		t.Fatal("the FUSE daemon stopped after an I/O error")
	default:
	}
	if ents, err := os.ReadDir(srv.Dir()); err != nil || len(ents) != len(sp.Files) {
		t.Fatalf("mount no longer serving: %d entries, %v", len(ents), err)
	}
}

// TestFaultEIO: the driver reads through a storage fault injector. A
// read error inside a block gives EIO for exactly the files that need it,
// the others read byte-exact, the daemon keeps serving, and the files read
// again once the storage recovers. Storage that shrinks under the mount
// gives EIO too, never a crash.
func TestFaultEIO(t *testing.T) {
	sp, err := testimage.NewSpread("zstd", 3<<10)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("read error", func(t *testing.T) {
		fr := faultio.New(bytes.NewReader(sp.Image))
		srv, im := mountReaderAt(t, fr, int64(len(sp.Image)), "fault.dwarfs")
		off, n := blockSpan(im, 1)
		fr.Fail(off, n, syscall.EIO)
		checkMount(t, srv, sp, 1)
		checkMount(t, srv, sp, 1) // failures are not cached as success either
		fr.Clear()
		checkMount(t, srv, sp, -1)
	})
	t.Run("truncated", func(t *testing.T) {
		fr := faultio.New(bytes.NewReader(sp.Image))
		srv, im := mountReaderAt(t, fr, int64(len(sp.Image)), "fault.dwarfs")
		off, _ := blockSpan(im, 2)
		fr.Truncate(off + 5)
		checkMount(t, srv, sp, 2)
		fr.Clear()
		checkMount(t, srv, sp, -1)
	})
}

// failingFile is a file served by a FUSE file system of the test's own,
// whose reads overlapping [lo, hi) fail with EIO while bad is set: storage
// that fails under the image, as a disk with bad sectors does, seen by the
// driver through the kernel's page cache and mmap like any other file.
type failingFile struct {
	fs.Inode
	data   []byte
	lo, hi int64
	bad    atomic.Bool
}

var (
	_ fs.NodeOpener    = (*failingFile)(nil)
	_ fs.NodeReader    = (*failingFile)(nil)
	_ fs.NodeGetattrer = (*failingFile)(nil)
)

func (f *failingFile) Open(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, 0, 0
}

func (f *failingFile) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o444
	out.Size = uint64(len(f.data))
	return 0
}

func (f *failingFile) Read(_ context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off >= int64(len(f.data)) {
		return fuse.ReadResultData(nil), 0
	}
	end := min(off+int64(len(dest)), int64(len(f.data)))
	if f.bad.Load() && off < f.hi && end > f.lo {
		return nil, syscall.EIO
	}
	return fuse.ReadResultData(f.data[off:end]), 0
}

// TestFaultBackingStore opens the image by path from a file whose pages
// inside block 1 fail with EIO: real read errors from the kernel, through
// pread or a mapping. The mount must give EIO for the files needing block
// 1 and serve the rest; once the storage heals, every file reads again.
func TestFaultBackingStore(t *testing.T) {
	requireFuse(t)
	// Blocks of 48 KiB span many pages, so the failing range can lie
	// wholly inside block 1 and nothing else.
	sp, err := testimage.NewSpread("zstd", 48<<10)
	if err != nil {
		t.Fatal(err)
	}
	probe, err := godwarfs.OpenReaderAt(bytes.NewReader(sp.Image), int64(len(sp.Image)), "probe", nil)
	if err != nil {
		t.Fatal(err)
	}
	off, n := blockSpan(probe, 1)
	probe.Close()
	const page = 4096
	first, end := (off+page-1)/page*page, (off+n)/page*page
	if end <= first {
		t.Fatalf("block 1 (%d bytes at %d) spans no whole page", n, off)
	}
	file := &failingFile{data: sp.Image, lo: first, hi: end}
	file.bad.Store(true)
	dir := t.TempDir()
	root := &fs.Inode{}
	store, err := fs.Mount(dir, root, &fs.Options{
		OnAdd: func(ctx context.Context) {
			root.AddChild("img.dwarfs", root.NewPersistentInode(ctx, file, fs.StableAttr{Mode: syscall.S_IFREG}), false)
		},
	})
	if err != nil {
		fixtures.FUSEUnusable(t, fmt.Sprintf("mounting the failing store: %v", err))
	}
	t.Cleanup(func() { store.Unmount() })

	im, err := godwarfs.Open(filepath.Join(dir, "img.dwarfs"), nil)
	if err != nil {
		t.Fatalf("open on storage with a bad block 1: %v", err)
	}
	if w := im.Warnings(); len(w) == 0 {
		t.Error("the unreadable block gave no warning at open")
	}
	src := fusefs.NewImageSource(im)
	t.Cleanup(func() { src.Close(); im.Close() })
	srv := mountSrc(t, src, "")
	checkMount(t, srv, sp, 1)
	file.bad.Store(false)
	checkMount(t, srv, sp, -1)
}

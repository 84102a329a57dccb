//go:build linux && !386 && !arm

package dwarfsextract

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/internal/gofuse/fs"
	"github.com/godwarfs/godwarfs/internal/gofuse/fuse"

	"github.com/godwarfs/godwarfs/internal/fixtures"
)

// foldNode is a loopback node whose directories fold letter case, as a
// Windows volume or an ext4 casefold directory does: a name reaches the
// entry whose name equals it but for case, when there is one. This
// kernel has no case-folding file system of its own, so the test makes
// one with FUSE.
type foldNode struct {
	fs.LoopbackNode
}

// fold returns the name of the entry of n that name reaches.
func (n *foldNode) fold(name string) string {
	ents, err := os.ReadDir(filepath.Join(n.RootData.Path, n.Path(n.Root())))
	if err != nil {
		return name
	}
	for _, e := range ents {
		if e.Name() == name {
			return name
		}
	}
	for _, e := range ents {
		if strings.EqualFold(e.Name(), name) {
			return e.Name()
		}
	}
	return name
}

func (n *foldNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.LoopbackNode.Lookup(ctx, n.fold(name), out)
}

func (n *foldNode) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return n.LoopbackNode.Create(ctx, n.fold(name), flags, mode, out)
}

func (n *foldNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.LoopbackNode.Mkdir(ctx, n.fold(name), mode, out)
}

func (n *foldNode) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.LoopbackNode.Mknod(ctx, n.fold(name), mode, rdev, out)
}

func (n *foldNode) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.LoopbackNode.Symlink(ctx, target, n.fold(name), out)
}

func (n *foldNode) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.LoopbackNode.Link(ctx, target, n.fold(name), out)
}

func (n *foldNode) Unlink(ctx context.Context, name string) syscall.Errno {
	return n.LoopbackNode.Unlink(ctx, n.fold(name))
}

func (n *foldNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	return n.LoopbackNode.Rmdir(ctx, n.fold(name))
}

func (n *foldNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if p, ok := newParent.(*foldNode); ok {
		newName = p.fold(newName)
	}
	return n.LoopbackNode.Rename(ctx, n.fold(name), newParent, newName, flags)
}

// foldingDir mounts a case-folding view of a new directory and returns
// its path.
func foldingDir(t *testing.T) string {
	t.Helper()
	fixtures.SkipFUSEUnderEmulation(t)
	if _, err := os.Stat("/dev/fuse"); err != nil {
		fixtures.FUSEUnusable(t, err.Error())
	}
	back, mnt := t.TempDir(), t.TempDir()
	root := &fs.LoopbackRoot{Path: back}
	root.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &foldNode{fs.LoopbackNode{RootData: r}}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(back, &st); err != nil {
		t.Fatal(err)
	}
	root.Dev = st.Dev
	root.RootNode = root.NewNode(root, nil, "", &st)
	// With zero timeouts the kernel revalidates the entry of a folded
	// name by its own spelling and drops it; any timeout keeps it.
	sec := time.Second
	srv, err := fs.Mount(mnt, root.RootNode, &fs.Options{EntryTimeout: &sec, AttrTimeout: &sec})
	if err != nil {
		fixtures.FUSEUnusable(t, "mounting a case-folding directory: "+err.Error())
	}
	t.Cleanup(func() { srv.Unmount() })
	return mnt
}

// TestCaseFoldingTarget extracts to a directory that really folds case:
// the probe finds it out, the first of each colliding group is kept
// with its own bytes, the others are reported and counted (exit status
// 2); with rename, every entry arrives under a name of its own.
func TestCaseFoldingTarget(t *testing.T) {
	img := collidingImage(t)
	dir := foldingDir(t)
	if folds, err := foldsCase(dir); err != nil || !folds {
		t.Fatalf("foldsCase on the folding mount: %v, %v", folds, err)
	}
	skip := filepath.Join(dir, "skip")
	rc, _, errs := runx("-i", img, "-o", skip)
	if rc != 2 {
		t.Fatalf("rc %d, want 2: %s", rc, errs)
	}
	want := []string{"CASE=all", "Dir/", "Dir/x=1", "case~2=literal", "keep.txt=keep", "Ä.txt=A-umlaut"}
	if got := listTree(t, skip); !slices.Equal(got, want) {
		t.Errorf("extracted\n%q\nwant\n%q", got, want)
	}
	for _, w := range []string{"Case: differs only in letter case from CASE", "case: differs only in letter case from CASE",
		"dir: differs only in letter case from Dir", "4 entries could not be extracted"} {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errs)
		}
	}
	ren := filepath.Join(dir, "rename")
	if rc, _, errs := runx("-i", img, "-o", ren, "--case-collision=rename"); rc != 0 {
		t.Fatalf("rename: rc %d: %s", rc, errs)
	}
	if got := listTree(t, ren); len(got) != 13 || !slices.Contains(got, "case~3=lower") || !slices.Contains(got, "dir~2/sub/z=3") {
		t.Errorf("rename extracted %q", got)
	}
}

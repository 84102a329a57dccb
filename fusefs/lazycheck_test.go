//go:build linux && !386 && !arm

package fusefs_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/dwarfs"
	"github.com/godwarfs/godwarfs/internal/mountopts"
	"github.com/godwarfs/godwarfs/internal/testimage"
	"github.com/godwarfs/godwarfs/metadata"
)

// TestMountChecksNamesOnFirstUse: the driver opens an image without
// decoding every name, so a directory whose names are out of order is
// found when it is first listed or searched: those requests fail with
// EIO, the source's error names the image and the fault, and the other
// directories are served.
func TestMountChecksNamesOnFirstUse(t *testing.T) {
	requireFuse(t)
	// A root holding directory "d" (inode 1) and files f000..f009, d
	// holding f000..f009 too, but listing f003 before f002.
	md := &metadata.Metadata{
		Modes:         []uint32{metadata.ModeDir | 0o755, metadata.ModeRegular | 0o644},
		Uids:          []uint32{0},
		Gids:          []uint32{0},
		Names:         []string{"d"},
		HasDirEntries: true,
		BlockSize:     1 << 16,
		Options:       &metadata.FsOptions{MtimeOnly: true},
		Inodes:        []metadata.InodeData{{ModeIndex: 0}, {ModeIndex: 0}},
		DirEntries:    []metadata.DirEntry{{}, {NameIndex: 0, InodeNum: 1}},
		ChunkTable:    []uint32{0},
	}
	for i := range 10 {
		md.Names = append(md.Names, fmt.Sprintf("f%03d", i))
	}
	for dir := range 2 {
		if dir == 1 {
			md.Directories = append(md.Directories, metadata.Directory{FirstEntry: uint32(len(md.DirEntries))})
		}
		for i := range 10 {
			md.Inodes = append(md.Inodes, metadata.InodeData{ModeIndex: 1})
			md.DirEntries = append(md.DirEntries, metadata.DirEntry{NameIndex: uint32(1 + i), InodeNum: uint32(len(md.Inodes) - 1)})
			md.Chunks = append(md.Chunks, metadata.Chunk{Block: 0, Offset: 0, Size: 4})
			md.ChunkTable = append(md.ChunkTable, uint32(len(md.Chunks)))
		}
	}
	md.Directories = append([]metadata.Directory{{FirstEntry: 1}}, md.Directories...)
	md.Directories = append(md.Directories, metadata.Directory{FirstEntry: uint32(len(md.DirEntries))})
	d := md.Directories[1].FirstEntry
	md.DirEntries[d+2].NameIndex, md.DirEntries[d+3].NameIndex = md.DirEntries[d+3].NameIndex, md.DirEntries[d+2].NameIndex
	img, err := testimage.Build(md, [][]byte{[]byte("data")}, "null")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "unsorted.dwarfs")
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
	src, closer, err := dwarfs.OpenImage(path, mountopts.Defaults())
	if err != nil {
		t.Fatalf("open as the driver does: %v", err)
	}
	defer closer.Close()
	const want = `entries "f003" and "f002" not strictly sorted`
	if _, err := src.ReadDir(1); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
		t.Errorf("source ReadDir: error %v, want the image name and %q", err, want)
	}
	srv := mountSrc(t, src, "")
	mnt := srv.Dir()
	if _, err := os.ReadDir(filepath.Join(mnt, "d")); !errors.Is(err, syscall.EIO) {
		t.Errorf("readdir d: %v, want EIO", err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "d", "f005")); !errors.Is(err, syscall.EIO) {
		t.Errorf("stat d/f005: %v, want EIO", err)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "f005")); err != nil || string(b) != "data" {
		t.Errorf("read f005: %q, %v", b, err)
	}
	if ents, err := os.ReadDir(mnt); err != nil || len(ents) != 11 {
		t.Errorf("readdir root: %d entries, %v", len(ents), err)
	}
	var _ fusefs.Source = src
}

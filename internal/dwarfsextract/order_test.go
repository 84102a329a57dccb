//go:build unix

package dwarfsextract

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/internal/testimage"
	"github.com/godwarfs/godwarfs/metadata"
)

// interleaved builds an image of nblocks blocks and nfiles files whose
// path order jumps between blocks: file i lies in block i%nblocks. It
// returns the image path and the contents by name.
func interleaved(t *testing.T, nblocks, nfiles, blockLen int) (string, map[string][]byte) {
	t.Helper()
	per := (nfiles + nblocks - 1) / nblocks
	chunkLen := blockLen / per
	blocks := make([][]byte, nblocks)
	x := uint32(7)
	for i := range blocks {
		b := make([]byte, blockLen)
		for j := range b {
			x = x*1664525 + 1013904223
			b[j] = "abcdefgh"[x>>29]
		}
		blocks[i] = b
	}
	var names []string
	var chunks [][]metadata.Chunk
	want := map[string][]byte{}
	for i := range nfiles {
		name := fmt.Sprintf("f%03d", i)
		blk, off := i%nblocks, (i/nblocks)*chunkLen
		names = append(names, name)
		chunks = append(chunks, []metadata.Chunk{{Block: uint32(blk), Offset: uint32(off), Size: uint32(chunkLen)}})
		want[name] = blocks[blk][off : off+chunkLen]
	}
	bs := uint32(1)
	for int(bs) < blockLen {
		bs <<= 1
	}
	img, err := testimage.Build(testimage.Files(bs, names, chunks), blocks, "zstd")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "interleaved.dwarfs")
	if err := os.WriteFile(p, img, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, want
}

// TestExtractDataOrder: files are written in the order their data sits
// in the image, so with a cache of one block every block is decompressed
// exactly once, where path order decompresses one per file.
func TestExtractDataOrder(t *testing.T) {
	const nblocks, nfiles, blockLen = 8, 48, 60000
	img, want := interleaved(t, nblocks, nfiles, blockLen)
	open := func() *godwarfs.Image {
		im, err := godwarfs.Open(img, &godwarfs.Options{CacheSize: blockLen * 3 / 2, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { im.Close() })
		return im
	}
	decoded := func(im *godwarfs.Image) int64 { return imageaccess.Of(im).Cache.Stats().Decoded }

	// The control: reading the files in path order with this cache
	// decodes a block per file, so the count below can tell the orders
	// apart.
	im := open()
	before := decoded(im)
	for i := range nfiles {
		if _, err := im.ReadFile(fmt.Sprintf("f%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := decoded(im) - before; n != nfiles {
		t.Fatalf("path order: %d block decodes, want %d (one per file)", n, nfiles)
	}

	for _, writers := range []int{1, 4} {
		t.Run(fmt.Sprintf("writers=%d", writers), func(t *testing.T) {
			im := open()
			before := decoded(im)
			dir := t.TempDir()
			st, err := Extract(im, Config{Output: dir, Workers: writers, DiskWriters: writers})
			if err != nil {
				t.Fatal(err)
			}
			if st.Files != nfiles {
				t.Errorf("%d files extracted, want %d", st.Files, nfiles)
			}
			// With several writers a block may be dropped while a file
			// of it still waits for its turn; one writer is exact.
			n := decoded(im) - before
			if writers == 1 && n != nblocks {
				t.Errorf("%d block decodes for %d blocks, want each decoded once", n, nblocks)
			}
			t.Logf("%d writers: %d block decodes for %d blocks", writers, n, nblocks)
			for name, data := range want {
				got, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil || !bytes.Equal(got, data) {
					t.Errorf("%s: content differs (%v)", name, err)
				}
			}
			checkNoLeftovers(t, dir)
		})
	}
}

// checkNoLeftovers fails when a temporary name is left in dir.
func checkNoLeftovers(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name()[0] == '.' && p != dir {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}

// TestWriteFileReplaces: a file is put over what is at its name (a file
// with other content, an empty directory, a symbolic link), both when it
// is created unnamed and linked (O_TMPFILE) and when it is written under
// a temporary name and renamed, and nothing else is left.
func TestWriteFileReplaces(t *testing.T) {
	img, want := interleaved(t, 2, 4, 3000)
	im, err := godwarfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	ino, err := im.Lookup("f001")
	if err != nil {
		t.Fatal(err)
	}
	probe, err := newTempNames(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	modes := []linkMode{linkNone}
	if probe.link != linkNone {
		modes = append(modes, probe.link)
	} else {
		t.Logf("O_TMPFILE and linkat unavailable here: only the named temporary file is tested")
	}
	for _, m := range modes {
		for _, before := range []string{"none", "file", "emptydir", "symlink"} {
			t.Run(fmt.Sprintf("mode%d/%s", m, before), func(t *testing.T) {
				dir := t.TempDir()
				dst := filepath.Join(dir, "f001")
				switch before {
				case "file":
					os.WriteFile(dst, []byte("old content"), 0o600)
				case "emptydir":
					os.Mkdir(dst, 0o755)
				case "symlink":
					os.Symlink("f000", dst)
				}
				tn, err := newTempNames(dir)
				if err != nil {
					t.Fatal(err)
				}
				tn.link = m
				buf := make([]byte, 100) // smaller than the file: several writes
				if err := writeFile(context.Background(), im, tn, ino, dst, buf, false); err != nil {
					t.Fatal(err)
				}
				fi, err := os.Lstat(dst)
				if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
					t.Fatalf("%s: %v %v, want a regular file with mode 0644", dst, fi, err)
				}
				if got, _ := os.ReadFile(dst); !bytes.Equal(got, want["f001"]) {
					t.Errorf("content differs")
				}
				checkNoLeftovers(t, dir)
			})
		}
	}
}

// TestWriteFileCanceled: a write stopped by its context leaves nothing.
func TestWriteFileCanceled(t *testing.T) {
	img, _ := interleaved(t, 2, 4, 3000)
	im, err := godwarfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	ino, _ := im.Lookup("f002")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, m := range []linkMode{linkNone, linkEmptyPath, linkProc} {
		dir := t.TempDir()
		tn, err := newTempNames(dir)
		if err != nil {
			t.Fatal(err)
		}
		if m != linkNone && tn.link == linkNone {
			continue
		}
		tn.link = m
		if err := writeFile(ctx, im, tn, ino, filepath.Join(dir, "f002"), make([]byte, 64), false); err == nil {
			t.Errorf("mode %d: canceled write succeeded", m)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("mode %d: left %v", m, ents)
		}
	}
}

// TestArchiveReadsAhead: an archive is written one member at a time, in
// path order, so the blocks of the next members are asked for while one
// is written; the archive holds every file whole.
func TestArchiveReadsAhead(t *testing.T) {
	const nblocks, nfiles, blockLen = 8, 48, 60000
	img, want := interleaved(t, nblocks, nfiles, blockLen)
	im, err := godwarfs.Open(img, &godwarfs.Options{CacheSize: 2 * nblocks * blockLen})
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	var out bytes.Buffer
	if _, err := Extract(im, Config{Output: "-", Format: "gnutar", Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	st := imageaccess.Of(im).Cache.Stats()
	if st.Prefetches == 0 {
		t.Errorf("no block was asked for ahead (%+v)", st)
	}
	t.Logf("%d of %d block loads started ahead of a read", st.Prefetches, st.Decoded)
	n := 0
	for name, m := range readTar(t, &out) {
		if m.typ != '-' {
			continue
		}
		if m.sum != sum(want[name]) {
			t.Errorf("%s: content differs", name)
		}
		n++
	}
	if n != nfiles {
		t.Errorf("%d files in the archive, want %d", n, nfiles)
	}
}

package dedup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/internal/mmap"
	"github.com/godwarfs/godwarfs/metadata"
)

func TestSparseHoles(t *testing.T) {
	root := t.TempDir()
	mk := func(name string, size int64, data map[int64]string) {
		f, err := os.Create(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		for off, d := range data {
			if _, err := f.WriteAt([]byte(d), off); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	mk("allhole", 3<<20, nil)
	mk("huge", 1<<40, map[int64]string{1 << 30: "in the middle"}) // 1 TiB: must become a large hole
	if f, err := os.Open(filepath.Join(root, "huge")); err == nil {
		// The segmenter maps large files; where a 1 TiB mapping is
		// refused (qemu-user's smaller address space) it would read the
		// file into memory instead.
		r, merr := mmap.Map(f, 0, 1<<40)
		f.Close()
		if merr != nil {
			t.Skipf("skipped: cannot map a 1 TiB file here: %v", merr)
		}
		r.Unmap()
	}
	mk("mid", 5<<20, map[int64]string{2 << 20: "x"})
	o := testOpts(root)
	o.BlockSizeBits = 12
	var col collect
	md, st, err := Build(context.Background(), o, col.sink)
	if err != nil {
		t.Fatal(err)
	}
	if st.HoleBytes == 0 {
		t.Skip("filesystem does not report holes (SEEK_HOLE)")
	}
	if md.HoleBlockIndex == nil || *md.HoleBlockIndex != uint32(len(col.blocks)) || len(md.Features) != 1 {
		t.Fatalf("hole_block_index %v features %v blocks %d", md.HoleBlockIndex, md.Features, len(col.blocks))
	}
	if len(md.LargeHoleSize) == 0 {
		t.Errorf("no large holes for a 1 TiB file")
	}
	fsys, err := metadata.NewFS(md)
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.Check(); err != nil {
		t.Fatalf("check: %v", err)
	}
	want := map[string]int64{"allhole": 3 << 20, "huge": 1 << 40, "mid": 5 << 20}
	err = fsys.Walk(func(p string, ino uint32, e metadata.Inode) error {
		p = strings.TrimPrefix(p, "/")
		w, ok := want[p]
		if !ok {
			return nil
		}
		delete(want, p)
		cs, err := fsys.FileChunks(ino)
		if err != nil {
			return err
		}
		var total, holes int64
		for _, c := range cs {
			total += int64(c.Size)
			if c.Hole {
				holes += int64(c.Size)
			}
		}
		if total != w || e.Size != w || holes == 0 {
			t.Errorf("%s: size %d chunks %d holes %d, want %d", p, e.Size, total, holes, w)
		}
		return nil
	})
	if err != nil || len(want) != 0 {
		t.Fatalf("walk: %v, missing %v", err, want)
	}
	// --no-sparse-files: no feature, data stored (zeros dedupe well).
	o.NoSparse = true
	os.Remove(filepath.Join(root, "huge"))
	md, _, err = Build(context.Background(), o, (&collect{}).sink)
	if err != nil {
		t.Fatal(err)
	}
	if md.HoleBlockIndex != nil || len(md.Features) != 0 {
		t.Errorf("holes with NoSparse")
	}
}

func TestSizeCache(t *testing.T) {
	root := t.TempDir()
	// Interleave a repeated piece with unique data so the file needs
	// many chunks; a hole too for the allocated size.
	piece := randBytes(9, 300)
	var data []byte
	for i := range 200 {
		data = append(data, piece...)
		data = append(data, randBytes(uint64(1000+i), 40)...)
	}
	f, _ := os.Create(filepath.Join(root, "many"))
	f.Write(data)
	f.WriteAt([]byte("end"), 4<<20)
	f.Close()
	os.WriteFile(filepath.Join(root, "few"), []byte("few"), 0o644)
	o := testOpts(root)
	o.BlockSizeBits, o.WindowBits, o.WindowStep = 12, 6, 2
	md, _, err := Build(context.Background(), o, (&collect{}).sink)
	if err != nil {
		t.Fatal(err)
	}
	c := md.RegFileSizeCache
	if c == nil || len(c.SizeLookup) != 1 || c.SizeLookup[0].Value != 4<<20+3 {
		t.Fatalf("size cache %+v", c)
	}
	fsys, err := metadata.NewFS(md)
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.Check(); err != nil {
		t.Fatal(err)
	}
}

package godwarfs_test

import (
	"bytes"
	"io/fs"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/fixtures"
)

// TestSharedCacheImages opens two images on one block cache: every file
// of each reads back as it does with a cache of its own, the blocks of
// both together stay within the one capacity, and closing one image
// leaves the other readable.
func TestSharedCacheImages(t *testing.T) {
	paths := []string{
		fixtures.File(t, "reference", "images", "default.dwarfs"),
		fixtures.File(t, "reference", "images", "level-9.dwarfs"),
	}
	const capacity = 1 << 20
	sc := block.NewSharedCache(block.CacheOptions{Capacity: capacity, Workers: 3})
	var shared []*godwarfs.Image
	for _, p := range paths {
		im, err := godwarfs.Open(p, &godwarfs.Options{Cache: sc, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer im.Close()
		shared = append(shared, im)
	}
	files := 0
	for i, p := range paths {
		own, err := godwarfs.Open(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = fs.WalkDir(own, ".", func(name string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			want, err := fs.ReadFile(own, name)
			if err != nil {
				return err
			}
			got, err := fs.ReadFile(shared[i], name)
			if err != nil {
				return err
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: %s differs with the shared cache", p, name)
			}
			files++
			return nil
		})
		own.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	st := sc.Stats()
	if files == 0 || st.Decoded == 0 || st.Capacity != capacity || st.CurrentBytes > capacity || st.PeakBytes > capacity+st.Overcommits*capacity {
		t.Errorf("%d files, shared stats %+v", files, st)
	}
	if sc.Caches() != 2 {
		t.Errorf("%d caches open, want 2", sc.Caches())
	}
	shared[0].Close()
	err := fs.WalkDir(shared[1], ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		_, err = fs.ReadFile(shared[1], name)
		return err
	})
	if err != nil {
		t.Errorf("other image after closing one: %v", err)
	}
	if sc.Caches() != 1 {
		t.Errorf("%d caches open after closing one, want 1", sc.Caches())
	}
}

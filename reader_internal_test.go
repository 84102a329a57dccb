package godwarfs

import (
	"testing"

	"github.com/godwarfs/godwarfs/internal/imagetest"
)

// TestLayoutShared checks that files with many chunks keep their layout
// in the image, so opening one again does not resolve its chunks again,
// while small files do not fill the cache.
func TestLayoutShared(t *testing.T) {
	c := imagetest.NewManyChunks()
	im, err := Open(c.WriteTemp(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	open := func(name string) *File {
		f, err := im.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		return f.(*File)
	}
	a, b := open("many"), open("many")
	if a.layout != b.layout {
		t.Error("two opens of the 100,000-chunk file built two layouts")
	}
	if a.Size() != c.Size(imagetest.ManyChunks) {
		t.Errorf("size %d, want %d", a.Size(), c.Size(imagetest.ManyChunks))
	}
	if x, y := open("few"), open("few"); x.layout == y.layout {
		t.Error("the 1,000-chunk file's layout was cached")
	}
	if n := im.layouts.Len(); n != 1 {
		t.Errorf("%d layouts cached, want 1", n)
	}
}

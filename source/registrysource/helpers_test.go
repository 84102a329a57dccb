package registrysource_test

import (
	"context"
	"io/fs"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/source"
)

func openImage(t *testing.T, src source.Source) *godwarfs.Image {
	t.Helper()
	o := godwarfs.Options{NoCheck: true} // a remote open must not read every block
	if off, ok := source.ImageOffset(src); ok {
		o.ImageOffset, o.ExactOffset = off, true
	}
	im, err := godwarfs.OpenReaderAt(src, src.Size(), src.Name(), &o)
	if err != nil {
		t.Fatalf("open %s: %v", src.Name(), err)
	}
	t.Cleanup(func() { im.Close() })
	return im
}

func openSource(t *testing.T, url string, o source.Options) source.Source {
	t.Helper()
	src, err := source.Open(context.Background(), url, o)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// readAll reads every regular file of im and returns name -> content.
func readAll(t *testing.T, im *godwarfs.Image) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := fs.WalkDir(im, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := fs.ReadFile(im, p)
		out[p] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

package source_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/internal/remotetest"
	"github.com/godwarfs/godwarfs/source"
	_ "github.com/godwarfs/godwarfs/source/remote" // reads http(s)://, s3:// and docker://
)

func TestSibling(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"img.dwarfs", "img.dwarfs.sig"},
		{"/a/b/img.dwarfs", "/a/b/img.dwarfs.sig"},
		{"http://h/a/img.dwarfs", "http://h/a/img.dwarfs.sig"},
		{"https://u:p@h:8080/img.dwarfs?token=x#frag", "https://u:p@h:8080/img.dwarfs.sig?token=x"},
		{"http://h/a%20b/img.dwarfs", "http://h/a%20b/img.dwarfs.sig"},
		{"s3://bucket/dir/img.dwarfs", "s3://bucket/dir/img.dwarfs.sig"},
	} {
		if got := source.Sibling(tc.in, ".sig"); got != tc.want {
			t.Errorf("Sibling(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestReadSmall reads a small file locally and over HTTP, through an
// image's connections and without, and refuses a missing or large one.
func TestReadSmall(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "small"), []byte("hello"), 0o644)
	os.WriteFile(filepath.Join(dir, "big"), make([]byte, 1000), 0o644)
	ng := remotetest.Nginx(t, dir)
	ctx := context.Background()
	share := openSource(t, ng.URL+"/big", source.Options{})
	for _, base := range []string{dir + "/", ng.URL + "/"} {
		for _, sh := range []source.Source{nil, share} {
			b, err := source.ReadSmall(ctx, base+"small", 100, source.Options{}, sh)
			if err != nil || string(b) != "hello" {
				t.Errorf("%ssmall: %q, %v", base, b, err)
			}
			if _, err := source.ReadSmall(ctx, base+"big", 999, source.Options{}, sh); !errors.Is(err, source.ErrTooLarge) || !strings.Contains(err.Error(), base+"big") {
				t.Errorf("%sbig: %v, want too large", base, err)
			}
			_, err = source.ReadSmall(ctx, base+"none", 100, source.Options{}, sh)
			if err == nil || !strings.Contains(err.Error(), base+"none") {
				t.Errorf("%snone: %v", base, err)
			}
			if strings.HasPrefix(base, "http") && !strings.Contains(err.Error(), "404") {
				t.Errorf("%snone: %v does not say 404", base, err)
			}
			if !strings.HasPrefix(base, "http") && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%snone: %v", base, err)
			}
		}
	}
}

//go:build linux && !386 && !arm

package fusefs_test

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/fixtures"
)

// TestCorruptImages mounts every corrupt sample that the library accepts
// and touches everything: the driver must turn problems into errors, not
// crashes or hangs.
func TestCorruptImages(t *testing.T) {
	requireFuse(t)
	imgs := fixtures.Glob(t, "badfs-sample/*.dwarfs")
	mounted := 0
	// Skip the open-time block check so bad blocks surface as read errors.
	gopts := godwarfs.Options{}
	gopts.NoCheck = true
	for _, img := range imgs {
		im, err := godwarfs.Open(img, &gopts)
		if err != nil {
			continue // rejected at open: nothing to mount
		}
		mounted++
		src := fusefs.NewImageSource(im)
		srv := mountSrcNoCleanup(t, src, "")
		buf := make([]byte, 64<<10)
		_ = filepath.WalkDir(srv.Dir(), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if d.Type()&fs.ModeSymlink != 0 {
				_, _ = os.Readlink(p)
				return nil
			}
			if !d.Type().IsRegular() {
				return nil
			}
			if f, err := os.Open(p); err == nil {
				for range 64 { // bounded: sizes may be absurd
					if _, err := f.Read(buf); err != nil {
						if err != io.EOF {
							t.Logf("%s: %s: %v", filepath.Base(img), p, err)
						}
						break
					}
				}
				f.Close()
			}
			return nil
		})
		if err := srv.Unmount(); err != nil {
			t.Errorf("%s: unmount: %v", img, err)
		}
		src.Close()
		im.Close()
	}
	t.Logf("%d of %d corrupt samples opened and were exercised", mounted, len(imgs))
}

//go:build unix

package mkdwarfs

import (
	"path/filepath"
	"testing"

	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/remotetest"
)

// TestRecompressFromURL rewrites an image served by nginx into a local
// file: mkdwarfs -i URL --recompress -o local.
func TestRecompressFromURL(t *testing.T) {
	for _, name := range []string{"default", "pack-all"} {
		in := fixtures.File(t, "reference", "images", name+".dwarfs")
		ng := remotetest.Nginx(t, filepath.Dir(in))
		out := filepath.Join(t.TempDir(), "new.dwarfs")
		mk(t, "-i", ng.URL+"/"+name+".dwarfs", "-o", out, "--recompress", "-l", "1", "--log-level", "warn")
		compareSnapshots(t, snapshot(t, in), snapshot(t, out))
	}
}

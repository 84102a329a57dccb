package dwarfsck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/remotetest"
)

// TestRemoteIntegrity runs dwarfsck --check-integrity on every fixture
// image served by nginx and by SeaweedFS; the summary must match the one
// for the local file.
func TestRemoteIntegrity(t *testing.T) {
	imgs := good(t)
	ng := remotetest.Nginx(t, fixtures.Require(t))
	check := func(t *testing.T, img fixtures.Image, url string) {
		rc, out, errs := runck("--check-integrity", "-d", "2", url)
		if rc != 0 {
			t.Errorf("%s: rc %d: %s", url, rc, errs)
			return
		}
		_, local, _ := runck("-d", "2", img.Path)
		if out != strings.ReplaceAll(local, img.Path, url) && out != local {
			t.Errorf("%s: output differs from the local file's:\n%s\nlocal:\n%s", url, out, local)
		}
	}
	t.Run("http", func(t *testing.T) {
		for _, img := range imgs {
			rel, err := filepath.Rel(fixtures.Dir(), img.Path)
			if err != nil {
				t.Fatal(err)
			}
			check(t, img, ng.URL+"/"+filepath.ToSlash(rel))
		}
	})
	t.Run("s3", func(t *testing.T) {
		w := remotetest.SeaweedFS(t)
		w.Bucket(t, "dwarfsck")
		for _, img := range imgs {
			w.Upload(t, "dwarfsck", img.Name+".dwarfs", img.Path)
		}
		w.Env(t)
		for _, img := range imgs {
			check(t, img, "s3://dwarfsck/"+img.Name+".dwarfs")
		}
	})
	// A damaged block is found over HTTP too.
	raw, err := os.ReadFile(imgs[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ng2 := remotetest.Nginx(t, dir)
	raw[len(raw)/4] ^= 0x40
	os.WriteFile(filepath.Join(dir, "bad.dwarfs"), raw, 0o644)
	rc, _, errs := runck("--check-integrity", ng2.URL+"/bad.dwarfs")
	if rc == 0 || !strings.Contains(errs, ng2.URL+"/bad.dwarfs") {
		t.Errorf("damaged remote image: rc %d, %q", rc, errs)
	}
}

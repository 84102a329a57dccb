//go:build unix

package dwarfsextract

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/manifest"
	"github.com/godwarfs/godwarfs/internal/remotetest"
)

// TestExtractRemote extracts images served by nginx and SeaweedFS.
func TestExtractRemote(t *testing.T) {
	fxs := fixturesFor(t)
	ng := remotetest.Nginx(t, fixtures.Require(t))
	root := os.Geteuid() == 0
	for _, fx := range fxs {
		rel, err := filepath.Rel(fixtures.Dir(), fx.image)
		if err != nil {
			t.Fatal(err)
		}
		want, err := manifest.ParseFile(fx.manifest)
		if err != nil {
			t.Fatal(err)
		}
		run := func(t *testing.T, url string) {
			if strings.Contains(fx.image, "nanosecond") {
				fixtures.SkipUnlessStatNanoseconds(t)
			}
			dir := t.TempDir()
			args := []string{"-i", url, "-o", dir}
			if !root {
				args = append(args, "--continue-on-error")
			}
			if rc, _, errs := runx(args...); rc != 0 {
				t.Fatalf("%s: rc %d: %s", url, rc, errs)
			}
			got, err := manifest.FromDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			compare(t, got, want, root)
		}
		t.Run("http "+filepath.Base(fx.image), func(t *testing.T) { run(t, ng.URL+"/"+filepath.ToSlash(rel)) })
	}
	t.Run("s3", func(t *testing.T) {
		w := remotetest.SeaweedFS(t)
		w.Bucket(t, "extract")
		for _, fx := range fxs {
			w.Upload(t, "extract", filepath.Base(fx.image), fx.image)
		}
		w.Env(t)
		for _, fx := range fxs {
			if strings.Contains(fx.image, "nanosecond") && !fixtures.StatNanoseconds(t) {
				t.Logf("%s: skipped: stat reads whole seconds here (qemu-user's s390x stat drops nanoseconds)", filepath.Base(fx.image))
				continue
			}
			want, err := manifest.ParseFile(fx.manifest)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			args := []string{"-i", "s3://extract/" + filepath.Base(fx.image), "-o", dir}
			if !root {
				args = append(args, "--continue-on-error")
			}
			if rc, _, errs := runx(args...); rc != 0 {
				t.Fatalf("%s: rc %d: %s", fx.image, rc, errs)
			}
			got, err := manifest.FromDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			compare(t, got, want, root)
		}
	})
}

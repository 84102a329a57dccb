//go:build unix

package dwarfsextract

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/internal/testimage"
)

// damagedImage writes a testimage.Spread whose block 1 fails its checksum:
// files b and e cannot be read, a, c and d can.
func damagedImage(t *testing.T) (string, *testimage.Spread) {
	t.Helper()
	sp, err := testimage.NewSpread("zstd", 3<<10)
	if err != nil {
		t.Fatal(err)
	}
	im, err := godwarfs.OpenReaderAt(bytes.NewReader(sp.Image), int64(len(sp.Image)), "probe", nil)
	if err != nil {
		t.Fatal(err)
	}
	bi := imageaccess.Of(im).Blocks
	s := bi.Blocks()[1]
	bad := bytes.Clone(sp.Image)
	bad[bi.Offset()+s.DataOffset+s.Length/2] ^= 0x55
	im.Close()
	p := filepath.Join(t.TempDir(), "damaged.dwarfs")
	if err := os.WriteFile(p, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, sp
}

// checkNoDamage: every name in dir is either a file of sp with exactly its
// content, or absent; no temporary file is left behind.
func checkNoDamage(t *testing.T, dir string, sp *testimage.Spread, wantMissing ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range ents {
		want, ok := sp.Files[e.Name()]
		if !ok {
			t.Errorf("left behind: %s", e.Name())
			continue
		}
		seen[e.Name()] = true
		if got, err := os.ReadFile(filepath.Join(dir, e.Name())); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: wrong content under its final name (%v)", e.Name(), err)
		}
	}
	for _, m := range wantMissing {
		if seen[m] {
			t.Errorf("%s needs the damaged block but exists", m)
		}
	}
}

// TestDamagedBlock: a damaged block fails the extraction, leaving no file
// of wrong content under a final name and no temporary files; with
// --continue-on-error every failed path is reported, every other file is
// extracted and the exit status is the reference's 2.
func TestDamagedBlock(t *testing.T) {
	img, sp := damagedImage(t)

	dir := t.TempDir()
	rc, _, errs := runx("-i", img, "-o", dir, "-n", "1")
	if rc != 1 || !strings.Contains(errs, img) {
		t.Errorf("rc %d, stderr %q: want 1 naming the image", rc, errs)
	}
	checkNoDamage(t, dir, sp, "b", "e")

	dir = t.TempDir()
	rc, _, errs = runx("-i", img, "-o", dir, "--continue-on-error")
	if rc != 2 {
		t.Errorf("--continue-on-error: rc %d, want 2: %s", rc, errs)
	}
	for _, name := range []string{"b", "e"} {
		if !strings.Contains(errs, img+": "+name+": ") {
			t.Errorf("failed path %s not reported: %q", name, errs)
		}
	}
	if strings.Count(errs, "warning") != 2 {
		t.Errorf("want exactly two warnings: %q", errs)
	}
	checkNoDamage(t, dir, sp, "b", "e")
	for _, name := range []string{"a", "c", "d"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s not extracted: %v", name, err)
		}
	}

	// A second run into a tree holding good copies keeps them: a file that
	// cannot be extracted does not replace what is there.
	good := filepath.Join(t.TempDir(), "good.dwarfs")
	if err := os.WriteFile(good, sp.Image, 0o644); err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	if rc, _, errs := runx("-i", good, "-o", dir); rc != 0 {
		t.Fatalf("good image: rc %d %s", rc, errs)
	}
	if rc, _, _ := runx("-i", img, "-o", dir, "--continue-on-error"); rc != 2 {
		t.Errorf("second run: rc %d, want 2", rc)
	}
	checkNoDamage(t, dir, sp)
	if len(sp.Files) != 5 {
		t.Fatal("spread changed")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 5 {
		t.Errorf("%d entries after the second run, want the 5 good files", len(ents))
	}
}

// TestDamagedArchive: an archive that cannot be written whole is not
// written at all: with or without --continue-on-error, a member whose
// data cannot be read fails the archive, and nothing is left under its
// name or beside it.
func TestDamagedArchive(t *testing.T) {
	img, _ := damagedImage(t)
	for _, tc := range []struct{ format, name string }{
		{"pax", "x.tar"}, {"gnutar", "x.tar"}, {"ustar", "x.tar"}, {"auto", "x.tar.gz"}, {"zip", "x.zip"}, {"newc", "x.cpio"},
	} {
		for _, cont := range []bool{false, true} {
			dir := t.TempDir()
			args := []string{"-i", img, "-f", tc.format, "-o", filepath.Join(dir, tc.name)}
			if cont {
				args = append(args, "--continue-on-error")
			}
			rc, _, errs := runx(args...)
			if rc != 1 || !strings.Contains(errs, img) {
				t.Errorf("%s %s continue=%v: rc %d, stderr %q: want 1 naming the image", tc.format, tc.name, cont, rc, errs)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("%s %s continue=%v: left behind %v", tc.format, tc.name, cont, ents)
			}
		}
	}
}

//go:build refdwarfs

package mkdwarfs

// Run beside the reference tools:
//
//	REF_DWARFS=DIR go test -tags refdwarfs -run TestCategorizeAgainstReference ./internal/mkdwarfs/

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
)

// TestCategorizeAgainstReference builds formatTree with both mkdwarfs
// (REF_DWARFS: the directory of the reference tools; skipped without it)
// and compares the category tables; the reference dwarfsck must accept
// godwarfs's image and its dwarfsextract restore the tree.
func TestCategorizeAgainstReference(t *testing.T) {
	dir := os.Getenv("REF_DWARFS")
	if dir == "" {
		t.Skip("REF_DWARFS is not set: no reference tools to compare with")
	}
	src := formatTree(t)
	out := t.TempDir()
	ref, ours := filepath.Join(out, "ref.dwarfs"), filepath.Join(out, "ours.dwarfs")
	args := []string{"-i", src, "--categorize", "-C", "pcmaudio/waveform::zstd", "-C", "fits/image::zstd", "--no-history"}
	if b, err := exec.Command(filepath.Join(dir, "mkdwarfs"), append(args, "-o", ref)...).CombinedOutput(); err != nil {
		t.Fatalf("reference mkdwarfs: %v\n%s", err, b)
	}
	mk(t, append(args, "-o", ours)...)
	_, rmd := readBack(t, ref)
	_, omd := readBack(t, ours)
	for _, f := range []struct {
		name      string
		ref, ours any
	}{
		{"category_names", rmd.CategoryNames, omd.CategoryNames},
		{"block_categories", rmd.BlockCategories, omd.BlockCategories},
		{"category_metadata_json", rmd.CategoryMetadataJSON, omd.CategoryMetadataJSON},
		{"block_category_metadata", rmd.BlockCategoryMetadata, omd.BlockCategoryMetadata},
	} {
		if !reflect.DeepEqual(f.ref, f.ours) {
			t.Errorf("%s:\nreference %v\ngodwarfs  %v", f.name, f.ref, f.ours)
		}
	}
	if b, err := exec.Command(filepath.Join(dir, "dwarfsck"), "--check-integrity", ours).CombinedOutput(); err != nil {
		t.Errorf("reference dwarfsck --check-integrity: %v\n%s", err, b)
	}
	x := filepath.Join(out, "x")
	os.Mkdir(x, 0o755)
	if b, err := exec.Command(filepath.Join(dir, "dwarfsextract"), "-i", ours, "-o", x).CombinedOutput(); err != nil {
		t.Fatalf("reference dwarfsextract: %v\n%s", err, b)
	}
	compareTrees(t, expected(t, src), expected(t, x), cmpOpts{skipTime: true})
}

//go:build unix

package dwarfsextract

// These tests need a case-sensitive file system to make their colliding
// source trees on; Windows's side is TestWindowsCaseCollisions, which
// runs the tools under Wine.

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/mkdwarfs"
)

// TestFoldsCaseHere: this test's temporary directory is case-sensitive
// (Linux, no casefold attribute), and the probe leaves nothing behind.
func TestFoldsCaseHere(t *testing.T) {
	dir := t.TempDir()
	folds, err := foldsCase(dir)
	if err != nil || folds {
		t.Fatalf("foldsCase(%s) = %v, %v; want false", dir, folds, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the probe left %v", ents)
	}
	if _, err := foldsCase(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("probe of a missing directory: %v", err)
	}
}

// collidingImage packs a tree whose names collide on a target that folds
// case, and returns the image's path.
func collidingImage(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	for name, data := range map[string]string{
		"CASE": "all", "Case": "upper", "case": "lower", "case~2": "literal",
		"Dir/x": "1", "dir/y": "2", "dir/sub/z": "3",
		"Ä.txt": "A-umlaut", "ä.txt": "a-umlaut", "keep.txt": "keep",
	} {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	img := filepath.Join(t.TempDir(), "case.dwarfs")
	var errb bytes.Buffer
	if rc := mkdwarfs.Main(context.Background(), []string{"mkdwarfs", "-i", src, "-o", img, "-l", "1", "--log-level=error"}, cli.Stdio{Out: io.Discard, Err: &errb}); rc != 0 {
		t.Fatalf("mkdwarfs: %d %s", rc, errb.String())
	}
	return img
}

// tree lists dir's files as path=content, directories as path/.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			out = append(out, rel+"/")
			return nil
		}
		b, err := os.ReadFile(p)
		out = append(out, rel+"="+string(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestCaseCollisions: on a target that folds case (the probe answers
// yes), each --case-collision mode keeps the first of each colliding
// group under its name, in the image's order, and deals with the others
// as the manual says.
func TestCaseCollisions(t *testing.T) {
	img := collidingImage(t)
	for _, tc := range []struct {
		mode   string
		want   []string
		errors int
		warn   []string // substrings of the warnings
		err    string
	}{{
		mode:   CaseSkip,
		want:   []string{"CASE=all", "Dir/", "Dir/x=1", "case~2=literal", "keep.txt=keep", "Ä.txt=A-umlaut"},
		errors: 4,
		warn: []string{
			"Case: differs only in letter case from CASE, which this case-insensitive target already holds (skipped)",
			"case: differs only in letter case from CASE",
			"dir: differs only in letter case from Dir",
			"ä.txt: differs only in letter case from Ä.txt",
		},
	}, {
		mode: CaseRename,
		want: []string{"CASE=all", "Case~2=upper", "Dir/", "Dir/x=1", "case~2~2=literal", "case~3=lower",
			"dir~2/", "dir~2/sub/", "dir~2/sub/z=3", "dir~2/y=2", "keep.txt=keep", "Ä.txt=A-umlaut", "ä.txt~2=a-umlaut"},
		warn: []string{
			"Case: differs only in letter case from CASE on this case-insensitive target: extracted as Case~2",
			"case: differs only in letter case from CASE on this case-insensitive target: extracted as case~3",
			"case~2: differs only in letter case from Case~2 on this case-insensitive target: extracted as case~2~2",
			"dir: differs only in letter case from Dir on this case-insensitive target: extracted as dir~2",
		},
	}, {
		mode: CaseError,
		err:  "CASE and Case differ only in letter case",
	}} {
		t.Run(tc.mode, func(t *testing.T) {
			im, err := godwarfs.Open(img, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer im.Close()
			out := filepath.Join(t.TempDir(), "out")
			var errb bytes.Buffer
			st, err := ExtractContext(context.Background(), im, Config{
				Output: out, CaseCollision: tc.mode, Workers: 2, Stderr: &errb,
				probeCase: func(string) (bool, error) { return true, nil },
			})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				if got := listTree(t, out); len(got) != 0 {
					t.Errorf("wrote %v before refusing", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := listTree(t, out); !slices.Equal(got, tc.want) {
				t.Errorf("extracted\n%q\nwant\n%q", got, tc.want)
			}
			if st.Errors != tc.errors {
				t.Errorf("%d entries not extracted, want %d", st.Errors, tc.errors)
			}
			for _, w := range tc.warn {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("warnings lack %q:\n%s", w, errb.String())
				}
			}
		})
	}
}

// A case-sensitive target extracts every name, whatever the mode.
func TestNoCaseFoldingNoCollision(t *testing.T) {
	img := collidingImage(t)
	out := filepath.Join(t.TempDir(), "out")
	rc, _, errs := runx("-i", img, "-o", out, "--case-collision=error")
	if rc != 0 {
		t.Fatalf("rc %d: %s", rc, errs)
	}
	if got := listTree(t, out); len(got) != 13 {
		t.Errorf("extracted %d entries, want all 13: %q", len(got), got)
	}
	if rc, _, errs := runx("-i", img, "-o", out, "--case-collision=fold"); rc != 1 || !strings.Contains(errs, `invalid --case-collision "fold"`) {
		t.Errorf("bad mode: rc %d %q", rc, errs)
	}
}

//go:build unix

package mkdwarfs

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/metadata"
)

// dataOrder lists the image's regular files with data by where their
// first data chunk lies in the block stream.
func dataOrder(t *testing.T, img string) []string {
	t.Helper()
	var out []string
	for _, p := range dataPositions(t, img) {
		out = append(out, p.name)
	}
	return out
}

// dataPos is where a file's first data chunk lies.
type dataPos struct {
	name       string
	block, off uint64
}

// dataPositions lists the image's regular files with data by where their
// first data chunk lies in the block stream.
func dataPositions(t *testing.T, img string) []dataPos {
	t.Helper()
	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	bi, err := block.OpenImage(f, fi.Size(), block.Options{ImageOffset: -1})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := bi.ReadDecompressed(bi.Find(block.SectionMetadataSchema)[0])
	if err != nil {
		t.Fatal(err)
	}
	mb, err := bi.ReadDecompressed(bi.Find(block.SectionMetadata)[0])
	if err != nil {
		t.Fatal(err)
	}
	md, err := metadata.Decode(sb, mb)
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := metadata.NewFS(md)
	if err != nil {
		t.Fatal(err)
	}
	var ps []dataPos
	err = mfs.Walk(func(p string, ino uint32, e metadata.Inode) error {
		if e.Mode&0o170000 != 0o100000 {
			return nil
		}
		cs, err := mfs.FileChunks(ino)
		if err != nil {
			return err
		}
		for _, c := range cs {
			if !c.Hole {
				ps = append(ps, dataPos{strings.TrimPrefix(p, "/"), uint64(c.Block), uint64(c.Offset)})
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(ps, func(a, b dataPos) int {
		if a.block != b.block {
			return int(a.block) - int(b.block)
		}
		return int(a.off) - int(b.off)
	})
	return ps
}

// orderTree writes files with distinct random contents.
func orderTree(t *testing.T, names ...string) string {
	t.Helper()
	root := t.TempDir()
	r := rand.New(rand.NewPCG(9, 9))
	for i, n := range names {
		p := filepath.Join(root, n)
		os.MkdirAll(filepath.Dir(p), 0o755)
		b := make([]byte, 3000+i*100)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestOrderExplicit(t *testing.T) {
	src := orderTree(t, "a", "b", "c/d", "c/e", "f", "g")
	dir := t.TempDir()
	list := filepath.Join(dir, "order")
	// A leading / is allowed; unknown paths are ignored; unlisted files
	// follow the listed ones in scan order.
	os.WriteFile(list, []byte("g\n/c/e\nnot/there\na\nf\n"), 0o644)
	img := filepath.Join(dir, "x.dwarfs")
	mk(t, "-i", src, "-o", img, "-l", "3", "--log-level", "warn", "--order", "explicit:file="+list)
	if got, want := dataOrder(t, img), []string{"g", "c/e", "a", "f", "b", "c/d"}; !slices.Equal(got, want) {
		t.Errorf("data order %v, want %v", got, want)
	}
}

func TestOrderInputListNone(t *testing.T) {
	src := orderTree(t, "a", "b", "c/d", "c/e", "f")
	dir := t.TempDir()
	img := filepath.Join(dir, "x.dwarfs")
	list := "f\nc/d\na\nc/e\nb\n"
	for _, tc := range []struct {
		order string
		want  []string
	}{
		{"none", []string{"f", "c/d", "a", "c/e", "b"}}, // the list's order, as the reference
		{"path", []string{"a", "b", "c/d", "c/e", "f"}},
	} {
		var stdout, stderr strings.Builder
		code := Main(t.Context(), []string{"mkdwarfs", "-i", src, "-o", img, "-f", "--log-level", "warn", "--input-list", "-", "--order", tc.order}, cli.Stdio{In: strings.NewReader(list), Out: &stdout, Err: &stderr})
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		if got := dataOrder(t, img); !slices.Equal(got, tc.want) {
			t.Errorf("--order=%s: data order %v, want %v", tc.order, got, tc.want)
		}
	}
}

func TestOrderNilsimsaOptions(t *testing.T) {
	src := makeTree(t)
	want := expected(t, src)
	dir := t.TempDir()
	for i, v := range []string{"nilsimsa:max-children=1:max-cluster-size=1000000", "nilsimsa:max-cluster-size=2", "nilsimsa:max-children=2k"} {
		img := filepath.Join(dir, fmt.Sprint(i, ".dwarfs"))
		mk(t, "-i", src, "-o", img, "--log-level", "warn", "--order", v, "--num-segmenter-workers", "3")
		got, _ := readBack(t, img)
		compareTrees(t, want, got, cmpOpts{})
	}
}

// TestOrderFamilies: two unrelated projects with six releases each. By
// default each project's files are stored together; families=0 orders
// the tree as one. Both images read back the same tree.
func TestOrderFamilies(t *testing.T) {
	root := t.TempDir()
	r := rand.New(rand.NewPCG(3, 3))
	for _, proj := range []string{"alpha", "beta"} {
		base := make([]byte, 20000)
		for j := range base {
			base[j] = byte(r.Uint32())
		}
		for v := range 6 {
			b := slices.Clone(base)
			for range 20 {
				b[r.IntN(len(b))] = byte(r.Uint32())
			}
			p := filepath.Join(root, proj, fmt.Sprintf("%d.0", v), "lib.js")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := expected(t, root)
	dir := t.TempDir()
	for _, tc := range []struct {
		order, note string
		grouped     bool
	}{
		{"nilsimsa", "by nilsimsa in 2 families of top-level directories", true},
		{"nilsimsa:families=0", "by nilsimsa [", false},
	} {
		img := filepath.Join(dir, tc.order+".dwarfs")
		code, _, stderr := run("-i", root, "-o", img, "--order", tc.order, "--log-level", "verbose", "-S", "16")
		if code != 0 {
			t.Fatalf("--order=%s: exit %d: %s", tc.order, code, stderr)
		}
		if !strings.Contains(stderr, tc.note) {
			t.Errorf("--order=%s: the log does not say %q:\n%s", tc.order, tc.note, stderr)
		}
		got, _ := readBack(t, img)
		compareTrees(t, want, got, cmpOpts{})
		if !tc.grouped {
			continue
		}
		ps := dataPositions(t, img)
		runs := 1
		for i := 1; i < len(ps); i++ {
			prev, _, _ := strings.Cut(ps[i-1].name, "/")
			if cur, _, _ := strings.Cut(ps[i].name, "/"); cur != prev {
				runs++
				// Each project is more than a block (64 KiB): the second
				// starts a block of its own.
				if ps[i].off != 0 {
					t.Errorf("--order=%s: %s starts at offset %d of block %d, want a block of its own", tc.order, ps[i].name, ps[i].off, ps[i].block)
				}
			}
		}
		if runs != 2 {
			t.Errorf("--order=%s: the projects interleave in the blocks: %v", tc.order, ps)
		}
	}
	// The same image whatever the number of workers.
	var first []byte
	for _, n := range []string{"1", "3"} {
		img := filepath.Join(dir, "n"+n+".dwarfs")
		mk(t, "-i", root, "-o", img, "-l", "7", "-S", "16", "-N", n, "--num-segmenter-workers", n,
			"--no-history-timestamps", "--no-history-command-line", "--no-create-timestamp", "--log-level", "error")
		b, err := os.ReadFile(img)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = b
		} else if !bytes.Equal(b, first) {
			t.Errorf("the image with -N %s differs from the one with -N 1", n)
		}
	}
}

func TestOrderBadValues(t *testing.T) {
	src := orderTree(t, "a")
	img := filepath.Join(t.TempDir(), "x.dwarfs")
	for _, tc := range []struct{ order, want string }{
		{"nilsimsa:max-children=0", "max-children must be a positive number"},
		{"nilsimsa:max-cluster-size=x", "max-cluster-size must be a positive number"},
		{"nilsimsa:depth=3", `unknown option "depth"`},
		{"nilsimsa:max-children", `option "max-children" is not NAME=VALUE`},
		{"nilsimsa:families=2", "families must be 0 or 1"},
		{"path:max-children=3", "path takes no options"},
		{"explicit", "explicit needs file=FILE"},
		{"explicit:file=/does/not/exist", "reading the explicit order file: open /does/not/exist: no such file or directory"},
		{"random", `invalid --order "random"`},
		{"incompressible::path", "cannot configure category-specific options without any categories"},
		{"cat::path", "cannot configure category-specific options without any categories"},
	} {
		code, _, stderr := run("-i", src, "-o", img, "--order", tc.order)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("--order=%s: exit %d, stderr %q, want %q", tc.order, code, stderr, tc.want)
		}
		if _, err := os.Stat(img); err == nil {
			t.Errorf("--order=%s: image written", tc.order)
		}
	}
}

// TestInputListWithoutInput: without -i the list's paths are relative to
// the current directory; absolute paths must lie below it; the listed
// entries are taken whatever their type; -F cannot be combined with it.
func TestInputListWithoutInput(t *testing.T) {
	src := orderTree(t, "a", "b", "c/d")
	if err := syscall.Mkfifo(filepath.Join(src, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := orderTree(t, "elsewhere")
	img := filepath.Join(t.TempDir(), "x.dwarfs")
	t.Chdir(src)
	list := strings.Join([]string{"b", filepath.Join(src, "c/d"), filepath.Join(outside, "elsewhere"), "fifo"}, "\n")
	var stdout, stderr strings.Builder
	code := Main(t.Context(), []string{"mkdwarfs", "--input-list", "-", "-o", img, "--log-level", "warn"}, cli.Stdio{In: strings.NewReader(list), Out: &stdout, Err: &stderr})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if want := "ignoring " + filepath.Join(outside, "elsewhere") + ": not below the input"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	got, _ := readBack(t, img)
	var names []string
	for p := range got {
		names = append(names, p)
	}
	slices.Sort(names)
	if want := []string{"", "b", "c", "c/d", "fifo"}; !slices.Equal(names, want) {
		t.Errorf("entries %q, want %q", names, want)
	}
	if m := got["fifo"].mode; m&syscall.S_IFMT != syscall.S_IFIFO {
		t.Errorf("fifo mode %o", m)
	}

	code, _, errOut := run("--input-list", "-", "-o", img, "-f", "-F", "- b")
	if code == 0 || !strings.Contains(errOut, "--input-list cannot be combined with --filter") {
		t.Errorf("-F with --input-list: exit %d, %q", code, errOut)
	}
	code, _, errOut = run("-o", img, "-f")
	if code == 0 || !strings.Contains(errOut, "input") {
		t.Errorf("neither -i nor --input-list: exit %d, %q", code, errOut)
	}
}

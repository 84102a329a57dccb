//go:build unix

package mkdwarfs

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/metadata"
)

// mixedTree makes a tree of compressible text, random (incompressible)
// data and files that hold both.
func mixedTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 11))
	rnd := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	text := func(n int, seed int) []byte {
		var b bytes.Buffer
		for i := 0; b.Len() < n; i++ {
			b.WriteString("line ")
			b.WriteString(strings.Repeat(string(rune('a'+(i*seed)%26)), 1+i%17))
			b.WriteString(" of some compressible text\n")
		}
		return b.Bytes()[:n]
	}
	write := func(name string, data []byte) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	random := rnd(1_500_000)
	write("doc/a.txt", text(200_000, 3))
	write("doc/b.txt", text(70_000, 5))
	write("bin/random.gz", random)
	write("bin/copy.gz", random)
	write("bin/small.png", rnd(40_000))
	write("bin/tiny.bin", rnd(200)) // below --incompressible-min-input-size
	write("doc/short.txt", bytes.Repeat([]byte("short "), 40))
	write("empty", nil)
	// text, 2 MiB random, text: whole file compressible, but with
	// --incompressible-fragments its middle is incompressible.
	write("mixed.dat", slices.Concat(text(1<<20, 7), rnd(2<<20), text(1<<20, 9)))
	// Sparse: random data between holes.
	f, err := os.Create(filepath.Join(root, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(rnd(300_000), 2<<20); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return root
}

// blockInfo returns each block's compression and the blocks each regular
// file's chunks use.
func blockInfo(t *testing.T, img string) ([]block.Compression, map[string][]uint32) {
	t.Helper()
	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	bi, err := block.OpenImage(f, fi.Size(), block.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var comps []block.Compression
	for i := range bi.NumBlocks() {
		s, _ := bi.Block(i)
		comps = append(comps, s.Compression)
	}
	_, md := readBack(t, img)
	mfs, err := metadata.NewFS(md)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]uint32{}
	err = mfs.Walk(func(p string, ino uint32, e metadata.Inode) error {
		if e.Mode&syscall.S_IFMT != syscall.S_IFREG {
			return nil
		}
		cs, err := mfs.FileChunks(ino)
		if err != nil {
			return err
		}
		var bl []uint32
		for _, c := range cs {
			if !c.Hole && !slices.Contains(bl, c.Block) {
				bl = append(bl, c.Block)
			}
		}
		files[strings.TrimPrefix(p, "/")] = bl
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return comps, files
}

func TestCategorizeIncompressible(t *testing.T) {
	src := mixedTree(t)
	want := expected(t, src)
	out := t.TempDir()
	const inc, def = "incompressible", "<default>"
	none := []block.Compression{block.CompNone}
	zstdOrNone := []block.Compression{block.CompZSTD, block.CompNone}
	for _, tc := range []struct {
		name string
		args []string
		// categories of the files' blocks
		cats map[string][]string
		// compression of the incompressible and the default blocks
		// (a default block of random data is stored, NONE, too), and
		// which must occur
		incComp, defComp []block.Compression
		mustSee          []block.Compression
	}{
		{"whole-files", []string{"--categorize"},
			map[string][]string{"doc/a.txt": {def}, "bin/random.gz": {inc}, "bin/small.png": {inc}, "bin/tiny.bin": {def}, "mixed.dat": {def}, "sparse": {inc}},
			none, zstdOrNone, []block.Compression{block.CompZSTD, block.CompNone}},
		{"fragments", []string{"--categorize=incompressible", "--incompressible-fragments"},
			map[string][]string{"doc/a.txt": {def}, "bin/random.gz": {inc}, "mixed.dat": {def, inc}, "sparse": {inc}},
			none, []block.Compression{block.CompZSTD}, nil},
		// A ratio of 0 makes every examined file incompressible.
		{"per-category-options", []string{"--categorize", "--incompressible-ratio", "0", "-C", "incompressible::lzma:level=1", "-C", "null",
			"--order=incompressible::none", "--order=<default>::nilsimsa:max-cluster-size=100", "-W", "incompressible::0", "-w", "<default>::2", "-B", "incompressible,hotness::2",
			"--bloom-filter-size", "pcmaudio/waveform::3"},
			map[string][]string{"doc/b.txt": {inc}, "bin/copy.gz": {inc}, "bin/tiny.bin": {def}},
			[]block.Compression{block.CompLZMA, block.CompNone}, none, []block.Compression{block.CompLZMA}},
		{"block-size", []string{"--categorize", "--incompressible-block-size", "64k", "--incompressible-min-input-size", "100k", "--incompressible-ratio", "0.9"},
			map[string][]string{"bin/random.gz": {inc}, "bin/small.png": {def}, "mixed.dat": {def}},
			none, zstdOrNone, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := filepath.Join(out, tc.name+".dwarfs")
			// A fast zstd level keeps the test quick; tc.args may override it.
			mk(t, append([]string{"-i", src, "-o", img, "-S", "20", "--log-level", "warn", "-C", "zstd:level=5"}, tc.args...)...)
			got, md := readBack(t, img)
			compareTrees(t, want, got, cmpOpts{})
			if !md.HasCategoryNames || !md.HasBlockCategories || !md.HasCategoryMetadataJSON || !md.HasBlockCategoryMetadata {
				t.Fatalf("category fields missing: names %v, block categories %v", md.HasCategoryNames, md.HasBlockCategories)
			}
			comps, files := blockInfo(t, img)
			if len(md.BlockCategories) != len(comps) {
				t.Fatalf("%d block categories for %d blocks", len(md.BlockCategories), len(comps))
			}
			if len(md.CategoryNames) != 2 || !slices.Contains(md.CategoryNames, def) || !slices.Contains(md.CategoryNames, inc) {
				t.Fatalf("category names %q", md.CategoryNames)
			}
			catOf := func(b uint32) string { return md.CategoryNames[md.BlockCategories[b]] }
			for b, c := range comps {
				allowed := tc.defComp
				if catOf(uint32(b)) == inc {
					allowed = tc.incComp
				}
				if !slices.Contains(allowed, c) {
					t.Errorf("block %d (%s) stored with %v, want one of %v", b, catOf(uint32(b)), c, allowed)
				}
			}
			for _, c := range tc.mustSee {
				if !slices.Contains(comps, c) {
					t.Errorf("no block stored with %v: %v", c, comps)
				}
			}
			for f, wantCats := range tc.cats {
				var cats []string
				for _, b := range files[f] {
					if c := catOf(b); !slices.Contains(cats, c) {
						cats = append(cats, c)
					}
				}
				slices.Sort(cats)
				if !slices.Equal(cats, wantCats) {
					t.Errorf("%s: data in categories %q, want %q", f, cats, wantCats)
				}
			}
		})
	}
}

// Without --categorize there are no categories, and the image is the one
// godwarfs always wrote.
func TestCategorizeOff(t *testing.T) {
	src := mixedTree(t)
	img := filepath.Join(t.TempDir(), "plain.dwarfs")
	mk(t, "-i", src, "-o", img, "-S", "20", "--log-level", "warn", "-C", "zstd:level=5")
	_, md := readBack(t, img)
	if md.HasCategoryNames || md.HasBlockCategories || md.HasCategoryMetadataJSON || md.HasBlockCategoryMetadata {
		t.Errorf("category fields set without --categorize")
	}
	img2 := filepath.Join(t.TempDir(), "nonames.dwarfs")
	mk(t, "-i", src, "-o", img2, "-S", "20", "--log-level", "warn", "--categorize", "--no-category-names", "-C", "zstd:level=5")
	_, md = readBack(t, img2)
	if md.HasCategoryNames || md.HasBlockCategories || md.HasCategoryMetadataJSON || md.HasBlockCategoryMetadata {
		t.Errorf("category fields set with --no-category-names")
	}
	img3 := filepath.Join(t.TempDir(), "nometa.dwarfs")
	mk(t, "-i", src, "-o", img3, "-S", "20", "--log-level", "warn", "--categorize", "--no-category-metadata", "-C", "zstd:level=5")
	_, md = readBack(t, img3)
	if !md.HasCategoryNames || !md.HasBlockCategories || md.HasCategoryMetadataJSON || md.HasBlockCategoryMetadata {
		t.Errorf("--no-category-metadata: names %v, metadata %v", md.HasCategoryNames, md.HasCategoryMetadataJSON)
	}
	// Rebuilding the metadata drops them too.
	img4 := filepath.Join(t.TempDir(), "rebuilt.dwarfs")
	mk(t, "-i", img3, "-o", img4, "--log-level", "warn", "--rebuild-metadata", "--no-category-names")
	_, md = readBack(t, img4)
	if md.HasCategoryNames || md.HasBlockCategories {
		t.Errorf("category fields kept by --rebuild-metadata --no-category-names")
	}
	if code, _, stderr := run("-i", img3, "-o", img4+"x", "--recompress", "--no-category-names"); code != 1 || !strings.Contains(stderr, "needs --rebuild-metadata") {
		t.Errorf("--no-category-names without --rebuild-metadata: exit %d %q", code, stderr)
	}
}

func TestCategorizeOptionErrors(t *testing.T) {
	src := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-C", "incompressible::null"}, "failed to parse value 'incompressible::null' for option '--compression': cannot configure category-specific options without any categories"},
		{[]string{"--categorize", "-C", "foo::null"}, "unknown category: 'foo'"},
		{[]string{"--categorize", "--order", "incompressible::none", "--order", "incompressible::path"}, "duplicate context 'incompressible' for option '--order'"},
		{[]string{"--categorize", "-C", "incompressible::bogus"}, "unknown compression algorithm"},
		{[]string{"--categorize", "-W", "incompressible::40"}, "expected a number from 0 to 24"},
		{[]string{"--categorize=nope"}, "unknown categorizer"},
		{[]string{"--categorize=fits,fits"}, `"fits" given twice`},
		{[]string{"--incompressible-fragments"}, "--incompressible-fragments needs --categorize"},
		{[]string{"--categorize", "--incompressible-ratio", "x"}, "incompressible-ratio"},
		{[]string{"--categorize", "--incompressible-block-size", "0"}, "incompressible-block-size"},
	} {
		code, _, stderr := run(append([]string{"-i", src, "-o", filepath.Join(t.TempDir(), "x")}, tc.args...)...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, %q; want %q", tc.args, code, stderr, tc.want)
		}
	}
}

// Rewriting a categorized image: -C CAT::SPEC applies to that category's
// blocks, and incompressible blocks stay null unless -C says otherwise.
func TestCategorizeRecompress(t *testing.T) {
	src := mixedTree(t)
	want := expected(t, src)
	out := t.TempDir()
	// Ratio 0: every file examined is incompressible, and compressed with
	// zstd, so that recompression is visible.
	in := filepath.Join(out, "in.dwarfs")
	mk(t, "-i", src, "-o", in, "-S", "20", "--log-level", "warn", "--categorize", "--incompressible-ratio", "0",
		"-C", "incompressible::zstd:level=3", "-C", "zstd:level=3")
	const inc = "incompressible"
	for _, tc := range []struct {
		name             string
		args             []string
		incComp, defComp block.Compression
	}{
		{"default-null", []string{"--recompress", "-C", "lzma:level=1"}, block.CompNone, block.CompLZMA},
		{"explicit", []string{"--recompress=block", "-C", "incompressible::lzma:level=1", "-C", "null"}, block.CompLZMA, block.CompNone},
		{"change-block-size", []string{"--change-block-size", "-S", "19", "-C", "incompressible::lzma:level=1", "-C", "null"}, block.CompLZMA, block.CompNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := filepath.Join(out, tc.name+".dwarfs")
			mk(t, append([]string{"-i", in, "-o", img, "--log-level", "warn"}, tc.args...)...)
			got, md := readBack(t, img)
			compareTrees(t, want, got, cmpOpts{})
			comps, _ := blockInfo(t, img)
			seen := map[block.Compression]bool{}
			for b, c := range comps {
				want := tc.defComp
				if md.CategoryNames[md.BlockCategories[b]] == inc {
					want = tc.incComp
				}
				// Blocks of random data are stored whatever -C says.
				if c != want && c != block.CompNone {
					t.Errorf("block %d (%s): %v, want %v", b, md.CategoryNames[md.BlockCategories[b]], c, want)
				}
				seen[c] = true
			}
			for _, c := range []block.Compression{tc.incComp, tc.defComp} {
				if !seen[c] {
					t.Errorf("no block with %v: %v", c, comps)
				}
			}
		})
	}
}

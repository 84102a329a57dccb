//go:build unix

package mkdwarfs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/block"
)

// hotTree is mixedTree with a hard link, and a hotness list naming some
// of its files the ways an analysis_file or a hand-written list does.
func hotTree(t *testing.T) (src, list string) {
	t.Helper()
	src = mixedTree(t)
	if err := os.Link(filepath.Join(src, "doc/short.txt"), filepath.Join(src, "hardlink")); err != nil {
		t.Fatal(err)
	}
	list = filepath.Join(t.TempDir(), "hot.list")
	body := strings.Join([]string{
		"/doc/b.txt",     // as analysis_file writes it
		"bin/random.gz",  // relative; bin/copy.gz has the same content
		"//bin/tiny.bin", // leading slashes go
		"hardlink",       // the second name of doc/short.txt
		"empty",          // no data: no category
		"sparse",         // random data between holes
		"no/such/file",   // ignored
		"./doc/a.txt",    // not normalised: names no file
		"",               // skipped
	}, "\n")
	if err := os.WriteFile(list, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return src, list
}

func TestHotnessCategorizer(t *testing.T) {
	src, list := hotTree(t)
	want := expected(t, src)
	out := t.TempDir()
	const hot, inc, def = "hotness", "incompressible", "<default>"
	for _, tc := range []struct {
		name string
		args []string
		// categories of each file's blocks
		cats map[string][]string
		// category_names, largest first (a sparse file's holes count)
		names []string
		// block compressions allowed per category (nil: any)
		comps map[string][]block.Compression
		warn  string
	}{
		// Listed files (and the file sharing random.gz's content, and
		// the hard link's other name) are hot, the rest default.
		{"hotness", []string{"--categorize=hotness"},
			map[string][]string{"doc/b.txt": {hot}, "bin/random.gz": {hot}, "bin/copy.gz": {hot}, "bin/tiny.bin": {hot},
				"doc/short.txt": {hot}, "hardlink": {hot}, "sparse": {hot}, "empty": nil,
				"doc/a.txt": {def}, "bin/small.png": {def}, "mixed.dat": {def}},
			[]string{hot, def}, nil, ""},
		// Hotness first: listed files are hot whatever their data; the
		// others are examined.
		{"hotness-first", []string{"--categorize=hotness,incompressible"},
			map[string][]string{"doc/b.txt": {hot}, "bin/random.gz": {hot}, "bin/copy.gz": {hot}, "sparse": {hot},
				"bin/tiny.bin": {hot}, "hardlink": {hot}, "doc/a.txt": {def}, "bin/small.png": {inc}},
			[]string{hot, def, inc}, nil, ""},
		// Incompressible first: it keeps what it claims (the random and
		// the sparse files); listed files it does not claim (text, or
		// too small to examine) are hot.
		{"incompressible-first", []string{"--categorize=incompressible,hotness"},
			map[string][]string{"doc/b.txt": {hot}, "bin/random.gz": {inc}, "bin/copy.gz": {inc}, "sparse": {inc},
				"bin/tiny.bin": {hot}, "hardlink": {hot}, "doc/a.txt": {def}, "bin/small.png": {inc}},
			[]string{def, inc, hot}, nil, ""},
		// With fragments the incompressible categorizer claims every file
		// it examines, so only those too small to examine are hot.
		{"incompressible-fragments-first", []string{"--categorize=incompressible,hotness", "--incompressible-fragments"},
			map[string][]string{"doc/b.txt": {def}, "bin/random.gz": {inc}, "bin/tiny.bin": {hot}, "hardlink": {hot}, "mixed.dat": {def, inc}},
			[]string{def, inc, hot}, nil, ""},
		// Per-category options reach the hotness blocks.
		{"per-category", []string{"--categorize=hotness", "-C", "hotness::null", "--order=hotness::path", "-W", "hotness::0", "-B", "hotness::0"},
			map[string][]string{"doc/b.txt": {hot}, "doc/a.txt": {def}},
			[]string{hot, def}, map[string][]block.Compression{hot: {block.CompNone}, def: {block.CompZSTD, block.CompNone}}, ""},
		// As with the reference, --categorize alone does not enable
		// hotness.
		{"implicit", []string{"--categorize"},
			map[string][]string{"doc/b.txt": {def}, "bin/random.gz": {inc}},
			[]string{def, inc}, nil, "warning: --hotness-list has no effect without hotness in --categorize"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := filepath.Join(out, tc.name+".dwarfs")
			stderr := mk(t, append([]string{"-i", src, "-o", img, "-S", "20", "--log-level", "warn", "-C", "zstd:level=5", "--hotness-list", list}, tc.args...)...)
			if tc.warn != "" && !strings.Contains(stderr, tc.warn) {
				t.Errorf("stderr %q, want %q", stderr, tc.warn)
			} else if tc.warn == "" && stderr != "" {
				t.Errorf("unexpected stderr %q", stderr)
			}
			got, md := readBack(t, img)
			compareTrees(t, want, got, cmpOpts{})
			if !slices.Equal(md.CategoryNames, tc.names) {
				t.Errorf("category names %q, want %q", md.CategoryNames, tc.names)
			}
			comps, files := blockInfo(t, img)
			if len(md.BlockCategories) != len(comps) {
				t.Fatalf("%d block categories for %d blocks", len(md.BlockCategories), len(comps))
			}
			catOf := func(b uint32) string { return md.CategoryNames[md.BlockCategories[b]] }
			for b, c := range comps {
				if allowed := tc.comps[catOf(uint32(b))]; allowed != nil && !slices.Contains(allowed, c) {
					t.Errorf("block %d (%s) stored with %v, want one of %v", b, catOf(uint32(b)), c, allowed)
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

// Without a usable list the categorizer claims nothing, with the
// reference's warnings.
func TestHotnessWarnings(t *testing.T) {
	src, _ := hotTree(t)
	empty := filepath.Join(t.TempDir(), "empty.list")
	os.WriteFile(empty, []byte("\n"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		warn string
	}{
		{"no-list", []string{"--categorize=hotness"}, "warning: hotness categorizer: no hotness list provided\n"},
		{"empty-list", []string{"--categorize=hotness", "--hotness-list", empty}, "warning: hotness categorizer: empty hotness list\n"},
		{"not-enabled", []string{"--categorize=incompressible", "--hotness-list", empty}, "warning: --hotness-list has no effect without hotness in --categorize\n"},
		{"no-categorize", []string{"--hotness-list", filepath.Join(src, "missing")}, "warning: --hotness-list has no effect without --categorize=hotness\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := filepath.Join(t.TempDir(), "x.dwarfs")
			stderr := mk(t, append([]string{"-i", src, "-o", img, "-S", "20", "--log-level", "warn", "-l", "1"}, tc.args...)...)
			if stderr != tc.warn {
				t.Errorf("stderr %q, want %q", stderr, tc.warn)
			}
			_, md := readBack(t, img)
			if slices.Contains(md.CategoryNames, "hotness") {
				t.Errorf("category names %q include hotness", md.CategoryNames)
			}
		})
	}
}

func TestHotnessErrors(t *testing.T) {
	src, list := hotTree(t)
	dir := t.TempDir()
	dup := filepath.Join(dir, "dup.list")
	os.WriteFile(dup, []byte("doc/a.txt\nbin/tiny.bin\n/doc/a.txt\n"), 0o644)
	missing := filepath.Join(dir, "missing.list")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--categorize=hotness", "--hotness-list", missing},
			"mkdwarfs: error: could not create categorizer: failed to open file '" + missing + "': no such file or directory\n"},
		{[]string{"--categorize=hotness", "--hotness-list", dir},
			"mkdwarfs: error: could not create categorizer: failed to open file '" + dir + "': is a directory\n"},
		{[]string{"--categorize=hotness", "--hotness-list", dup},
			"mkdwarfs: error: could not create categorizer: " + dup + ": duplicate path in hotness list: '/doc/a.txt'\n"},
		{[]string{"--categorize=hotness,hotness", "--hotness-list", list}, `could not create categorizer: "hotness" given twice`},
		{[]string{"--hotness-list", list, "-C", "hotness::null"},
			"failed to parse value 'hotness::null' for option '--compression': cannot configure category-specific options without any categories"},
		{[]string{"--categorize=hotness", "--hotness-list", list, "-C", "hotness::null", "-C", "hotness::lz4"},
			"duplicate context 'hotness' for option '--compression'"},
	} {
		img := filepath.Join(dir, "x.dwarfs")
		code, _, stderr := run(append([]string{"-i", src, "-o", img}, tc.args...)...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, %q; want %q", tc.args, code, stderr, tc.want)
		}
		if _, err := os.Stat(img); !os.IsNotExist(err) {
			t.Errorf("%q: output left behind (%v)", tc.args, err)
		}
	}
}

// Rewriting an image with a hotness category: -C hotness::ALGO applies to
// its blocks (and a category the image lacks changes nothing).
func TestHotnessRecompress(t *testing.T) {
	src, list := hotTree(t)
	want := expected(t, src)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.dwarfs")
	mk(t, "-i", src, "-o", in, "-S", "20", "--log-level", "warn", "-C", "zstd:level=3", "--categorize=hotness", "--hotness-list", list)
	out := filepath.Join(dir, "out.dwarfs")
	mk(t, "-i", in, "-o", out, "--log-level", "warn", "--recompress", "-C", "hotness::lzma:level=1", "-C", "binary/elf::lz4", "-C", "null")
	got, md := readBack(t, out)
	compareTrees(t, want, got, cmpOpts{})
	comps, _ := blockInfo(t, out)
	seen := map[string]bool{}
	for b, c := range comps {
		cat := md.CategoryNames[md.BlockCategories[b]]
		want := block.CompNone
		if cat == "hotness" {
			want = block.CompLZMA
		}
		// Blocks of random data are stored whatever -C says.
		if c != want && c != block.CompNone {
			t.Errorf("block %d (%s): %v, want %v", b, cat, c, want)
		}
		if c == block.CompLZMA {
			seen[cat] = true
		}
	}
	if !seen["hotness"] {
		t.Errorf("no hotness block recompressed with lzma: %v", comps)
	}
}

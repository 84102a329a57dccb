package conformance

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/dwarfsextract"
	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/metadata"
)

// common are the options every reference fixture image was built with:
// all file types, and a history without timestamps or command line so
// that the images are reproducible. Most use 1 MiB blocks.
var common = []string{"--with-devices", "--with-specials", "--no-history-timestamps", "--no-history-command-line"}

// cases maps each reference fixture image to the godwarfs mkdwarfs options
// that ask for the same thing.
//
// A case with rewrite set first builds an image with -S 20 and then
// rewrites it with those options (mkdwarfs -i IMAGE -o OUT ...); the
// rewritten image carries one more history entry than its input.
var cases = []struct {
	name    string
	args    []string
	rewrite []string
}{
	{name: "default"},
	// The quality does not change the structure; 11 is slow to encode.
	{"brotli", []string{"-S", "20", "-C", "brotli:quality=5"}, nil},
	// --categorize alone: fits, pcmaudio, binary and incompressible, as
	// with the reference.
	{"categorize", []string{"-S", "20", "--categorize"}, nil},
	{"chmod", []string{"-S", "20", "--chmod", "go-w"}, nil},
	{"filter", []string{"-S", "20", "-F", "- *.txt", "-F", "- random.bin"}, nil},
	{"hash-none", []string{"-S", "20", "--file-hash", "none"}, nil},
	{"hash-sha256", []string{"-S", "20", "--file-hash", "sha256"}, nil},
	{"header", []string{"-S", "20", "--header", "HEADER"}, nil},
	{"keep-all-times", []string{"-S", "20", "--keep-all-times"}, nil},
	{"level-0", []string{"-S", "20", "-l", "0"}, nil},
	{"level-1", []string{"-S", "20", "-l", "1"}, nil},
	{"level-2", []string{"-S", "20", "-l", "2"}, nil},
	{"level-3", []string{"-S", "20", "-l", "3"}, nil},
	{"level-4", []string{"-S", "20", "-l", "4"}, nil},
	{"level-5", []string{"-S", "20", "-l", "5"}, nil},
	{"level-6", []string{"-S", "20", "-l", "6"}, nil},
	{"level-7", []string{"-S", "20", "-l", "7"}, nil},
	{"level-8", []string{"-S", "20", "-l", "8"}, nil},
	{"level-9", []string{"-S", "20", "-l", "9"}, nil},
	{"lookback-4", []string{"-S", "16", "-B", "4"}, nil},
	{"lz4hc-12", []string{"-S", "20", "-C", "lz4hc:level=12"}, nil},
	{"metadata-null", []string{"-S", "20", "--metadata-compression", "null"}, nil},
	{"millisecond-times", []string{"-S", "20", "--time-resolution", "ms"}, nil},
	{"nanosecond-times", []string{"-S", "20", "--time-resolution", "ns", "--keep-all-times"}, nil},
	{"no-hardlink-table", []string{"-S", "20", "--no-hardlink-table"}, nil},
	{"no-history", []string{"-S", "20", "--no-history"}, nil},
	{"no-section-index", []string{"-S", "20", "--no-section-index"}, nil},
	{"no-sparse", []string{"-S", "20", "--no-sparse-files"}, nil},
	{"order-none", []string{"-S", "20", "--order", "none"}, nil},
	{"order-path", []string{"-S", "20", "--order", "path"}, nil},
	{"owner-group", []string{"-S", "20", "--set-owner", "1000", "--set-group", "1000"}, nil},
	{"pack-all", []string{"-S", "20", "-P", "all"}, nil},
	{"pack-none", []string{"-S", "20", "-P", "none"}, nil},
	{"pack-plain", []string{"-S", "20", "-P", "plain"}, nil},
	{"set-time", []string{"-S", "20", "--set-time", "1700000000"}, nil},
	{"time-resolution-60", []string{"-S", "20", "--time-resolution", "60"}, nil},
	// Rewrites: recompressed is the reference's -C lzma rewrite with null
	// metadata; -P all and 64 KiB blocks have fixtures of their own.
	{"recompressed", nil, []string{"--recompress", "-C", "lzma", "--metadata-compression", "null"}},
	{"pack-all", nil, []string{"--rebuild-metadata", "-P", "all"}},
	{"lookback-4", nil, []string{"--change-block-size", "-S", "16"}},
}

// notYet lists reference fields that godwarfs does not write yet, with the
// reason; everything else the reference sets must be set by us too.
var notYet = map[string]string{}

// buildTool compiles one of the module's commands into dir.
func buildTool(t *testing.T, dir, name string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(goBin, "build", "-o", out, "github.com/godwarfs/godwarfs/cmd/"+name)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", name, err, b)
	}
	return out
}

// sourceTree recreates the tree the reference images were made from by
// extracting the reference default image.
func sourceTree(t *testing.T, dir string) string {
	t.Helper()
	img := fixtures.File(t, "reference", "images", "default.dwarfs")
	im, err := godwarfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	tree := filepath.Join(dir, "tree")
	if err := os.Mkdir(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	var warn strings.Builder
	if _, err := dwarfsextract.Extract(im, dwarfsextract.Config{Output: tree, ContinueOnError: true, Stderr: &warn, Owners: os.Geteuid() == 0}); err != nil {
		t.Fatal(err)
	}
	if warn.Len() > 0 {
		t.Logf("extracting the source tree (device nodes need root):\n%s", warn.String())
	}
	return tree
}

func TestMatchesReferenceFixtures(t *testing.T) {
	fix := fixtures.Require(t)
	dir := t.TempDir()
	mk := buildTool(t, dir, "mkdwarfs")
	tree := sourceTree(t, dir)
	header := filepath.Join(dir, "header.bin")
	if err := os.WriteFile(header, []byte("#!/bin/false\nheader\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, args ...string) {
		t.Helper()
		cmd := fixtures.Command(mk, append([]string{"--progress", "none"}, args...)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("mkdwarfs %s: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
	for _, tc := range cases {
		name := tc.name
		if tc.rewrite != nil {
			name = "rewrite-" + tc.rewrite[0][2:] + "-" + tc.name
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ref, err := Read(filepath.Join(fix, "reference", "images", tc.name+".dwarfs"))
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, name+".dwarfs")
			args := append([]string{"-i", tree, "-o", out}, common...)
			if !slices.Contains(tc.args, "-P") {
				// The reference's -P auto packs names and symlinks; ours
				// packs every table when the metadata is compressed (a
				// documented difference), so ask for the reference's.
				args = append(args, "-P", "names,symlinks")
			}
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "HEADER", header))
			}
			wantHistory := len(ref.History)
			if tc.rewrite != nil {
				src := filepath.Join(dir, name+".src.dwarfs")
				args[3] = src
				run(t, append(args, "-S", "20")...)
				s, err := Read(src)
				if err != nil {
					t.Fatal(err)
				}
				wantHistory = len(s.History) + 1
				args = append([]string{"-i", src, "-o", out, "--no-history-timestamps", "--no-history-command-line"}, tc.rewrite...)
			}
			run(t, args...)
			ours, err := Read(out)
			if err != nil {
				t.Fatal(err)
			}
			compare(t, ref, ours, wantHistory)
		})
	}
}

// systemID is the reference's form: OS name and machine in brackets.
var systemID = regexp.MustCompile(`^[A-Z][A-Za-z]+ \[[a-z0-9_]+\]$`)

// compare fails on every difference in structure between the reference
// image ref and our image built with the same options.
func compare(t *testing.T, ref, ours *Shape, wantHistory int) {
	t.Helper()
	if ours.Major != ref.Major || ours.Minor != ref.Minor {
		t.Errorf("format version %d.%d, reference writes %d.%d", ours.Major, ours.Minor, ref.Major, ref.Minor)
	}
	if !slices.Equal(ours.Sections, ref.Sections) {
		t.Errorf("sections %v, reference writes %v", ours.Sections, ref.Sections)
	}
	if !ours.SectionNumbersDense {
		t.Errorf("section numbers are not 0, 1, 2, ...")
	}
	if ours.HasIndex != ref.HasIndex || (ours.HasIndex && ours.IndexErr != nil) {
		t.Errorf("section index present %v (error %v), reference %v", ours.HasIndex, ours.IndexErr, ref.HasIndex)
	}
	for kind, want := range ref.Compression {
		got := ours.Compression[kind]
		if kind == "BLOCK" {
			// Every codec we use must be one the reference uses here; a
			// block that does not shrink is stored (NONE) by both tools,
			// and which ones do depends on the encoder.
			for _, c := range got {
				if c != "NONE" && !slices.Contains(want, c) {
					t.Errorf("BLOCK compression %v, reference writes %v", got, want)
				}
			}
			continue
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s compression %v, reference writes %v", kind, got, want)
		}
	}

	// Every optional field the reference sets must be set.
	for _, f := range ref.SortedFields() {
		if !ours.Fields[f] {
			if why, ok := notYet[f]; ok {
				t.Logf("field %s not written yet: %s", f, why)
				continue
			}
			t.Errorf("field %s is set by the reference but not by godwarfs", f)
		}
	}
	for _, f := range ours.SortedFields() {
		if !ref.Fields[f] {
			t.Logf("field %s set by godwarfs, not by the reference here", f)
		}
	}

	// Values that must match the options exactly.
	rm, om := ref.Metadata, ours.Metadata
	if om.BlockSize != rm.BlockSize {
		t.Errorf("block size %d, reference %d", om.BlockSize, rm.BlockSize)
	}
	if !reflect.DeepEqual(om.Options, rm.Options) {
		t.Errorf("options %+v, reference %+v", deref(om.Options), deref(rm.Options))
	}
	for _, st := range [][2]*metadata.StringTable{{om.CompactNames, rm.CompactNames}, {om.CompactSymlinks, rm.CompactSymlinks}} {
		if st[0] != nil && st[1] != nil && st[0].PackedIndex != st[1].PackedIndex {
			t.Errorf("string table packed index %v, reference %v", st[0].PackedIndex, st[1].PackedIndex)
		}
	}
	if !slices.Equal(om.Features, rm.Features) {
		t.Errorf("features %v, reference %v", om.Features, rm.Features)
	}
	if !reflect.DeepEqual(om.PreferredPathSeparator, rm.PreferredPathSeparator) {
		t.Errorf("preferred path separator differs")
	}
	if ours.Schema.FileVersion != ref.Schema.FileVersion || ours.Schema.RelaxTypeChecks != ref.Schema.RelaxTypeChecks {
		t.Errorf("schema fileVersion %d relax %v, reference %d %v", ours.Schema.FileVersion, ours.Schema.RelaxTypeChecks, ref.Schema.FileVersion, ref.Schema.RelaxTypeChecks)
	}
	// Categories: the reference's, in the same order; every block has one.
	if !slices.Equal(om.CategoryNames, rm.CategoryNames) {
		t.Errorf("category names %q, reference %q", om.CategoryNames, rm.CategoryNames)
	}
	if om.HasBlockCategories && len(om.BlockCategories) != ours.Blocks {
		t.Errorf("%d block categories for %d blocks", len(om.BlockCategories), ours.Blocks)
	}
	if om.HoleBlockIndex != nil && int(*om.HoleBlockIndex) != ours.Blocks {
		t.Errorf("hole block index %d, want the block count %d", *om.HoleBlockIndex, ours.Blocks)
	}
	if om.DwarfsVersion != nil && !strings.HasPrefix(*om.DwarfsVersion, "godwarfs ") {
		t.Errorf("dwarfs_version %q", *om.DwarfsVersion)
	}

	// History entries: the values the reference prints must be usable.
	if len(ours.History) != wantHistory {
		t.Errorf("%d history entries, want %d", len(ours.History), wantHistory)
	}
	for i, h := range ours.History {
		v := h.Version
		for name, p := range map[string]*string{"git_desc": v.GitDesc, "git_rev": v.GitRev, "git_branch": v.GitBranch} {
			if p == nil || *p == "" {
				t.Errorf("history %d: %s empty or missing", i, name)
			}
		}
		if !systemID.MatchString(h.SystemID) {
			t.Errorf("history %d: system id %q, reference form %q", i, h.SystemID, ref.History[0].SystemID)
		}
		if h.CompilerID == "" || len(h.LibraryVersions) == 0 {
			t.Errorf("history %d: compiler id %q, %d library versions", i, h.CompilerID, len(h.LibraryVersions))
		}
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

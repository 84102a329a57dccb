//go:build unix

package mkdwarfs

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/block/encode"
)

// formatTree holds files of every format the pcmaudio, fits and binary
// categorizers know (the reference's test files, testdata/PROVENANCE of
// dedup/formats), a stereo WAV large enough for several blocks, text and
// random data.
func formatTree(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	ref := "../../dedup/formats/testdata/ref/"
	for _, f := range []string{"pcmaudio/test16.wav", "pcmaudio/test8.wav", "pcmaudio/test24.aiff", "pcmaudio/test16.caf",
		"pcmaudio/test32.w64", "fits/dark.fits", "fits/test.fits", "binary/elf-x86_64", "binary/elf-aarch64",
		"binary/pe-amd64", "binary/macho-arm64-x86_64"} {
		b, err := os.ReadFile(ref + f)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(src, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// 16-bit stereo: 4-byte frames.
	le := binary.LittleEndian
	var pcm []byte
	for i := range 50000 {
		pcm = le.AppendUint16(pcm, uint16(int16(8000*math.Sin(float64(i)/20))))
		pcm = le.AppendUint16(pcm, uint16(int16(6000*math.Cos(float64(i)/33))))
	}
	fmtc := le.AppendUint16(nil, 1)
	fmtc = le.AppendUint16(fmtc, 2)
	fmtc = le.AppendUint32(fmtc, 44100)
	fmtc = le.AppendUint32(fmtc, 44100*4)
	fmtc = le.AppendUint16(fmtc, 4)
	fmtc = le.AppendUint16(fmtc, 16)
	body := append([]byte("WAVEfmt "), le.AppendUint32(nil, 16)...)
	body = append(append(body, fmtc...), "data"...)
	body = append(append(le.AppendUint32(body, uint32(len(pcm))), pcm...), "LIST"...)
	body = append(le.AppendUint32(body, 4), "INFO"...)
	wav := append(le.AppendUint32([]byte("RIFF"), uint32(len(body))), body...)
	r := rand.New(rand.NewPCG(5, 6))
	random := make([]byte, 100000)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	for p, b := range map[string][]byte{
		"stereo.wav": wav, "text.txt": []byte(strings.Repeat("some text to compress\n", 3000)), "random.bin": random,
	} {
		if err := os.WriteFile(filepath.Join(src, p), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return src
}

func TestCategorizeFormats(t *testing.T) {
	src := formatTree(t)
	want := expected(t, src)
	img := filepath.Join(t.TempDir(), "f.dwarfs")
	log := mk(t, "-i", src, "-o", img, "-S", "16", "--categorize", "--log-level=verbose",
		"-C", "pcmaudio/waveform::zstd", "-C", "fits/image::zstd")
	got, md := readBack(t, img)
	compareTrees(t, want, got, cmpOpts{})
	if n := strings.Count(log, "warning"); n > 0 {
		t.Errorf("%d warnings:\n%s", n, log)
	}
	wantNames := []string{"<default>", "binary/elf", "binary/macho-header", "binary/macho-section", "binary/pe",
		"fits/image", "fits/metadata", "incompressible", "pcmaudio/metadata", "pcmaudio/waveform"}
	names := slices.Sorted(slices.Values(md.CategoryNames))
	if !slices.Equal(names, wantNames) {
		t.Fatalf("category_names %v, want %v", md.CategoryNames, wantNames)
	}
	// Each block's category, and its metadata where it has some.
	blockCat := func(b uint32) string { return md.CategoryNames[md.BlockCategories[b]] }
	blockMeta := map[uint32]map[string]any{}
	for _, kv := range md.BlockCategoryMetadata {
		var m map[string]any
		if err := json.Unmarshal([]byte(md.CategoryMetadataJSON[kv.Value]), &m); err != nil {
			t.Fatal(err)
		}
		blockMeta[kv.Key] = m
	}
	for b := range md.BlockCategories {
		c := blockCat(uint32(b))
		if _, has := blockMeta[uint32(b)]; has != (c == "pcmaudio/waveform" || c == "fits/image") {
			t.Errorf("block %d (%s): metadata %v", b, c, blockMeta[uint32(b)])
		}
	}
	_, files := blockInfo(t, img)
	for f, cats := range map[string][]string{
		"stereo.wav":                {"pcmaudio/metadata", "pcmaudio/waveform"},
		"pcmaudio/test24.aiff":      {"pcmaudio/metadata", "pcmaudio/waveform"},
		"pcmaudio/test16.caf":       {"pcmaudio/metadata", "pcmaudio/waveform"},
		"pcmaudio/test32.w64":       {"pcmaudio/metadata", "pcmaudio/waveform"},
		"fits/dark.fits":            {"fits/image", "fits/metadata"},
		"binary/elf-x86_64":         {"binary/elf"},
		"binary/pe-amd64":           {"binary/pe"},
		"binary/macho-arm64-x86_64": {"binary/macho-header", "binary/macho-section"},
		"text.txt":                  {"<default>"},
		"random.bin":                {"incompressible"},
		"binary/elf-aarch64":        {"binary/elf"},
		"pcmaudio/test16.wav":       {"pcmaudio/metadata", "pcmaudio/waveform"},
	} {
		var got []string
		for _, b := range files[f] {
			if c := blockCat(b); !slices.Contains(got, c) {
				got = append(got, c)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, cats) {
			t.Errorf("%s: blocks of %v, want %v", f, got, cats)
		}
	}
	// The stereo waveform's blocks carry its layout; the two ELF files'
	// blocks are apart (different machines).
	for _, b := range files["stereo.wav"] {
		if blockCat(b) != "pcmaudio/waveform" {
			continue
		}
		if m := blockMeta[b]; m["number_of_channels"] != 2.0 || m["bits_per_sample"] != 16.0 || m["endianness"] != "little" {
			t.Errorf("stereo.wav block %d: metadata %v", b, m)
		}
	}
	if slices.ContainsFunc(files["binary/elf-x86_64"], func(b uint32) bool { return slices.Contains(files["binary/elf-aarch64"], b) }) {
		t.Errorf("ELF files of two machines share a block")
	}
	// Without -C for them, pcmaudio/waveform and fits/image get the level's
	// codec, or zstd where this build has none.
	img2 := filepath.Join(t.TempDir(), "g.dwarfs")
	log = mk(t, "-i", src, "-o", img2, "--categorize=pcmaudio", "--log-level=verbose")
	if _, err := encode.NewCompressor("flac:level=5"); err != nil && !strings.Contains(log, "flac compression is not available in this build; using zstd:level=5") {
		t.Errorf("no note on the missing FLAC codec:\n%s", log)
	}
	if strings.Contains(log, "ricepp") {
		t.Errorf("note on fits/image without the fits categorizer:\n%s", log)
	}
	got, _ = readBack(t, img2)
	compareTrees(t, want, got, cmpOpts{})
}

// TestReferenceCategories compares the category tables of an image the
// reference made from the reference's format test files
// (testdata/ref-categorize.txt) with those of godwarfs's image of the
// same tree, and reads the reference's image back.
func TestReferenceCategories(t *testing.T) {
	src := "../../dedup/formats/testdata/ref"
	img := filepath.Join(t.TempDir(), "ours.dwarfs")
	mk(t, "-i", src, "-o", img, "--categorize", "-C", "pcmaudio/waveform::zstd", "-C", "fits/image::zstd",
		"--no-history", "--set-time=0", "--set-owner=0", "--set-group=0")
	want := expected(t, src)
	refTree, ref := readBack(t, "testdata/ref-categorize.dwarfs")
	got, ours := readBack(t, img)
	var zero uint32
	o := cmpOpts{skipTime: true, uid: &zero, gid: &zero}
	compareTrees(t, want, refTree, o)
	compareTrees(t, want, got, o)
	for _, f := range []struct {
		name      string
		ref, ours any
	}{
		{"category_names", ref.CategoryNames, ours.CategoryNames},
		{"block_categories", ref.BlockCategories, ours.BlockCategories},
		{"category_metadata_json", ref.CategoryMetadataJSON, ours.CategoryMetadataJSON},
		{"block_category_metadata", ref.BlockCategoryMetadata, ours.BlockCategoryMetadata},
	} {
		if !reflect.DeepEqual(f.ref, f.ours) {
			t.Errorf("%s:\nreference %v\ngodwarfs  %v", f.name, f.ref, f.ours)
		}
	}
}

// With the level's defaults, --categorize compresses audio samples with
// FLAC and FITS pixels with RICEPP, and the tree reads back exactly.
func TestCategorizeCodecs(t *testing.T) {
	src := formatTree(t)
	want := expected(t, src)
	for _, level := range []string{"1", "7", "9"} {
		img := filepath.Join(t.TempDir(), "c.dwarfs")
		mk(t, "-i", src, "-o", img, "--categorize", "-l", level)
		got, md := readBack(t, img)
		compareTrees(t, want, got, cmpOpts{})
		comps, _ := blockInfo(t, img)
		seen := map[string]bool{}
		for b, c := range comps {
			cat := md.CategoryNames[md.BlockCategories[b]]
			switch cat {
			// A block its codec would not shrink is stored (NONE).
			case "pcmaudio/waveform":
				if c != block.CompFLAC && c != block.CompNone {
					t.Errorf("-l%s: block %d (%s) is %s, want FLAC", level, b, cat, c)
				}
			case "fits/image":
				if c != block.CompRICEPP && c != block.CompNone {
					t.Errorf("-l%s: block %d (%s) is %s, want RICEPP", level, b, cat, c)
				}
			}
			seen[c.String()] = true
		}
		if !seen["FLAC"] || !seen["RICEPP"] {
			t.Errorf("-l%s: no FLAC or no RICEPP block among %v", level, seen)
		}
	}
}

// TestCategorizePadBits: an AIFF of 20-bit samples whose 4 pad bits hold
// data. FLAC would lose those bits (the reference drops them), so such a
// block is stored with the block compression, with a warning, and the
// file reads back whole.
func TestCategorizePadBits(t *testing.T) {
	src := t.TempDir()
	be := binary.BigEndian
	const frames = 40000
	r := rand.New(rand.NewPCG(7, 8))
	var pcm []byte
	for i := range frames {
		for ch := range 2 {
			v := int32(200000*math.Sin(float64(i)/(17+float64(ch)*5))) << 4
			v |= int32(r.IntN(16)) // data in the pad bits
			pcm = append(pcm, byte(v>>16), byte(v>>8), byte(v))
		}
	}
	comm := be.AppendUint16(nil, 2)
	comm = be.AppendUint32(comm, frames)
	comm = be.AppendUint16(comm, 20)
	comm = append(comm, 0x40, 0x0e, 0xac, 0x44, 0, 0, 0, 0, 0, 0) // 44100 as an 80-bit float
	body := append([]byte("AIFFCOMM"), be.AppendUint32(nil, uint32(len(comm)))...)
	body = append(body, comm...)
	body = append(append(body, "SSND"...), be.AppendUint32(nil, uint32(8+len(pcm)))...)
	body = append(append(body, make([]byte, 8)...), pcm...)
	aiff := append(be.AppendUint32([]byte("FORM"), uint32(len(body))), body...)
	if err := os.WriteFile(filepath.Join(src, "pad.aiff"), aiff, 0o644); err != nil {
		t.Fatal(err)
	}
	want := expected(t, src)
	img := filepath.Join(t.TempDir(), "p.dwarfs")
	code, _, stderr := run("-i", src, "-o", img, "--categorize", "-l", "7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "is not a 20-bit sample of this layout") || !strings.Contains(stderr, "using the block compression ZSTD") {
		t.Errorf("no warning about the block FLAC cannot store:\n%s", stderr)
	}
	got, md := readBack(t, img)
	compareTrees(t, want, got, cmpOpts{})
	comps, _ := blockInfo(t, img)
	waveform := 0
	for b, c := range comps {
		if md.CategoryNames[md.BlockCategories[b]] == "pcmaudio/waveform" {
			waveform++
			// ZSTD, or NONE where the encoder does not shrink it (the
			// pure-Go one at this level).
			if c != block.CompZSTD && c != block.CompNone {
				t.Errorf("block %d (pcmaudio/waveform) is %s, want ZSTD (or NONE)", b, c)
			}
		}
	}
	if waveform == 0 {
		t.Errorf("no pcmaudio/waveform block: the file was not categorized")
	}
}

package dedup

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSegmenterGranularity checks that with a frame size the segmenter
// only matches and cuts whole frames: repeats at an offset that is not a
// whole number of frames are not matched, blocks hold whole frames, and
// the data still round-trips.
func TestSegmenterGranularity(t *testing.T) {
	piece := randBytes(9, 3000)
	for _, tc := range []struct {
		gran, shift int
		wantMatch   bool
	}{
		{1, 3, true},
		{6, 6, true},
		{6, 3, false}, // a repeat 3 bytes into a frame
		{4, 0, true},
	} {
		t.Run(fmt.Sprintf("g%d_s%d", tc.gran, tc.shift), func(t *testing.T) {
			// Frames of the file: piece, then shift bytes, then piece again.
			data := append(append(append([]byte(nil), piece...), make([]byte, tc.shift)...), piece...)
			data = data[:len(data)/tc.gran*tc.gran]
			var st Stats
			var col collect
			o := segOpts(12, 6, 1, 4) // 4 KiB blocks, 64-frame window
			seg := newSegmenter(context.Background(), o, col.sink, &st)
			if tc.gran > 1 {
				seg.setGranularity(tc.gran)
			}
			cs, err := seg.add(data, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := seg.finish(); err != nil {
				t.Fatal(err)
			}
			bs := 4096 - 4096%tc.gran
			if got := reassemble(t, col.blocks, bs, cs); !bytes.Equal(got, data) {
				t.Fatal("content differs")
			}
			for i, b := range col.blocks {
				if len(b)%tc.gran != 0 {
					t.Errorf("block %d: %d bytes, not whole %d-byte frames", i, len(b), tc.gran)
				}
			}
			for _, c := range cs {
				if c.off%uint32(tc.gran) != 0 || c.size%uint32(tc.gran) != 0 {
					t.Errorf("chunk %+v not on %d-byte frames", c, tc.gran)
				}
			}
			if got := st.SegMatches > 0; got != tc.wantMatch {
				t.Errorf("matches: %d, want some: %v", st.SegMatches, tc.wantMatch)
			}
		})
	}
}

// stereoWAV is a 16-bit stereo WAV of random samples with repeats, one
// starting inside a frame, so that a byte-wise segmenter would match
// across frames.
func stereoWAV(frames int) []byte {
	le := binary.LittleEndian
	pcm := randBytes(11, 4*frames)
	copy(pcm[4*frames/2:], pcm[1001:30001])
	copy(pcm[4*frames*3/4:], pcm[2000:30000])
	body := []byte("WAVEfmt ")
	body = le.AppendUint32(body, 16)
	for _, v := range []uint16{1, 2} {
		body = le.AppendUint16(body, v)
	}
	body = le.AppendUint32(body, 44100)
	body = le.AppendUint32(body, 4*44100)
	body = le.AppendUint16(body, 4)
	body = le.AppendUint16(body, 16)
	body = append(le.AppendUint32(append(body, "data"...), uint32(len(pcm))), pcm...)
	return append(le.AppendUint32([]byte("RIFF"), uint32(len(body))), body...)
}

// TestBuildFormatHooks builds a tree with a PCM file through the hooks
// the writer fills from the category's compressor: Granularity makes the
// waveform's blocks and chunks whole frames; AcceptCategory can refuse a
// layout, which leaves the file uncategorized with a warning.
func TestBuildFormatHooks(t *testing.T) {
	const stereo = `{"bits_per_sample":16,"bytes_per_sample":2,"endianness":"little","number_of_channels":2,"padding":"lsb","signedness":"signed"}`
	root := writeTree(t, map[string]string{"a.wav": string(stereoWAV(60000)), "t.txt": strings.Repeat("text ", 1000)})
	for _, refuse := range []bool{false, true} {
		t.Run(fmt.Sprint("refuse=", refuse), func(t *testing.T) {
			o := testOpts(root)
			o.Categorize = []string{"pcmaudio"}
			var log strings.Builder
			o.Log = &log
			var asked []string
			o.AcceptCategory = func(cat, js string) error {
				asked = append(asked, cat+" "+js)
				if refuse {
					return errors.New("no such layout here")
				}
				return nil
			}
			o.Granularity = func(cat, js string) int {
				if cat == "pcmaudio/waveform" && js == stereo {
					return 4
				}
				return 1
			}
			var blocks [][]byte
			var cats []BlockCategory
			md, _, err := BuildCategorized(context.Background(), o, func(_ context.Context, b []byte, c BlockCategory) error {
				blocks, cats = append(blocks, b), append(cats, c)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(asked, []string{"pcmaudio/waveform " + stereo}) {
				t.Errorf("asked %q", asked)
			}
			if refuse {
				if !strings.Contains(log.String(), "warning: [WAV] \""+filepath.Join(root, "a.wav")+"\": no such layout here") {
					t.Errorf("log: %q", log.String())
				}
				if !slices.Equal(md.CategoryNames, []string{CategoryDefault}) {
					t.Errorf("category_names %v", md.CategoryNames)
				}
				return
			}
			waveform := map[uint32]bool{}
			for i, c := range cats {
				if c.Name == "pcmaudio/waveform" {
					waveform[uint32(i)] = true
					if c.Metadata != stereo || len(blocks[i])%4 != 0 {
						t.Errorf("block %d: %d bytes, metadata %s", i, len(blocks[i]), c.Metadata)
					}
				} else if c.Metadata != "" {
					t.Errorf("block %d (%s): metadata %s", i, c.Name, c.Metadata)
				}
			}
			if len(waveform) < 2 {
				t.Fatalf("waveform in %d blocks", len(waveform))
			}
			for _, c := range md.Chunks {
				if waveform[c.Block] && (c.Offset%4 != 0 || c.Size%4 != 0) {
					t.Errorf("waveform chunk %+v not on 4-byte frames", c)
				}
			}
			if len(md.CategoryMetadataJSON) != 1 || md.CategoryMetadataJSON[0] != stereo || len(md.BlockCategoryMetadata) != len(waveform) {
				t.Errorf("category metadata %q, %v", md.CategoryMetadataJSON, md.BlockCategoryMetadata)
			}
			for _, kv := range md.BlockCategoryMetadata {
				if !waveform[kv.Key] || kv.Value != 0 {
					t.Errorf("block_category_metadata %v", kv)
				}
			}
		})
	}
}

// TestBuildPartNotWholeFrames: data with a layout that is not a whole
// number of its compressor's frames is left uncategorized, with a warning.
func TestBuildPartNotWholeFrames(t *testing.T) {
	root := writeTree(t, map[string]string{"a.wav": string(stereoWAV(20000))})
	o := testOpts(root)
	o.Categorize = []string{"pcmaudio", "incompressible"}
	var log strings.Builder
	o.Log = &log
	o.Granularity = func(cat, js string) int { return 7 }
	md, _, err := BuildCategorized(context.Background(), o, func(context.Context, []byte, BlockCategory) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "pcmaudio/waveform data of 80000 bytes is not a whole number of 7-byte frames") {
		t.Errorf("log %q", log.String())
	}
	if slices.Contains(md.CategoryNames, "pcmaudio/waveform") {
		t.Errorf("category_names %v", md.CategoryNames)
	}
}

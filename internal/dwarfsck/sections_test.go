package dwarfsck

import (
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/internal/fixtures"
)

// dwarfsck -d 3 names each block's category and, for FLAC and RICEPP
// blocks, the layout they were compressed with, as the reference does.
func TestSectionCategories(t *testing.T) {
	for _, tc := range []struct {
		image string
		want  []string
	}{
		{"codecs/ref-flac-l7.dwarfs", []string{
			"BLOCK FLAC, ", ", category pcmaudio/waveform, metadata {\"bits_per_sample\":",
			", category pcmaudio/metadata\n",
		}},
		{"codecs/ricepp/fits-l1.dwarfs", []string{
			"BLOCK RICEPP, ", ", category fits/image, metadata {\"bytes_per_sample\":2,\"component_count\":",
			", category fits/metadata\n",
		}},
	} {
		rc, out, errs := runck("-d", "3", fixtures.File(t, tc.image))
		if rc != 0 {
			t.Fatalf("%s: exit %d: %s", tc.image, rc, errs)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: -d 3 lacks %q:\n%s", tc.image, w, out)
			}
		}
	}
}

package writer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/dedup"
)

// TestFamilyCopiesRoundTrip: files of contents stored once per family
// (see dedup's familyCopies) read back whole, whichever copy's chunks
// their content adopted.
func TestFamilyCopiesRoundTrip(t *testing.T) {
	text := func(seed, n int) string {
		var b []byte
		for i := 0; len(b) < n; i++ {
			b = fmt.Appendf(b, "%d line %d of file %d\n", i*seed%977, i, seed)
		}
		return string(b[:n])
	}
	x, y, lib := text(1, 60000), text(2, 60000), text(3, 20000)
	files := map[string]string{
		"a/1/x.js": x, "a/2/x.js": x[:30000] + "changed" + x[30007:], "a/2/lib.js": lib,
		"b/1/y.js": y, "b/2/y.js": y[:20000] + "changed" + y[20007:],
		"b/1/vendor/dep.js": lib, "b/2/vendor/dep.js": lib[:10000] + "changed" + lib[10007:], "b/2/lib-copy.js": lib,
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	for p, c := range files {
		full := filepath.Join(src, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	scan := dedup.DefaultOptions()
	scan.Input, scan.BlockSizeBits, scan.NoCreateTime = src, 16, true
	scan.Order = dedup.OrderNilsimsa
	var notes []string
	scan.Verbosef = func(format string, args ...any) { notes = append(notes, fmt.Sprintf(format, args...)) }
	img := filepath.Join(dir, "img.dwarfs")
	res, err := Build(context.Background(), BuildOptions{Scan: scan, Target: Target{Output: img, BlockCompression: "zstd:level=3", History: History{NoTimestamp: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.DupFiles != 2 {
		t.Errorf("%d duplicate files, want 2: the copies are one content in the metadata", res.Stats.DupFiles)
	}
	// b holds another version of dep.js, so it gets a copy of lib.
	if !slices.Contains(notes, "1 contents shared across families are also stored in the other families (20000 bytes)") {
		t.Errorf("no family copy made; notes:\n%s", strings.Join(notes, "\n"))
	}
	im, err := godwarfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	for p, want := range files {
		got, err := im.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s reads back %d bytes differing from its %d", p, len(got), len(want))
		}
	}
}

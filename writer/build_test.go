package writer

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/godwarfs/godwarfs/dedup"
)

// TestBuildTarget checks what Target promises for a build: progress
// reports, no overwrite without Overwrite, and the same image for any
// number of workers.
func TestBuildTarget(t *testing.T) {
	src := t.TempDir()
	for i, name := range []string{"a", "b", "c/d"} {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data := make([]byte, 3000*(i+1))
		for j := range data {
			data[j] = byte(j * (i + 7))
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	build := func(out string, workers int, overwrite bool, progress func(Progress)) (*BuildResult, error) {
		scan := dedup.DefaultOptions()
		scan.Input, scan.BlockSizeBits, scan.NoCreateTime = src, 12, true
		return Build(context.Background(), BuildOptions{Scan: scan, Target: Target{
			Output: out, Overwrite: overwrite, Workers: workers, BlockCompression: "zstd:level=3",
			History: History{NoTimestamp: true}, Progress: progress,
		}})
	}
	one := filepath.Join(dir, "one.dwarfs")
	calls := 0
	res, err := build(one, 1, false, func(p Progress) { calls++ })
	if err != nil {
		t.Fatal(err)
	}
	if calls == 0 || res.Stats.Files != 3 || res.Stats.Blocks < 2 {
		t.Errorf("%d progress calls, stats %+v", calls, res.Stats)
	}
	if st, err := os.Stat(one); err != nil || st.Size() != res.ImageBytes {
		t.Errorf("image %v, %v; result says %d bytes", st, err, res.ImageBytes)
	}
	if _, err := build(one, 1, false, nil); !errors.Is(err, fs.ErrExist) {
		t.Errorf("existing output without Overwrite: %v", err)
	}
	four := filepath.Join(dir, "four.dwarfs")
	if _, err := build(four, 4, false, nil); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(one)
	b, _ := os.ReadFile(four)
	if string(a) != string(b) {
		t.Error("the image depends on the number of workers")
	}
	if _, err := build(one, 2, true, nil); err != nil {
		t.Errorf("Overwrite: %v", err)
	}
}

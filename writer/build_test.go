package writer

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/block"
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

// TestBuildSplitBlockSameForAnyWorkers: a block that the encoder splits
// across idle threads (zstd at an ultra level) comes out the same whatever
// the number of workers, so on as many threads.
func TestBuildSplitBlockSameForAnyWorkers(t *testing.T) {
	t.Parallel()
	const spec, size = "zstd:level=20", 9 << 19 // 4.5 MiB in one block
	comp, err := block.NewCompressor(spec)
	if err != nil {
		t.Fatal(err)
	}
	if n := block.MaxThreads(comp, size); n < 2 {
		t.Skipf("skipped: %s does not split a block of %d bytes in this build (%s)", spec, size, comp.Compression())
	}
	src := t.TempDir()
	// Text-like data: words drawn from a small vocabulary.
	words := strings.Fields("the quick brown fox jumps over a lazy dog while seven wizards box and jam on quartz vexing daft zebras")
	var buf bytes.Buffer
	for x := uint32(1); buf.Len() < size; {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		buf.WriteString(words[x%uint32(len(words))])
		buf.WriteByte(" \n"[x>>31])
	}
	if err := os.WriteFile(filepath.Join(src, "text"), buf.Bytes()[:size], 0o644); err != nil {
		t.Fatal(err)
	}
	var images []string
	for _, workers := range []int{1, 2} {
		out := filepath.Join(t.TempDir(), "img.dwarfs")
		scan := dedup.DefaultOptions()
		scan.Input, scan.BlockSizeBits, scan.NoCreateTime = src, 23, true
		res, err := Build(context.Background(), BuildOptions{Scan: scan, Target: Target{
			Output: out, Workers: workers, BlockCompression: spec, History: History{NoTimestamp: true},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Stats.Blocks != 1 {
			t.Fatalf("%d blocks, want 1", res.Stats.Blocks)
		}
		img, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		images = append(images, string(img))
	}
	if images[0] != images[1] {
		t.Errorf("the image depends on the number of workers: %d bytes with 1, %d with 2", len(images[0]), len(images[1]))
	}
}

package writer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/block/encode"
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

// textLike returns size bytes of text-like data: words drawn from a small
// vocabulary by a generator seeded with seed.
func textLike(size int, seed uint32) []byte {
	words := strings.Fields("the quick brown fox jumps over a lazy dog while seven wizards box and jam on quartz vexing daft zebras")
	var buf bytes.Buffer
	for x := seed | 1; buf.Len() < size; {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		buf.WriteString(words[x%uint32(len(words))])
		buf.WriteByte(" \n"[x>>31])
	}
	return buf.Bytes()[:size]
}

// blockPayloads returns the stored payload and the decoded data of each
// BLOCK section of the image at path.
func blockPayloads(t *testing.T, path string) (raw, data [][]byte) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	im, err := block.OpenImage(f, st.Size(), block.Options{ImageOffset: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range im.Blocks() {
		r, err := im.ReadRaw(s)
		if err != nil {
			t.Fatal(err)
		}
		d, err := im.ReadDecompressed(s)
		if err != nil {
			t.Fatal(err)
		}
		raw, data = append(raw, append([]byte(nil), r...)), append(data, d)
	}
	return raw, data
}

// TestBuildSplitOnlyLoneBlock: the encoder cuts a block into jobs for
// several threads only when it is the build's only block, and the image
// is the same for any number of workers either way. With two blocks each
// worker has one, so each block is compressed as one job, as the
// reference does: a cut would only cost CPU.
func TestBuildSplitOnlyLoneBlock(t *testing.T) {
	t.Parallel()
	// Blocks of 4 MiB, the least the encoder cuts: one file of that
	// size makes one block; one 64 KiB larger makes two, the first full.
	const spec, size = "zstd:level=20", 4 << 20
	comp, err := encode.NewCompressor(spec)
	if err != nil {
		t.Fatal(err)
	}
	if n := encode.MaxThreads(encode.Split(comp), size); n < 2 {
		t.Skipf("skipped: %s does not cut a block of %d bytes in this build (%s)", spec, size, comp.Compression())
	}
	for _, blocks := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d-blocks", blocks), func(t *testing.T) {
			t.Parallel()
			src := t.TempDir()
			if err := os.WriteFile(filepath.Join(src, "text"), textLike(size+(blocks-1)<<16, uint32(blocks)), 0o644); err != nil {
				t.Fatal(err)
			}
			var images []string
			// The lone block is built with 1 and 2 workers, to see that
			// the cut does not depend on them; two blocks with one.
			for workers := range 3 - blocks {
				workers++
				out := filepath.Join(t.TempDir(), "img.dwarfs")
				scan := dedup.DefaultOptions()
				scan.Input, scan.BlockSizeBits, scan.NoCreateTime = src, 22, true
				res, err := Build(context.Background(), BuildOptions{Scan: scan, Target: Target{
					Output: out, Workers: workers, BlockCompression: spec, History: History{NoTimestamp: true},
				}})
				if err != nil {
					t.Fatal(err)
				}
				if res.Stats.Blocks != blocks {
					t.Fatalf("%d blocks, want %d", res.Stats.Blocks, blocks)
				}
				img, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				images = append(images, string(img))
				if workers > 1 {
					continue
				}
				raw, data := blockPayloads(t, out)
				want := comp
				if blocks == 1 {
					want = encode.Split(comp)
				}
				p, err := want.Compress(data[0])
				if err != nil {
					t.Fatal(err)
				}
				if len(data[0]) != size || !bytes.Equal(p, raw[0]) {
					t.Errorf("block 0 of %d (%d bytes): not compressed as %s (cut into jobs: %v)", blocks, len(data[0]), spec, blocks == 1)
				}
			}
			if len(images) < 2 {
				return
			}
			if images[0] != images[1] {
				t.Errorf("the image depends on the number of workers: %d bytes with 1, %d with 2", len(images[0]), len(images[1]))
			}
		})
	}
}

// TestBuildTimeline: a build's timeline has its phases in order, each
// starting where the last ended, within the build's wall time, and counts
// the blocks compressed.
func TestBuildTimeline(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(src, fmt.Sprint("f", i)), textLike(100<<10, uint32(i+7)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	scan := dedup.DefaultOptions()
	scan.Input, scan.BlockSizeBits, scan.NoCreateTime = src, 16, true
	var logged []string
	scan.Verbosef = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	res, err := Build(context.Background(), BuildOptions{Scan: scan, Target: Target{
		Output: filepath.Join(t.TempDir(), "img.dwarfs"), BlockCompression: "zstd:level=3", History: History{NoTimestamp: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	tl := res.Timeline
	var names []string
	var end time.Duration
	var cpu time.Duration
	for _, s := range tl.Stages {
		names = append(names, s.Name)
		if s.Start != end || s.End < s.Start {
			t.Errorf("phase %s runs %v to %v; the last ended at %v", s.Name, s.Start, s.End, end)
		}
		end = s.End
		cpu += s.CPU
	}
	if got, want := strings.Join(names, " "), "scanning ordering segmenting metadata compressing writing"; got != want {
		t.Errorf("phases %q, want %q", got, want)
	}
	if end > tl.Wall {
		t.Errorf("the last phase ends at %v, after the build's %v", end, tl.Wall)
	}
	if tl.CPUKnown && cpu > tl.CPU {
		t.Errorf("the phases' CPU adds up to %v, more than the build's %v", cpu, tl.CPU)
	}
	if tl.Blocks != res.Stats.Blocks || tl.Blocks < 4 {
		t.Errorf("timeline counts %d blocks, the build made %d (want at least 4)", tl.Blocks, res.Stats.Blocks)
	}
	if tl.CompressStart <= 0 || tl.CompressEnd < tl.CompressStart || tl.CompressEnd > tl.Wall {
		t.Errorf("compressing from %v to %v in a build of %v", tl.CompressStart, tl.CompressEnd, tl.Wall)
	}
	phaseLines := 0
	for _, l := range logged {
		if strings.HasPrefix(l, "phase ") {
			phaseLines++
		}
	}
	if phaseLines != len(tl.Stages) {
		t.Errorf("%d verbose phase lines for %d phases: %q", phaseLines, len(tl.Stages), logged)
	}
	var table strings.Builder
	tl.WriteTo(&table)
	for _, want := range append(names, "total", fmt.Sprintf("compressing %d blocks", tl.Blocks)) {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, table.String())
		}
	}
}

// TestBuildBadSpecStopsPipeline: a build that fails on a compression
// spec leaves none of its pipeline's goroutines behind, whichever spec
// is wrong.
func TestBuildBadSpecStopsPipeline(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "f"), textLike(10<<10, 3), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		target Target
	}{
		{"block", Target{BlockCompression: "nosuch"}},
		{"category", Target{CategoryCompression: map[string]string{"pcmaudio/waveform": "nosuch:level=3"}}},
		{"schema", Target{SchemaCompression: "zstd:level=99"}},
		{"metadata", Target{MetadataCompression: "nosuch"}},
		{"history", Target{HistoryCompression: "nosuch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scan := dedup.DefaultOptions()
			scan.Input, scan.BlockSizeBits, scan.NoCreateTime = src, 12, true
			tg := tc.target
			tg.Output, tg.Workers = filepath.Join(t.TempDir(), "img.dwarfs"), 2
			if _, err := Build(context.Background(), BuildOptions{Scan: scan, Target: tg}); err == nil {
				t.Fatal("a bad spec built an image")
			}
			// The pipeline's goroutines end soon after a failed build, or
			// never.
			deadline := time.Now().Add(5 * time.Second)
			for {
				n := pipelineGoroutines()
				if n == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d pipeline goroutines left after the build failed", n)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// pipelineGoroutines counts the goroutines that run pipeline code.
func pipelineGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "writer.newPipeline") {
			count++
		}
	}
	return count
}

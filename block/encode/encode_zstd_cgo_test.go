//go:build cgo && !purego

package encode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/block"
)

// goSourceTree is at least n bytes of real text: Go sources under GOROOT.
func goSourceTree(t *testing.T, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	root := filepath.Join(runtime.GOROOT(), "src")
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || buf.Len() >= n {
			return fs.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") {
			if b, err := os.ReadFile(p); err == nil {
				buf.Write(b)
			}
		}
		return nil
	})
	if buf.Len() < n {
		t.Skipf("skipped: only %d bytes of Go source under %s, need %d", buf.Len(), root, n)
	}
	return buf.Bytes()[:n]
}

// oneZstdFrame parses a payload as exactly one zstd frame and returns the
// content size from its header and whether it has a checksum.
func oneZstdFrame(p []byte) (size uint64, checksum bool, err error) {
	if len(p) < 6 || binary.LittleEndian.Uint32(p) != 0xFD2FB528 {
		return 0, false, errors.New("no zstd frame magic")
	}
	fhd := p[4]
	fcsFlag, single, dictFlag := fhd>>6, fhd&0x20 != 0, fhd&3
	checksum = fhd&4 != 0
	pos := 5
	if !single {
		pos++ // window descriptor
	}
	pos += []int{0, 1, 2, 4}[dictFlag]
	fcsLen := []int{0, 2, 4, 8}[fcsFlag]
	if fcsFlag == 0 && single {
		fcsLen = 1
	}
	if fcsLen == 0 {
		return 0, false, errors.New("frame header has no content size")
	}
	if len(p) < pos+fcsLen {
		return 0, false, errors.New("frame header truncated")
	}
	var b [8]byte
	copy(b[:], p[pos:pos+fcsLen])
	size = binary.LittleEndian.Uint64(b[:])
	if fcsLen == 2 {
		size += 256
	}
	pos += fcsLen
	for last := false; !last; {
		if len(p) < pos+3 {
			return 0, false, fmt.Errorf("block header truncated at %d", pos)
		}
		h := uint32(p[pos]) | uint32(p[pos+1])<<8 | uint32(p[pos+2])<<16
		pos += 3
		last = h&1 != 0
		n := int(h >> 3)
		if (h>>1)&3 == 1 { // RLE: one byte
			n = 1
		}
		pos += n
	}
	if checksum {
		pos += 4
	}
	if pos != len(p) {
		return 0, false, fmt.Errorf("frame ends at %d of %d bytes", pos, len(p))
	}
	return size, checksum, nil
}

// TestZstdSplitOutputIndependentOfThreads: a large input at an ultra level
// is cut into jobs that libzstd compresses on several threads. The frame
// must be the same for every thread count (an image must not depend on
// -N), through both the Compress and the append path; one frame with the
// content size and no checksum; read back by the pure-Go decoder; and
// cost little against one job.
func TestZstdSplitOutputIndependentOfThreads(t *testing.T) {
	t.Parallel()
	src := goSourceTree(t, zstdSplitMin)
	whole, err := NewCompressor("zstd:level=20")
	if err != nil {
		t.Fatal(err)
	}
	if n := MaxThreads(whole, len(src)); n != 1 {
		t.Errorf("MaxThreads(%d bytes) = %d without Split, want 1", len(src), n)
	}
	c := Split(whole)
	if n := MaxThreads(c, len(src)); n != zstdJobs {
		t.Fatalf("MaxThreads(%d bytes) = %d, want %d", len(src), n, zstdJobs)
	}
	if n := MaxThreads(c, zstdSplitMin-1); n != 1 {
		t.Errorf("MaxThreads(%d bytes) = %d, want 1", zstdSplitMin-1, n)
	}
	one, err := c.Compress(src) // one thread
	if err != nil {
		t.Fatal(err)
	}
	ct, two, err := CompressSectionInto(WithThreads(c, 2), make([]byte, 0, 16), src)
	if err != nil || ct != block.CompZSTD {
		t.Fatalf("2 threads: %s, err %v", ct, err)
	}
	if !bytes.Equal(one, two) {
		t.Fatalf("2 threads: %d bytes, differs from 1 thread's %d", len(two), len(one))
	}
	size, sum, err := oneZstdFrame(two)
	if err != nil {
		t.Fatal(err)
	}
	if size != uint64(len(src)) || sum {
		t.Errorf("frame header: content size %d (want %d), checksum %v (want none)", size, len(src), sum)
	}
	back, err := block.Decompress(block.CompZSTD, two, int64(len(src)))
	if err != nil || !bytes.Equal(back, src) {
		t.Fatalf("read back %d bytes, err %v; want the %d input bytes", len(back), err, len(src))
	}
	oneJob, err := whole.Compress(src)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(oneJob, two) {
		t.Error("Split made the same frame as one job: the input was not cut")
	}
	if float64(len(two)) > 1.005*float64(len(oneJob)) {
		t.Errorf("%d jobs: %d bytes, one job: %d; the cut costs more than 0.5%%", zstdJobs, len(two), len(oneJob))
	}
	t.Logf("%d bytes: %d in %d jobs, %d in one", len(src), len(two), zstdJobs, len(oneJob))
}

// TestZstdSplitNoGain: incompressible input that would be split falls
// back to NONE on the append path, whose room is less than the input.
func TestZstdSplitNoGain(t *testing.T) {
	t.Parallel()
	noise := testNoise(zstdSplitMin)
	c, err := NewCompressor("zstd:level=20")
	if err != nil {
		t.Fatal(err)
	}
	if ct, p, err := CompressSectionInto(WithThreads(Split(c), 2), nil, noise); err != nil || ct != block.CompNone || !bytes.Equal(p, noise) {
		t.Fatalf("%s, %d bytes, err %v; want NONE, the input", ct, len(p), err)
	}
}

// TestZstdWorkspaceSameFrames: a context kept in a Workspace from input to
// input, across levels, options, a failed (no gain) input and a cut one,
// makes the same frames as a context made for each input.
func TestZstdWorkspaceSameFrames(t *testing.T) {
	t.Parallel()
	text, noise := goSourceTree(t, zstdSplitMin), testNoise(256<<10)
	checkWorkspaceSame(t, []workspaceStep{
		{"zstd:level=22", text[:1<<20], false},
		{"zstd:level=3", text[:100<<10], false},
		{"zstd:level=19", noise, false}, // no gain: stored as NONE
		{"zstd:level=19:long", text[:600<<10], false},
		{"zstd:level=20", text, true}, // cut: a context of its own
		{"zstd:level=22", text[1<<20 : 2<<20], false},
		{"zstd:level=1", []byte("x"), false},
		{"zstd:level=22", text[:1<<20], false},
	}, func(ws *Workspace) bool { return ws.zstd.cctx != nil })
}

// TestZstdTargetLength: tlen reaches libzstd (a different search, a
// different frame), tlen=0 is the level's own, and every frame decodes.
func TestZstdTargetLength(t *testing.T) {
	t.Parallel()
	text := goSourceTree(t, 1<<20)[:1<<20]
	frames := map[string][]byte{}
	for _, spec := range []string{"zstd:level=22", "zstd:level=22:tlen=0", "zstd:level=22:tlen=8", "zstd:level=22:tlen=512"} {
		c, err := NewCompressor(spec)
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.Compress(text)
		if err != nil {
			t.Fatal(err)
		}
		back, err := block.Decompress(block.CompZSTD, out, int64(len(text)))
		if err != nil || !bytes.Equal(back, text) {
			t.Fatalf("%s: does not read back (%v)", spec, err)
		}
		frames[spec] = out
		t.Logf("%s: %d bytes", spec, len(out))
	}
	if !bytes.Equal(frames["zstd:level=22"], frames["zstd:level=22:tlen=0"]) {
		t.Error("tlen=0 is not the level's own target length")
	}
	if bytes.Equal(frames["zstd:level=22"], frames["zstd:level=22:tlen=8"]) {
		t.Error("tlen=8 makes the same frame as the level's own 999")
	}
}

// rowTables is n bytes of tables of fixed-size rows, as metadata has: a
// table of 7-byte rows of growing offsets and small sizes, then one of
// 5-byte rows of repeating indexes and growing numbers.
func rowTables(n int) []byte {
	out := make([]byte, 0, n)
	x := uint32(1)
	next := func() uint32 { x ^= x << 13; x ^= x >> 17; x ^= x << 5; return x }
	off := uint32(0)
	for len(out) < n/2 {
		size := next()%4096 + 16
		out = append(out, byte(off>>24), byte(off), byte(off>>8), byte(off>>16), byte(size), byte(size>>8), byte(size>>16))
		off += size
	}
	for k := uint32(0); len(out) < n; k++ {
		name := k%977 + next()%3
		out = append(out, byte(name), byte(name>>8), byte(name>>16), byte(k), byte(k>>8))
	}
	return out[:n]
}

func TestZstdAlternatives(t *testing.T) {
	t.Parallel()
	c, err := NewCompressor("zstd:level=22")
	if err != nil {
		t.Fatal(err)
	}
	z := c.(*cZstdCompressor)
	if alts := z.alternatives(zstdBlockMax); len(alts) != 0 {
		t.Errorf("%d alternatives for one zstd block, which the pre-splitter never cuts", len(alts))
	}
	alts := z.alternatives(zstdBlockMax + 1)
	if len(alts) != 1 {
		t.Fatalf("%d alternatives for more than a zstd block, want 1", len(alts))
	}
	if more := alts[0].(*cZstdCompressor).alternatives(1 << 20); len(more) != 0 {
		t.Errorf("the alternative has %d alternatives of its own", len(more))
	}
	// Text, then tables: where one ends and the other starts inside a
	// zstd block, the pre-splitter cuts the block there.
	data := append(goSourceTree(t, 300_000), rowTables(700_000)...)
	own, err := c.Compress(data)
	if err != nil {
		t.Fatal(err)
	}
	alt, err := alts[0].Compress(data)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pre-splitter on: %d bytes, off: %d", len(own), len(alt))
	if bytes.Equal(own, alt) {
		t.Fatal("the pre-splitter off gives the same frame: the setting does not reach libzstd")
	}
	for _, p := range [][]byte{own, alt} {
		back, err := block.Decompress(block.CompZSTD, p, int64(len(data)))
		if err != nil || !bytes.Equal(back, data) {
			t.Fatalf("frame does not read back (%v)", err)
		}
	}
	ct, best, err := CompressSectionSmallest(c, data)
	if err != nil || ct != block.CompZSTD {
		t.Fatalf("CompressSectionSmallest: %v, %v", ct, err)
	}
	want := own
	if len(alt) < len(own) {
		want = alt
	}
	if !bytes.Equal(best, want) {
		t.Errorf("CompressSectionSmallest kept %d bytes, want the smaller frame, %d", len(best), len(want))
	}
}

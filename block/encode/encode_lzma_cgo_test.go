//go:build cgo && liblzma && !purego

package encode

import (
	"bytes"
	"github.com/godwarfs/godwarfs/block/internal/codectest"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/block"
)

// TestLZMAFramingMatchesXZ checks that the liblzma encoder writes the .xz
// stream the reference writes (one LZMA2 filter, CRC64 check, preset
// options; with pb=2) by comparing it with the xz tool given the same
// options, and that pb=auto picks pb 0 and nice 96 for text, the preset
// for an executable.
func TestLZMAFramingMatchesXZ(t *testing.T) {
	xzTool, err := exec.LookPath("xz")
	if err != nil {
		t.Skip("skipped: no xz tool to compare with")
	}
	text, exe := goSource(t)[:300<<10], codectest.ExecutableBytes(t, 300<<10)
	for _, tc := range []struct {
		spec, preset string
		src          []byte
	}{
		{"lzma:level=9:pb=2", "9", text}, {"lzma:level=1:pb=2", "1", text}, {"lzma:level=6:extreme:pb=2", "6e", text},
		{"lzma:level=9:dict_size=16:mode=fast:mf=hc4:nice=64:pb=2", "9,dict=64KiB,mode=fast,mf=hc4,nice=64", text},
		{"lzma:level=9", "9,pb=0,nice=96,depth=48", text}, {"lzma:level=9:pb=auto", "9,pb=0,nice=96,depth=48", text},
		{"lzma:level=6:extreme", "6e,pb=0", text}, // its nice, 273, is above 96
		{"lzma:level=5", "5,pb=0", text}, {"lzma:level=6:mf=hc4", "6,mf=hc4,pb=0,nice=96,depth=20", text},
		{"lzma:level=9:depth=7", "9,pb=0,nice=96,depth=7", text}, {"lzma:level=9:nice=32", "9,pb=0,nice=32", text},
		{"lzma:level=9:pb=1", "9,pb=1", text},
		{"lzma:level=9", "9", exe}, {"lzma:level=9:pb=0", "9,pb=0", exe},
	} {
		src := tc.src
		c, err := NewCompressor(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Compress(src)
		if err != nil {
			t.Fatal(err)
		}
		opts := "preset=" + tc.preset
		if !strings.Contains(tc.preset, "dict=") {
			// The encoder caps the dictionary at the input size.
			opts += ",dict=" + strconv.Itoa(len(src))
		}
		cmd := exec.Command(xzTool, "-T1", "--format=xz", "--check=crc64", "--lzma2="+opts, "-c")
		cmd.Stdin = bytes.NewReader(src)
		want, err := cmd.Output()
		if err != nil {
			t.Fatalf("xz %s: %v", opts, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes differ from xz --lzma2=%s (%d bytes)", tc.spec, len(got), opts, len(want))
		}
		if n, err := block.UncompressedSize(block.CompLZMA, got); err != nil || n != int64(len(src)) {
			t.Errorf("%s: declares %d bytes, %v; want %d", tc.spec, n, err, len(src))
		}
	}
}

// TestLZMAWorkspaceSameStreams: an encoder kept in a Workspace from input
// to input, across presets, dictionary sizes, pb, a BCJ filter and an
// input that does not shrink, writes the same streams as an encoder made
// for each input.
func TestLZMAWorkspaceSameStreams(t *testing.T) {
	t.Parallel()
	text, exe, noise := goSource(t), codectest.ExecutableBytes(t, 200<<10), testNoise(64<<10)
	checkWorkspaceSame(t, []workspaceStep{
		{"lzma:level=9", text[:200<<10], false},
		{"lzma:level=9", text[100<<10 : 300<<10], false}, // same dictionary size: tables reused
		{"lzma:level=6:pb=2", text[:120<<10], false},
		{"lzma:level=9", noise, false}, // no gain: stored as NONE
		{"lzma:level=9:binary=x86", exe, false},
		{"lzma:level=1:mf=hc4", text[:50<<10], false},
		{"lzma:level=9", exe, false},
		{"lzma:level=9", []byte("x"), false},
		{"lzma:level=9", text[:200<<10], false},
	}, func(ws *Workspace) bool { return ws.lzma.s != nil })
}

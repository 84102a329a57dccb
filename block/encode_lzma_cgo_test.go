//go:build cgo && !purego

package block

import (
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestLZMAFramingMatchesXZ checks that the liblzma encoder writes the .xz
// stream the reference writes (one LZMA2 filter, CRC64 check, preset
// options) by comparing it with the xz tool given the same options.
func TestLZMAFramingMatchesXZ(t *testing.T) {
	xzTool, err := exec.LookPath("xz")
	if err != nil {
		t.Skip("skipped: no xz tool to compare with")
	}
	src := goSource(t)[:300<<10]
	for _, tc := range []struct{ spec, preset string }{
		{"lzma:level=9", "9"}, {"lzma:level=1", "1"}, {"lzma:level=6:extreme", "6e"},
		{"lzma:level=9:dict_size=16:mode=fast:mf=hc4:nice=64", "9,dict=64KiB,mode=fast,mf=hc4,nice=64"},
	} {
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
		if info, err := parseXZ(got); err != nil || info.total != int64(len(src)) || len(info.blocks) != 1 {
			t.Errorf("%s: parse: %+v %v", tc.spec, info, err)
		}
	}
}

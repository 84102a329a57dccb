package lz4hc_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/block/internal/codectest"
	"github.com/godwarfs/godwarfs/block/internal/lz4hc"
)

// TestCompareLiblz4 compares the encoder with liblz4's LZ4HC through the
// lz4 command, chunk by chunk as an image cuts its input into blocks:
// on the module's text and this test's own binary, or on the files that
// LZ4HC_COMPARE names (separated by the list separator); at levels 3, 6
// and 9, or the one LZ4HC_LEVEL gives; in 2 MiB chunks, or LZ4HC_CHUNK.
// Ours may not be larger in all than liblz4's blocks. With the same
// parse they are expected to be the same, and the log says how many are.
func TestCompareLiblz4(t *testing.T) {
	if _, err := exec.LookPath("lz4"); err != nil {
		t.Skip("no lz4 command to compare with (Debian package lz4)")
	}
	type input struct {
		name string
		data []byte
	}
	var inputs []input
	if files := os.Getenv("LZ4HC_COMPARE"); files != "" {
		for _, name := range strings.Split(files, string(os.PathListSeparator)) {
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			inputs = append(inputs, input{filepath.Base(name), data})
		}
	} else {
		inputs = append(inputs, input{"text", mixedText(t, 4<<20)}, input{"binary", codectest.ExecutableBytes(t, 4<<20)})
	}
	levels := []int{3, 6, 9}
	if os.Getenv("LZ4HC_LEVEL") != "" {
		levels = []int{envInt(t, "LZ4HC_LEVEL", 9)}
	}
	chunk := envInt(t, "LZ4HC_CHUNK", 2<<20)
	for _, in := range inputs {
		for _, level := range levels {
			t.Run(fmt.Sprintf("%s/level%d", in.name, level), func(t *testing.T) {
				e := lz4hc.NewEncoder(level)
				var ours, theirs, same, chunks int
				for p := 0; p < len(in.data); p += chunk {
					c := in.data[p:min(p+chunk, len(in.data))]
					b, _ := encode(t, e, c)
					ref := liblz4Block(t, c, level)
					// Either stores an incompressible chunk as it is.
					ours += min(len(b), len(c))
					theirs += min(len(ref), len(c))
					if bytes.Equal(b, ref) {
						same++
					}
					chunks++
				}
				t.Logf("%d bytes in %d chunks: ours %d, liblz4 %d (%.5f), %d chunks byte-identical",
					len(in.data), chunks, ours, theirs, float64(ours)/float64(theirs), same)
				if ours > theirs {
					t.Errorf("ours is %d bytes, liblz4's %d: larger", ours, theirs)
				}
			})
		}
	}
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var n int
	if _, err := fmt.Sscan(v, &n); err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// liblz4Block compresses src as one lz4 frame with one block and returns
// that block; an uncompressed block comes back as src itself.
func liblz4Block(t *testing.T, src []byte, level int) []byte {
	cmd := exec.Command("lz4", fmt.Sprintf("-%d", level), "-B7", "--no-frame-crc", "-c")
	cmd.Stdin = bytes.NewReader(src)
	f, err := cmd.Output()
	if err != nil {
		t.Fatalf("lz4: %v", err)
	}
	if len(f) < 7 || binary.LittleEndian.Uint32(f) != 0x184D2204 {
		t.Fatalf("lz4 wrote no frame")
	}
	flg := f[4]
	i := 7
	if flg&0x08 != 0 {
		i += 8 // content size
	}
	if flg&0x01 != 0 {
		i += 4 // dictionary id
	}
	if flg&0x10 != 0 {
		t.Fatalf("lz4 frame has block checksums")
	}
	size := binary.LittleEndian.Uint32(f[i:])
	raw, n := size&(1<<31) != 0, int(size&(1<<31-1))
	blk := f[i+4 : i+4+n]
	if end := binary.LittleEndian.Uint32(f[i+4+n:]); end != 0 {
		t.Fatalf("lz4 frame has more than one block")
	}
	if raw {
		return src
	}
	return blk
}

package encode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"github.com/godwarfs/godwarfs/block/internal/codectest"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/block/internal/xzfmt"
)

// xzFilterIDs returns the filter chain of the first block of an xz
// payload, read from its header, as the one element of a list (the
// encoders write one block; package block checks the rest of the stream
// when it decodes).
func xzFilterIDs(t *testing.T, payload []byte) [][]uint64 {
	t.Helper()
	const streamHeader = 12
	if len(payload) < streamHeader+2 || !bytes.Equal(payload[:6], xzfmt.HeaderMagic) || payload[streamHeader] == 0 {
		t.Fatalf("not an xz stream with a block: % x", payload[:min(len(payload), 16)])
	}
	size := (int(payload[streamHeader]) + 1) * 4
	hdr := payload[streamHeader:min(streamHeader+size, len(payload))]
	p := 2
	uvarint := func() uint64 {
		v, n := binary.Uvarint(hdr[min(p, len(hdr)):])
		if n <= 0 {
			t.Fatalf("bad varint in xz block header % x", hdr)
		}
		p += n
		return v
	}
	flags := hdr[1]
	if flags&0x40 != 0 {
		uvarint() // compressed size
	}
	if flags&0x80 != 0 {
		uvarint() // uncompressed size
	}
	var chain []uint64
	for range int(flags&3) + 1 {
		chain = append(chain, uvarint())
		p += int(uvarint()) // properties
	}
	return [][]uint64{chain}
}

func slicesEqual(a, b []uint64) bool {
	return slices.Equal(a, b)
}

// TestXZBinaryReadByXZTool: the streams written for binary=NAME are read
// by the xz tool (liblzma's decoder) to the same bytes, for every filter.
func TestXZBinaryReadByXZTool(t *testing.T) {
	xzTool, err := exec.LookPath("xz")
	if err != nil {
		t.Skip("skipped: no xz tool to read the streams with")
	}
	src := append(codectest.RandomBytes(16<<10, 3), codectest.ExecutableBytes(t, 128<<10)...)
	for _, name := range xzfmt.Writable {
		f := xzfmt.ByName(name)
		for _, ctor := range []struct {
			name string
			enc  func() ([]byte, error)
		}{
			{"purego", func() ([]byte, error) { return xzfmt.WriteBCJ(src, 1<<20, nil, f) }},
			{"build", func() ([]byte, error) { return forcedBCJ(src, f) }},
		} {
			stream, err := ctor.enc()
			if errors.Is(err, errNoNative) {
				continue
			}
			if err != nil {
				t.Fatalf("%s %s: %v", ctor.name, name, err)
			}
			if got := xzFilterIDs(t, stream); len(got) != 1 || got[0][0] != f.ID {
				t.Fatalf("%s %s: chain %x", ctor.name, name, got)
			}
			cmd := exec.Command(xzTool, "-dc")
			cmd.Stdin = bytes.NewReader(stream)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil || !bytes.Equal(out, src) {
				t.Errorf("%s binary=%s: xz -dc: %v %s (%d of %d bytes)", ctor.name, name, err, stderr.String(), len(out), len(src))
			}
			got, err := block.Decompress(block.CompLZMA, stream, int64(len(src)))
			if err != nil || !bytes.Equal(got, src) {
				t.Errorf("%s binary=%s: read back: %v", ctor.name, name, err)
			}
		}
	}
}

var errNoNative = errors.New("no liblzma in this build")

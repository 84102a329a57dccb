//go:build unix

package mkdwarfs

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// byteOrderTree writes a tree whose image depends on nothing but its
// contents: fixed names, bytes, modes and times. It has duplicates, near
// duplicates (for the segmenter and the similarity order), a hard link,
// a symbolic link and an empty file.
func byteOrderTree(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	if err := os.Chmod(src, 0o755); err != nil {
		t.Fatal(err)
	}
	x := uint32(2463534242)
	next := func() uint32 { x ^= x << 13; x ^= x >> 17; x ^= x << 5; return x }
	base := make([]byte, 16<<10)
	for i := 0; i < len(base); i += 4 {
		binary.LittleEndian.PutUint32(base[i:], next()%7919)
	}
	write := func(name string, data []byte) {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		// Modes as written, whatever the umask.
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for v := range 6 {
		d := bytes.Clone(base)
		for k := 0; k < 20; k++ {
			d[next()%uint32(len(d))] = byte(v)
		}
		write(fmt.Sprintf("v%d/data.bin", v), d)
		write(fmt.Sprintf("v%d/README", v), bytes.Repeat([]byte(fmt.Sprintf("version %d of the sample\n", v)), 40))
	}
	write("dup/data.bin", base)
	write("dup/again.bin", base)
	write("empty", nil)
	if err := os.Link(filepath.Join(src, "dup", "data.bin"), filepath.Join(src, "hardlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("v0/README", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	return src
}

// An image does not depend on the byte order or word size of the machine
// that writes it: the build of byteOrderTree here equals, byte for byte,
// the one committed in testdata, which was written on linux/amd64 (make
// test-s390x runs this on big-endian s390x, make test-arm and test-386 on
// 32-bit ARM and x86). That image reads back here too. The history records the writing
// platform, as the reference's does, so it is left out; the codecs are
// ones whose output is the same in every build (the cgo zstd and lzma
// encoders are not in the static builds the emulated runs use).
func TestImageSameOnEveryArch(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	src := byteOrderTree(t)
	golden := filepath.Join("testdata", "byteorder.dwarfs")
	for _, comp := range []string{"null", "brotli:quality=5"} {
		img := filepath.Join(t.TempDir(), "b.dwarfs")
		mk(t, "-i", src, "-o", img, "-l", "7", "-S", "16", "-N", "2", "-C", comp,
			"--schema-compression", "null", "--metadata-compression", "null", "--no-history",
			"--set-owner", "0", "--set-group", "0", "--set-time", "1600000000",
			"--log-level", "warn")
		got, err := os.ReadFile(img)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(golden + "." + comp[:min(len(comp), 6)])
		if os.Getenv("GODWARFS_WRITE_GOLDEN") == "1" {
			if err := os.WriteFile(golden+"."+comp[:min(len(comp), 6)], got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("-C %s on %s/%s: %d bytes differ from the linux/amd64 image (%d bytes)", comp, runtime.GOOS, runtime.GOARCH, len(got), len(want))
		}
		// The committed image reads back as the tree.
		gotTree, _ := readBack(t, golden+"."+comp[:min(len(comp), 6)])
		wantTree := expected(t, src)
		var root uint32
		compareTrees(t, wantTree, gotTree, cmpOpts{skipTime: true, uid: &root, gid: &root})
	}
}

//go:build linux

package godwarfs_test

// These tests find mappings in /proc/self/maps, which only Linux has.

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/metadata"
)

// mapped reports whether this process has a mapping of path.
func mapped(t *testing.T, path string) bool {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("skipped: cannot read /proc/self/maps (%v)", err)
	}
	return bytes.Contains(maps, []byte(" "+path+"\n"))
}

// TestMapMetadata: with MapMetadata, uncompressed metadata is mapped from
// the file instead of copied into the heap, for images at the start of
// the file and behind a header (an offset that is not page aligned), and
// the image reads the same as one opened the usual way.
func TestMapMetadata(t *testing.T) {
	const n = 65000
	for _, prefix := range []int{0, 1234} {
		t.Run(fmt.Sprintf("prefix=%d", prefix), func(t *testing.T) {
			path, content := mapImage(t, n, prefix, nil)
			plain, allocPlain := openAlloc(t, path, &godwarfs.Options{ImageOffset: int64(prefix), ExactOffset: true})
			defer plain.Close()
			if mapped(t, path) {
				t.Fatal("the image is mapped without MapMetadata")
			}
			im, allocMapped := openAlloc(t, path, &godwarfs.Options{ImageOffset: int64(prefix), ExactOffset: true, MapMetadata: true})
			defer im.Close()
			parts := imageaccess.Of(im)
			if !parts.MetadataMapped || imageaccess.Of(plain).MetadataMapped {
				t.Fatalf("MetadataMapped: %v with MapMetadata, %v without", parts.MetadataMapped, imageaccess.Of(plain).MetadataMapped)
			}
			if !mapped(t, path) {
				t.Fatal("MapMetadata: no mapping of the image in /proc/self/maps")
			}
			// The copy of the metadata is what mapping saves, less the
			// buffer its checksum is read through (256 KiB, from a pool
			// that under the race detector drops some of what it is
			// given, so perhaps twice) and some slack.
			size := uint64(parts.MetadataSize)
			if size < 1<<20 || allocMapped+size > allocPlain+(2*256+128)<<10 {
				t.Errorf("metadata %d bytes: open allocated %d bytes mapped, %d read; want at least the metadata less when mapped", size, allocMapped, allocPlain)
			}
			for _, i := range []int{0, n / 2, n - 1} {
				name := fmt.Sprintf("file%06d", i)
				got, err := im.ReadFile(name)
				if err != nil {
					t.Fatal(err)
				}
				if want := content[16*i : 16*i+16]; !bytes.Equal(got, want) {
					t.Fatalf("%s: %q, want %q", name, got, want)
				}
			}
			var a, b []string
			for _, x := range []struct {
				im  *godwarfs.Image
				out *[]string
			}{{plain, &a}, {im, &b}} {
				err := fs.WalkDir(x.im, ".", func(p string, d fs.DirEntry, err error) error {
					*x.out = append(*x.out, p)
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if len(b) != n+1 || strings.Join(a, "\n") != strings.Join(b, "\n") {
				t.Fatalf("walk: %d paths mapped, %d read; they differ", len(b), len(a))
			}
		})
	}
}

// TestMapMetadataCorrupt: a mapped image is held to the same checks as a
// read one: damaged or inconsistent metadata is refused at open with an
// error naming the file and the fault, and the mapping is released.
func TestMapMetadataCorrupt(t *testing.T) {
	unsorted := func(md *metadata.Metadata) { md.Names[7], md.Names[8] = md.Names[8], md.Names[7] }
	badChunk := func(md *metadata.Metadata) { md.Chunks[3].Offset = 1 << 20 }
	cases := []struct {
		name    string
		corrupt func(*metadata.Metadata)
		flip    bool // damage a byte of the stored metadata
		want    string
	}{
		{"unsorted names", unsorted, false, `entries "file000008" and "file000007" not strictly sorted`},
		{"chunk offset", badChunk, false, "chunks[3]: offset 1048576 out of range"},
		{"checksum", nil, true, "(METADATA_V2): checksum mismatch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, _ := mapImage(t, 2000, 0, c.corrupt)
			if c.flip {
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				data[len(data)-100] ^= 0x10 // inside the metadata, the last section
				if err := os.WriteFile(path, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, mapMeta := range []bool{false, true} {
				im, err := godwarfs.Open(path, &godwarfs.Options{MapMetadata: mapMeta})
				if err == nil {
					im.Close()
					t.Fatalf("MapMetadata=%v: accepted", mapMeta)
				}
				if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("MapMetadata=%v: error %q, want the file name and %q", mapMeta, err, c.want)
				}
				if mapped(t, path) {
					t.Errorf("MapMetadata=%v: the image stays mapped after a failed open", mapMeta)
				}
			}
		})
	}
}

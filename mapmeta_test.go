package godwarfs_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/internal/testimage"
	"github.com/godwarfs/godwarfs/metadata"

	"github.com/godwarfs/godwarfs/internal/fixtures"
)

// mapImage builds an image of n files of 16 bytes each in one block, its
// metadata stored uncompressed (as mkdwarfs -l 0..3 store it), behind a
// header of prefix bytes.
func mapImage(t *testing.T, n, prefix int, corrupt func(*metadata.Metadata)) (path string, content []byte) {
	t.Helper()
	names := make([]string, n)
	chunks := make([][]metadata.Chunk, n)
	for i := range n {
		names[i] = fmt.Sprintf("file%06d", i)
		chunks[i] = []metadata.Chunk{{Block: 0, Offset: uint32(16 * i), Size: 16}}
		content = fmt.Appendf(content, "%015d\n", i)
	}
	md := testimage.Files(1<<20, names, chunks)
	if corrupt != nil {
		corrupt(md)
	}
	img, err := testimage.Build(md, [][]byte{content}, "lz4")
	if err != nil {
		t.Fatal(err)
	}
	path = fixtures.TempFile(t, "map.dwarfs")
	if err := os.WriteFile(path, append(bytes.Repeat([]byte("#"), prefix), img...), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, content
}

// mapped reports whether this process has a mapping of path.
func mapped(t *testing.T, path string) bool {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("skipped: cannot read /proc/self/maps (%v)", err)
	}
	return bytes.Contains(maps, []byte(" "+path+"\n"))
}

// openAlloc opens path and returns the image and the bytes allocated on
// the heap while opening.
func openAlloc(t *testing.T, path string, opts *godwarfs.Options) (*godwarfs.Image, uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	im, err := godwarfs.Open(path, opts)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	return im, after.TotalAlloc - before.TotalAlloc
}

// TestMapMetadata: with MapMetadata, uncompressed metadata is mapped from
// the file instead of copied into the heap, for images at the start of
// the file and behind a header (an offset that is not page aligned), and
// the image reads the same as one opened the usual way.
func TestMapMetadata(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skipf("skipped: the test reads /proc/self/maps, which %s does not have", runtime.GOOS)
	}
	const n = 12000
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
			// The copy of the metadata is what mapping saves.
			size := uint64(parts.MetadataSize)
			if size < 100<<10 || allocMapped+size*9/10 > allocPlain {
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

// TestMapMetadataFallback: readers other than a file read the metadata.
func TestMapMetadataFallback(t *testing.T) {
	path, content := mapImage(t, 100, 0, nil)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	im, err := godwarfs.OpenReaderAt(bytes.NewReader(data), int64(len(data)), "memory", &godwarfs.Options{MapMetadata: true})
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	if imageaccess.Of(im).MetadataMapped {
		t.Error("metadata of an in-memory image mapped")
	}
	got, err := im.ReadFile("file000042")
	if err != nil || !bytes.Equal(got, content[16*42:16*43]) {
		t.Fatalf("file000042: %q, %v", got, err)
	}
}

// TestMapMetadataCorrupt: a mapped image is held to the same checks as a
// read one: damaged or inconsistent metadata is refused at open with an
// error naming the file and the fault, and the mapping is released.
func TestMapMetadataCorrupt(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skipf("skipped: the test reads /proc/self/maps, which %s does not have", runtime.GOOS)
	}
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

// TestServingChecksNamesOnFirstUse: opened for serving (LazyBlockCheck,
// as the driver does), an image whose directory names are out of order
// opens, and the directory fails its first use with an error naming the
// file and the fault; opened by default, it is refused at once.
func TestServingChecksNamesOnFirstUse(t *testing.T) {
	unsorted := func(md *metadata.Metadata) { md.Names[7], md.Names[8] = md.Names[8], md.Names[7] }
	const want = `entries "file000008" and "file000007" not strictly sorted`
	path, _ := mapImage(t, 2000, 0, unsorted)
	if im, err := godwarfs.Open(path, nil); err == nil {
		im.Close()
		t.Fatal("opened by default: accepted")
	} else if !strings.Contains(err.Error(), want) {
		t.Fatalf("opened by default: error %q, want %q", err, want)
	}
	for _, o := range []godwarfs.Options{{LazyBlockCheck: true, MapMetadata: true}, {NoCheck: true}} {
		im, err := godwarfs.Open(path, &o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		_, rerr := im.ReadDir(".")
		_, serr := im.Stat("file000100")
		_, ferr := im.ReadFile("file000007")
		for what, err := range map[string]error{"ReadDir": rerr, "Stat": serr, "ReadFile": ferr} {
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
				t.Errorf("%+v: %s: error %v, want the file name and %q", o, what, err, want)
			}
		}
		im.Close()
	}
}

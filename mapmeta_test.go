package godwarfs_test

import (
	"bytes"
	"fmt"
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

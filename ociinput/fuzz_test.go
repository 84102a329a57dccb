package ociinput

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/godwarfs/godwarfs/tarinput"
)

func testImageLayer(t testing.TB) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: "d/f", Typeflag: tar.TypeReg, Mode: 0o644, Size: 5})
	tw.Write([]byte("hello"))
	tw.WriteHeader(&tar.Header{Name: "d/.wh.g", Typeflag: tar.TypeReg})
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// open opens and reads an image input; it must fail cleanly or give a
// tree.
func open(t *testing.T, input string) {
	im, err := Open(context.Background(), input, Options{Platform: "linux/amd64", Tar: tarinput.Options{TempDir: t.TempDir(), MemoryLimit: 4096}})
	if err != nil {
		if !strings.Contains(err.Error(), "input ") {
			t.Fatalf("the error does not name the input: %v", err)
		}
		return
	}
	defer im.Close()
	if _, err := im.Source().ReadTree(context.Background(), nil, nil); err != nil && !strings.Contains(err.Error(), "layer ") {
		t.Fatalf("the error does not name the layer: %v", err)
	}
}

// FuzzDockerArchive opens arbitrary bytes as a docker save archive.
func FuzzDockerArchive(f *testing.F) {
	img, err := mutate.AppendLayers(empty.Image, static.NewLayer(testImageLayer(f), types.DockerUncompressedLayer))
	if err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	tag, _ := name.NewTag("example.org/x:1")
	if err := tarball.Write(tag, img, &buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "a.tar")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		open(t, "docker-archive:"+p)
	})
}

// FuzzLayoutIndex opens a layout whose index.json is arbitrary bytes
// (its blobs are a valid image's).
func FuzzLayoutIndex(f *testing.F) {
	img, err := mutate.AppendLayers(empty.Image, static.NewLayer(testImageLayer(f), types.OCIUncompressedLayer))
	if err != nil {
		f.Fatal(err)
	}
	dir := filepath.Join(f.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		f.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		f.Fatal(err)
	}
	idx, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(idx)
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, "index.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		open(t, "oci:"+dir)
	})
}

package tarinput_test

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/tarinput"
	"github.com/godwarfs/godwarfs/writer"
)

// Build an image from a tar stream, then list it.
func ExampleNew() {
	var archive bytes.Buffer
	tw := tar.NewWriter(&archive)
	for name, data := range map[string]string{"etc/motd": "hello\n", "/usr/share/doc/README": "read me\n"} {
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))})
		tw.Write([]byte(data))
	}
	tw.Close()

	dir, err := os.MkdirTemp("", "tarinput-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	src := tarinput.New("example.tar", &archive, tarinput.Options{TempDir: dir})
	defer src.Close()
	scan := dedup.DefaultOptions()
	scan.Input, scan.Tree = "example.tar", src
	img := filepath.Join(dir, "example.dwarfs")
	if _, err := writer.Build(context.Background(), writer.BuildOptions{
		Target: writer.Target{Output: img, BlockCompression: "zstd:level=3"},
		Scan:   scan,
	}); err != nil {
		log.Fatal(err)
	}
	im, err := godwarfs.Open(img, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer im.Close()
	fs.WalkDir(im, ".", func(path string, d fs.DirEntry, err error) error {
		fmt.Println(path)
		return err
	})
	// Output:
	// .
	// etc
	// etc/motd
	// usr
	// usr/share
	// usr/share/doc
	// usr/share/doc/README
}

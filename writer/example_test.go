package writer_test

import (
	"context"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/writer"
)

// exampleTree writes a small directory with two identical files.
func exampleTree(dir string) string {
	src := filepath.Join(dir, "src")
	for name, data := range map[string]string{
		"hello.txt":      "Hello, DwarFS!\n",
		"docs/copy.txt":  "Hello, DwarFS!\n",
		"docs/notes.txt": "Stored once, read many times.\n",
	} {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	return src
}

// Build an image of a directory, then open it and list it.
func ExampleBuild() {
	dir, err := os.MkdirTemp("", "writer-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	scan := dedup.DefaultOptions() // mkdwarfs's defaults
	scan.Input = exampleTree(dir)
	img := filepath.Join(dir, "example.dwarfs")
	res, err := writer.Build(context.Background(), writer.BuildOptions{
		Target: writer.Target{Output: img, BlockCompression: "zstd:level=3"},
		Scan:   scan,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d files, %d duplicate\n", res.Stats.Files, res.Stats.DupFiles)

	im, err := godwarfs.Open(img, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer im.Close()
	err = fs.WalkDir(im, ".", func(path string, d fs.DirEntry, err error) error {
		fmt.Println(path)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// 3 files, 1 duplicate
	// .
	// docs
	// docs/copy.txt
	// docs/notes.txt
	// hello.txt
}

// Rewrite an image: recompress its blocks with lz4 and rebuild its
// metadata so that every file belongs to uid and gid 0.
func ExampleRewrite() {
	dir, err := os.MkdirTemp("", "writer-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	scan := dedup.DefaultOptions()
	scan.Input = exampleTree(dir)
	img := filepath.Join(dir, "example.dwarfs")
	if _, err := writer.Build(context.Background(), writer.BuildOptions{Target: writer.Target{Output: img}, Scan: scan}); err != nil {
		log.Fatal(err)
	}

	root := uint32(0)
	out := filepath.Join(dir, "rewritten.dwarfs")
	blocks := 0
	err = writer.Rewrite(context.Background(), writer.RewriteOptions{
		Target: writer.Target{
			Output:           out,
			BlockCompression: "lz4",
			Progress:         func(p writer.Progress) { blocks = max(blocks, p.Blocks) },
		},
		Input:           img,
		Mode:            "block",
		RebuildMetadata: true,
		Rebuild:         dedup.Policy{SetOwner: &root, SetGroup: &root},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d block recompressed\n", blocks)

	im, err := godwarfs.Open(out, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer im.Close()
	data, err := fs.ReadFile(im, "docs/notes.txt")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(data))
	// Output:
	// 1 block recompressed
	// Stored once, read many times.
}

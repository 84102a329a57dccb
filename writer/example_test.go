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

// Append a directory to an image: the image's block is copied as it is,
// and the new file whose contents the image already holds costs no data.
func ExampleAppend() {
	dir, err := os.MkdirTemp("", "writer-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	scan := dedup.DefaultOptions()
	scan.Input = exampleTree(dir)
	old := filepath.Join(dir, "old.dwarfs")
	if _, err := writer.Build(context.Background(), writer.BuildOptions{Target: writer.Target{Output: old}, Scan: scan}); err != nil {
		log.Fatal(err)
	}
	more := filepath.Join(dir, "more")
	if err := os.MkdirAll(more, 0o755); err != nil {
		log.Fatal(err)
	}
	for name, data := range map[string]string{"again.txt": "Hello, DwarFS!\n", "new.txt": "Appended later.\n"} {
		if err := os.WriteFile(filepath.Join(more, name), []byte(data), 0o644); err != nil {
			log.Fatal(err)
		}
	}

	out := filepath.Join(dir, "new.dwarfs")
	res, err := writer.Append(context.Background(), writer.AppendOptions{
		Target: writer.Target{Output: out},
		Image:  old,  // a file or an http(s):// or s3:// URL
		Input:  more, // the directory to add
		At:     "v2", // where it goes; "" joins it to the root
		Configure: func(o *dedup.Options) {
			o.Order = dedup.OrderPath // build options for the new files
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	// again.txt is a third copy of hello.txt: only new.txt needs data.
	fmt.Printf("%d new block of %d bytes, %d duplicate files\n", res.Stats.Blocks, res.Stats.BlockBytes, res.Stats.DupFiles)

	im, err := godwarfs.Open(out, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer im.Close()
	matches, err := fs.Glob(im, "v2/*")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(matches)
	// Output:
	// 1 new block of 16 bytes, 2 duplicate files
	// [v2/again.txt v2/new.txt]
}

// Merge two images, each tree in its own directory, copying their blocks.
func ExampleMerge() {
	dir, err := os.MkdirTemp("", "writer-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	scan := dedup.DefaultOptions()
	scan.Input = exampleTree(dir)
	var inputs []writer.MergeInput
	for _, name := range []string{"one.dwarfs", "two.dwarfs"} {
		img := filepath.Join(dir, name)
		if _, err := writer.Build(context.Background(), writer.BuildOptions{Target: writer.Target{Output: img}, Scan: scan}); err != nil {
			log.Fatal(err)
		}
		// The tree goes to "one" and "two" (the name without .dwarfs);
		// At: "" would put it into the root.
		inputs = append(inputs, writer.MergeInput{Image: img, At: writer.DefaultMergeAt(img)})
	}

	out := filepath.Join(dir, "merged.dwarfs")
	copied := 0
	_, err = writer.Merge(context.Background(), writer.MergeOptions{
		Target: writer.Target{Output: out, Progress: func(p writer.Progress) { copied = max(copied, p.Blocks) }},
		Inputs: inputs,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d blocks copied\n", copied)

	im, err := godwarfs.Open(out, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer im.Close()
	data, err := fs.ReadFile(im, "two/docs/notes.txt")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(data))
	// Output:
	// 2 blocks copied
	// Stored once, read many times.
}

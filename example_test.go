package godwarfs_test

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"

	"github.com/godwarfs/godwarfs"
)

// Open an image and walk it with the io/fs functions.
func Example() {
	im, err := godwarfs.Open("testdata/fixtures/example.dwarfs", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer im.Close()

	err = fs.WalkDir(im, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			fmt.Printf("%s %s (%d bytes)\n", info.Mode(), path, info.Size())
		} else {
			fmt.Printf("%s %s\n", info.Mode(), path)
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	data, err := fs.ReadFile(im, "greeting")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("greeting: %s", data)
	// Output:
	// drwxr-xr-x .
	// drwxr-xr-x docs
	// -rw-r--r-- docs/notes.md (31 bytes)
	// Lrwxrwxrwx greeting
	// -rw-r--r-- hello.txt (15 bytes)
	// greeting: Hello, DwarFS!
}

// Read part of a file at an offset through its *File handle.
func ExampleFile_ReadAt() {
	im, err := godwarfs.Open("testdata/fixtures/example.dwarfs", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer im.Close()

	f, err := im.Open("docs/notes.md")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	h := f.(*godwarfs.File)
	buf := make([]byte, 9)
	n, err := h.ReadAt(buf, 9)
	if err != nil && err != io.EOF {
		log.Fatal(err)
	}
	fmt.Printf("%d of %d bytes: %q\n", n, h.Size(), buf[:n])
	// Output: 9 of 31 bytes: "Images ar"
}

// Stream a file piece by piece the way a server sending large files would:
// start decompressing what comes next and tell the block cache what will
// not be read again, so one pass over a file larger than the cache does
// not push everything else out of it.
func ExampleFile_DontNeed() {
	im, err := godwarfs.Open("testdata/fixtures/example.dwarfs", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer im.Close()

	f, err := im.Open("hello.txt")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	h := f.(*godwarfs.File)
	var out bytes.Buffer
	buf := make([]byte, 4)
	for off := int64(0); off < h.Size(); off += int64(len(buf)) {
		h.Prefetch(off+int64(len(buf)), int64(len(buf)))
		n, err := h.ReadAt(buf, off)
		if err != nil && err != io.EOF {
			log.Fatal(err)
		}
		out.Write(buf[:n])
		h.DontNeed(off, int64(n))
	}
	fmt.Printf("%q\n", out.String())
	// Output: "Hello, DwarFS!\n"
}

// Open an image that is already in memory.
func ExampleOpenReaderAt() {
	raw, err := os.ReadFile("testdata/fixtures/example.dwarfs")
	if err != nil {
		log.Fatal(err)
	}
	im, err := godwarfs.OpenReaderAt(bytes.NewReader(raw), int64(len(raw)), "example", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer im.Close()
	target, err := im.ReadLink("greeting")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("greeting ->", target)
	// Output: greeting -> hello.txt
}

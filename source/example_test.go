package source_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"sync/atomic"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/source"
)

// blobs is a store of objects by name, standing in for a storage service.
var blobs = map[string][]byte{}

// blobFetcher reads one object of blobs: it only speaks the protocol, and
// the engine behind source.Open does the ranges, caching and retries.
type blobFetcher struct{ name string }

func (f blobFetcher) Name() string { return f.name }
func (f blobFetcher) Key() string  { return f.name }
func (f blobFetcher) Close()       {}

func (f blobFetcher) Stat(context.Context) (source.Version, error) {
	b, ok := blobs[strings.TrimPrefix(f.name, "blob://")]
	if !ok {
		return source.Version{}, errors.New("no such object")
	}
	return source.Version{Size: int64(len(b)), ETag: "1"}, nil
}

func (f blobFetcher) Get(_ context.Context, p []byte, off int64, _ source.Version, got *atomic.Int64) error {
	b := blobs[strings.TrimPrefix(f.name, "blob://")]
	if off+int64(len(p)) > int64(len(b)) {
		return fmt.Errorf("%s: range past the end", f.name)
	}
	got.Add(int64(copy(p, b[off:])))
	return nil
}

// A backend registers its scheme once, when its package is initialized,
// as database/sql drivers do (Register refuses a scheme twice).
func init() {
	source.Register("blob", source.Backend{
		Open: func(_ context.Context, name string, _ source.Options) (source.Fetcher, error) {
			return blobFetcher{name}, nil
		},
	})
}

// Register a storage backend for a URL scheme; godwarfs.Open then reads
// images at such URLs, as it reads http://, s3:// and docker:// ones once
// their packages (source/remote) are imported.
func ExampleRegister() {
	b, err := os.ReadFile("../testdata/fixtures/example.dwarfs")
	if err != nil {
		log.Fatal(err)
	}
	blobs["example.dwarfs"] = b

	im, err := godwarfs.Open("blob://example.dwarfs", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer im.Close()
	data, err := im.ReadFile("hello.txt")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s", data)
	// Output: Hello, DwarFS!
}

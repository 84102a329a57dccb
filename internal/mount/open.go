package mount

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/mountopts"
)

type multiCloser []io.Closer

func (m multiCloser) Close() error {
	var first error
	for _, c := range m {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// OpenImage is the Opener used by the dwarfs command: it opens the image
// according to the mount options (offset, imagesize, cache_image, cache
// size, workers, preloading).
func OpenImage(path string, o mountopts.Options) (fusefs.Source, io.Closer, error) {
	gopts := godwarfs.Options{
		// o.ImageOffset is -1 for offset=auto; an explicit 0 is exact.
		ImageOffset: o.ImageOffset, ExactOffset: o.ImageOffset == 0,
		CacheSize: o.CacheSize, Workers: o.Workers, NoCheck: o.NoCheck,
	}

	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open image: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("open image: %w", err)
	}
	size := st.Size()
	if o.ImageSize > 0 {
		size = min(size, max(o.ImageOffset, 0)+o.ImageSize)
	}
	var r io.ReaderAt = f
	if o.CacheImage {
		// Keep the whole image in memory so reads never touch the file.
		buf := make([]byte, size)
		if _, err := io.ReadFull(io.NewSectionReader(f, 0, size), buf); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("cache_image: reading %s: %w", path, err)
		}
		r = bytes.NewReader(buf)
	}
	im, err := godwarfs.OpenReaderAt(r, size, path, &gopts)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("open image: %w", err)
	}
	src := fusefs.NewImageSource(im)
	if o.PreloadAll || len(o.PreloadCategory) > 0 {
		src.Preload(o.PreloadAll, o.PreloadCategory)
	}
	// Order matters: stop preloading, then the cache, then the file.
	return src, multiCloser{src, im, f}, nil
}

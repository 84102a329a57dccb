//go:build !windows && !(linux && (386 || arm))

package dwarfs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/imagesig"
	"github.com/godwarfs/godwarfs/internal/mountopts"
	"github.com/godwarfs/godwarfs/source"
	_ "github.com/godwarfs/godwarfs/source/remote" // images at http(s)://, s3:// and docker://
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
	return openImage(path, o, nil)
}

// openImage is OpenImage on the shared block cache sc (nil: a cache of
// the image's own, as the options say).
func openImage(path string, o mountopts.Options, sc *block.SharedCache) (fusefs.Source, io.Closer, error) {
	gopts := godwarfs.Options{
		Cache: sc,
		// o.ImageOffset is -1 for offset=auto; an explicit 0 is exact.
		ImageOffset: o.ImageOffset, ExactOffset: o.ImageOffset == 0,
		CacheSize: o.CacheSize, Workers: o.Workers, NoCheck: o.NoCheck,
		// Mounting reads the metadata, not every block.
		LazyBlockCheck: true,
		// The process serves this one image until it exits.
		MapMetadata: true,
		// For a signature at a URL (signature=, or IMAGE.sig).
		Remote: RemoteOptions(o),
	}

	var err error
	if gopts.Verify, err = verifyOptions(path, o); err != nil {
		return nil, nil, err
	}
	var f source.Source
	if source.IsRemote(path) {
		f, err = source.Open(context.Background(), path, RemoteOptions(o))
		if err == nil {
			if off, ok := source.ImageOffset(f); ok && gopts.ImageOffset < 0 {
				// Known from the section index: no prefix scan.
				gopts.ImageOffset, gopts.ExactOffset = off, true
			}
			// Checking every block at open would fetch the whole
			// image; blocks are verified when read.
			gopts.NoCheck = true
			// Cache workers fetch as well as decode: let prefetches
			// use all the parallel requests allowed.
			gopts.Workers = max(gopts.Workers, RemoteOptions(o).Workers)
		}
	} else {
		f, err = source.OpenFile(path)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open image: %w", err)
	}
	name := f.Name()
	size := f.Size()
	if o.ImageSize > 0 {
		size = min(size, max(o.ImageOffset, 0)+o.ImageSize)
	}
	var r io.ReaderAt = f
	if o.CacheImage {
		// Keep the whole image in memory so reads never touch the file.
		buf := make([]byte, size)
		if _, err := io.ReadFull(io.NewSectionReader(f, 0, size), buf); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("cache_image: reading %s: %w", name, err)
		}
		r = bytes.NewReader(buf)
	}
	im, err := godwarfs.OpenReaderAt(r, size, name, &gopts)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("open image: %w", err)
	}
	src := fusefs.NewImageSource(im)
	if _, ok := f.(*source.File); !ok {
		src.SetRemote(f)
	}
	if o.PreloadAll || len(o.PreloadCategory) > 0 {
		if err := src.Preload(o.PreloadAll, o.PreloadCategory); err != nil {
			multiCloser{src, im, f}.Close()
			return nil, nil, fmt.Errorf("%s: %w", source.Redact(path), err)
		}
	}
	// Order matters: stop preloading, then the cache, then the file.
	return src, multiCloser{src, im, f}, nil
}

// verifyOptions reads the allowed signers file -o verify names and says
// where the signature is: -o signature (a path or URL), else IMAGE.sig
// beside the image, wherever it is stored. The image's open reads it.
func verifyOptions(path string, o mountopts.Options) (*godwarfs.Verify, error) {
	if o.Verify == "" {
		if o.Signature != "" {
			return nil, fmt.Errorf("signature=%s needs verify=SIGNERS_FILE", source.Redact(o.Signature))
		}
		return nil, nil
	}
	sigPath := o.Signature
	if sigPath == "" {
		sigPath = source.Sibling(path, ".sig")
	}
	as, err := imagesig.ReadAllowedSigners(o.Verify)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	return &godwarfs.Verify{AllowedSigners: as, SignatureFile: sigPath}, nil
}

// RemoteOptions maps the mount options for images at URLs to
// source.Options.
func RemoteOptions(o mountopts.Options) source.Options {
	so := source.Options{
		Workers: o.RemoteWorkers, Timeout: o.RemoteTimeout, Attempts: o.RemoteAttempts,
		DiskCache: o.DiskCache, DiskCacheSize: o.DiskCacheSize,
		S3:   source.S3Options{Endpoint: o.S3Endpoint, Region: o.S3Region, PathStyle: o.S3PathStyle},
		Logf: func(format string, args ...any) { log.Printf("dwarfs: "+format, args...) },
		// The image is opened with lazy block headers (LazyBlockCheck).
		LazyBlockHeaders: true,
	}
	if so.Workers <= 0 {
		so.Workers = 4
	}
	return so
}

package writer

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/block/encode"
	"github.com/godwarfs/godwarfs/dedup"
)

// UpdateOptions configure Update.
type UpdateOptions struct {
	Target
	// Image is the image to update (a file or an http(s):// or s3:// URL);
	// it is never modified.
	Image string
	// Input is the directory whose tree the new image has. Exactly one of
	// Input and Upper is set.
	Input string
	// Upper is an overlayfs upper directory to apply to the image's tree
	// (see ApplyUpper).
	Upper string
	// Hash finds unchanged files by their contents (every file is read)
	// instead of by path, size and mtime.
	Hash bool
	// MaxDead is the share (0 to 1) of dead bytes in the kept blocks
	// above which the blocks with dead data are rewritten; below 0:
	// never. Compact rewrites them in any case.
	MaxDead float64
	Compact bool
	// Configure, if set, adjusts the build options, which start as the
	// image's own (see AppendOptions.Configure).
	Configure func(*dedup.Options)
	// MemoryLimit is BuildOptions.MemoryLimit.
	MemoryLimit int64
	// NoCheck skips the consistency check of the image's metadata.
	NoCheck bool
	// Header is written before the image.
	Header []byte
	// SegmentIndex bounds the image's block data decoded and indexed for
	// segment matches (0: DefaultSegmentIndex; below 0: none).
	SegmentIndex int64
	// Warn receives warnings about the upper directory (nil: Configure's
	// Log, if any).
	Warn func(format string, args ...any)
}

// ErrUpper is wrapped by the errors for an overlayfs upper directory
// that cannot be applied (redirects, metacopy files).
var ErrUpper = errors.New("unsupported overlayfs upper directory")

// DefaultMaxDead is UpdateOptions.MaxDead's default.
const DefaultMaxDead = 0.2

// Update writes a new image whose tree is opts.Input's (or opts.Image's
// with opts.Upper applied). Files whose path, size and mtime are the
// image's keep their chunks, unread; the others are read, stored as an
// image file of the same contents where there is one, else ordered and
// segmented (also against the image's blocks) into new blocks as a build
// would. The image's blocks that chunks still refer to are copied byte
// for byte after the new ones; the others are dropped. With more dead
// data in the kept blocks than MaxDead allows (or Compact), the blocks
// with dead data are not kept: their live files are stored anew.
func Update(ctx context.Context, opts UpdateOptions) (*BuildResult, error) {
	if (opts.Input == "") == (opts.Upper == "") {
		return nil, fmt.Errorf("update: need either an input directory or an upper directory: %w", ErrUsage)
	}
	b, err := openBases(ctx, []string{opts.Image}, !opts.NoCheck)
	if err != nil {
		return nil, fmt.Errorf("update: %w", err)
	}
	defer b.close()
	bi := b.images[0]
	scan := dedup.ImageOptions(bi.fs)
	scan.Input = opts.Input
	if !opts.Compact {
		// Compaction segments most of the data again: a build's window.
		scan.WindowBits = AppendWindowBits
	}
	if opts.Configure != nil {
		opts.Configure(&scan)
	}
	var upper *upperTree
	if opts.Upper != "" {
		warn := opts.Warn
		if warn == nil {
			warn = func(format string, args ...any) {
				if scan.Log != nil {
					fmt.Fprintf(scan.Log, "warning: "+format+"\n", args...)
				}
			}
		}
		upper = &upperTree{dir: opts.Upper, image: bi, warn: warn}
		defer upper.close()
		// The image's devices and specials stay unless the upper
		// directory removes them.
		scan.Input, scan.Tree, scan.InputList = opts.Upper, upper, nil
		scan.WithDevices, scan.WithSpecials = true, true
	}
	scan.InputAt = ""
	scan.Base = b.dedupBase([]string{""}, false)
	scan.Base.Hash = b.hasher(&scan)
	u := &dedup.Update{Hash: opts.Hash, MaxDead: opts.MaxDead, Compact: opts.Compact,
		BlockSize: b.blockSizes(bi)}
	if upper != nil {
		u.Verify = upper.verify
	}
	if limit := cmp.Or(opts.SegmentIndex, DefaultSegmentIndex); limit > 0 {
		u.IndexBytes = limit
		scan.Base.BlockData = func(i int) ([]byte, error) {
			s, ok := bi.im.Block(i)
			if !ok {
				return nil, fmt.Errorf("no block %d: %w", i, block.ErrCorrupt)
			}
			return bi.im.ReadDecompressedLimit(s, bi.limit)
		}
	}
	scan.Base.Update = u
	b.update = true
	r, err := grow(ctx, opts.Target, scan, b, opts.MemoryLimit, opts.Header)
	if err != nil {
		return nil, fmt.Errorf("update: %w", err)
	}
	return r, nil
}

// blockSizes returns the uncompressed size of the image's blocks, read
// from the frames' first bytes (or whole payloads where a codec states it
// at the end), each once.
func (b *bases) blockSizes(bi *baseImage) func(n int) (int64, error) {
	sizes := map[int]int64{}
	return func(n int) (int64, error) {
		if v, ok := sizes[n]; ok {
			return v, nil
		}
		s, ok := bi.im.Block(n)
		if !ok {
			return 0, fmt.Errorf("no block %d: %w", n, block.ErrCorrupt)
		}
		v, err := blockSize(bi.im, s)
		if err != nil {
			return 0, err
		}
		sizes[n] = v
		return v, nil
	}
}

// blockSize returns the uncompressed size of block section s.
func blockSize(im *block.Image, s block.Section) (int64, error) {
	if s.Compression == block.CompNone {
		return s.Length, nil
	}
	head := make([]byte, min(s.Length, 64))
	if _, err := im.ReaderAt().ReadAt(head, im.Offset()+s.DataOffset); err != nil {
		return 0, fmt.Errorf("%s: %w", s, err)
	}
	if n, ok, err := block.SizeFromHeader(s.Compression, head); ok || err != nil {
		return n, err
	}
	raw, err := im.ReadRaw(s)
	if err != nil {
		return 0, err
	}
	return block.UncompressedSize(s.Compression, raw)
}

// copyKept submits the base blocks an update keeps, as stored, to the
// pipeline (after the new blocks).
func (b *bases) copyKept(ctx context.Context, pipe *pipeline, kept []int, report func(func(*Progress))) error {
	bi := b.images[0]
	for _, i := range kept {
		if err := ctx.Err(); err != nil {
			return err
		}
		s, ok := bi.im.Block(i)
		if !ok {
			return fmt.Errorf("%s: no block %d: %w", bi.name, i, block.ErrCorrupt)
		}
		im := bi.im
		err := pipe.Submit(min(s.Length, bi.limit), func(Threads, *encode.Workspace) (block.Compression, []byte, error) {
			raw, err := im.ReadRaw(s)
			if err != nil {
				return 0, nil, fmt.Errorf("%s: block %d: %w", bi.name, i, err)
			}
			return s.Compression, raw, nil
		}, func(block.Compression, []byte) {
			report(func(p *Progress) { p.Blocks++ })
		})
		if err != nil {
			return err
		}
	}
	return nil
}

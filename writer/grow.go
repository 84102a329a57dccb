package writer

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/block/encode"
	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/metadata"
	"github.com/godwarfs/godwarfs/ociartifact"
	"github.com/godwarfs/godwarfs/source"
)

// AppendOptions configure Append.
type AppendOptions struct {
	Target
	// Image is the image to append to (a file or an http(s):// or s3://
	// URL); it is never modified.
	Image string
	// Input is the directory whose tree is added.
	Input string
	// At is where Input's tree goes in the image: a slash separated path,
	// "" for the root (its entries join the image's root directory).
	At string
	// Replace lets a path of Input replace the same path in the image;
	// without it a path both have is an error (dedup.ErrPathExists)
	// unless both are directories, whose entries merge.
	Replace bool
	// Configure, if set, adjusts the build options, which start as the
	// image's own (dedup.ImageOptions: block size, time resolution,
	// packing, ...) with Input set: ordering, filters, categories and
	// any of the image's options the caller overrides.
	Configure func(*dedup.Options)
	// MemoryLimit is BuildOptions.MemoryLimit.
	MemoryLimit int64
	// NoCheck skips the consistency check of the image's metadata.
	NoCheck bool
	// Header is written before the image (mkdwarfs --header).
	Header []byte
	// SegmentIndex bounds the image's block data (counted as whole blocks
	// of its block size) that is decoded and indexed so that new data can
	// refer to matching segments in it: the image's last blocks, up to
	// this size (0: DefaultSegmentIndex; below 0: none, only whole files
	// are matched). It is held in memory while new data is segmented.
	SegmentIndex int64
}

// DefaultSegmentIndex is AppendOptions.SegmentIndex's default.
const DefaultSegmentIndex = 1 << 30

// AppendWindowBits is the segmenter window (as bits of its size) an
// append starts with, finer than a build's. New blocks are compressed on
// their own: where one build lets the compressor find what a changed file
// shares with its old version, an append can only refer to it by segments,
// so the segments must be short. Configure may set another.
const AppendWindowBits = 7

// MergeInput is one image of a Merge.
type MergeInput struct {
	// Image is a file or an http(s):// or s3:// URL.
	Image string
	// At is where the image's tree goes: a slash separated path, "" for
	// the root.
	At string
}

// MergeOptions configure Merge.
type MergeOptions struct {
	Target
	Inputs []MergeInput
	// Replace lets a later input's path replace an earlier one's; without
	// it a path two inputs have is an error (dedup.ErrPathExists) unless
	// both are directories, whose entries merge.
	Replace bool
	// Configure, if set, adjusts the metadata options, which start as the
	// first input's (dedup.ImageOptions).
	Configure func(*dedup.Options)
	// NoCheck skips the consistency check of the inputs' metadata.
	NoCheck bool
	// Header is written before the image (mkdwarfs --header).
	Header []byte
	// KeepApart leaves files of different inputs apart even when their
	// contents are equal. Without it, files of a size that two inputs
	// have are read (their blocks decoded) and hashed, and a file with
	// the contents of an earlier input's file is stored as that file.
	// Either way no block is changed.
	KeepApart bool
}

// DefaultMergeAt is the directory an image's tree goes to in a merge
// without an explicit one: its file name without the .dwarfs suffix.
func DefaultMergeAt(image string) string {
	name := image
	if r, err := ociartifact.ParseReference(image); err == nil {
		// docker://REGISTRY/NS/APP:TAG: the repository's last element.
		name = path.Base(r.Context().RepositoryStr())
	} else if source.IsRemote(image) {
		name = path.Base(strings.SplitN(image, "?", 2)[0])
	} else {
		name = filepath.Base(image)
	}
	return strings.TrimSuffix(name, ".dwarfs")
}

// baseImage is an input image of Append or Merge.
type baseImage struct {
	name  string
	src   source.Source
	im    *block.Image
	md    *metadata.Metadata
	fs    *metadata.FS
	limit int64
	cache *decodedBlocks // made by hasher
	// history holds the image's history entries.
	history []metadata.HistoryRecord
}

// bases are the input images of Append or Merge, in order.
type bases struct {
	images  []*baseImage
	blocks  int
	history []metadata.HistoryRecord
	// shards is set when the images are the shards of one plan.
	shards bool
	// update: the blocks are copied after the new ones, only those in
	// kept (see dedup.Update).
	update bool
	kept   []int
}

// openBase opens an input image and reads its metadata and history.
func openBase(ctx context.Context, name string, check bool) (*baseImage, error) {
	src, err := source.Open(ctx, name, source.Options{})
	if err != nil {
		return nil, err
	}
	bi := &baseImage{name: src.Name(), src: src}
	if err := bi.load(check); err != nil {
		src.Close()
		return nil, fmt.Errorf("%s: %w", bi.name, err)
	}
	return bi, nil
}

func (bi *baseImage) load(check bool) error {
	off := int64(-1)
	if o, ok := source.ImageOffset(bi.src); ok {
		off = o
	}
	im, err := block.OpenImage(bi.src, bi.src.Size(), block.Options{ImageOffset: off, Name: bi.name})
	if err != nil {
		return err
	}
	bi.im = im
	schemas, metas := im.Find(block.SectionMetadataSchema), im.Find(block.SectionMetadata)
	if len(schemas) != 1 || len(metas) != 1 {
		return fmt.Errorf("image has %d schema and %d metadata sections, want one each: %w", len(schemas), len(metas), block.ErrCorrupt)
	}
	schema, err := im.ReadDecompressed(schemas[0])
	if err != nil {
		return err
	}
	data, err := im.ReadDecompressed(metas[0])
	if err != nil {
		return err
	}
	if bi.md, err = metadata.Decode(schema, data); err != nil {
		return err
	}
	if bi.fs, err = metadata.NewFS(bi.md); err != nil {
		return err
	}
	// Without the consistency check, still every index in range: the
	// tables are read whole.
	chk := bi.fs.CheckTables
	if check {
		chk = bi.fs.Check
	}
	if err := chk(); err != nil {
		return err
	}
	bi.limit = int64(bi.md.BlockSize)
	if bi.limit <= 0 {
		bi.limit = block.DefaultMaxBlockSize
	}
	for _, s := range im.Find(block.SectionHistory) {
		raw, err := im.ReadDecompressed(s)
		if err != nil {
			return fmt.Errorf("history: %w", err)
		}
		h, err := metadata.DecodeHistory(raw)
		if err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
		bi.history = append(bi.history, h.Entries...)
	}
	return nil
}

// openBases opens the images in order.
func openBases(ctx context.Context, names []string, check bool) (*bases, error) {
	b := &bases{}
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			b.close()
			return nil, err
		}
		bi, err := openBase(ctx, n, check)
		if err != nil {
			b.close()
			return nil, err
		}
		b.images = append(b.images, bi)
		b.blocks += bi.im.NumBlocks()
		b.history = append(b.history, bi.history...)
	}
	return b, nil
}

// reorder puts the images (and their places, at) in the given order.
func (b *bases) reorder(order []int, at []string) {
	images, places := make([]*baseImage, len(order)), make([]string, len(order))
	b.history = nil
	for i, j := range order {
		images[i], places[i] = b.images[j], at[j]
		b.history = append(b.history, images[i].history...)
	}
	b.images = images
	copy(at, places)
}

func (b *bases) close() {
	for _, bi := range b.images {
		if bi.cache != nil {
			bi.cache.close()
		}
		bi.src.Close()
	}
}

// dedupBase describes the images to the metadata builder; at gives each
// image's place.
func (b *bases) dedupBase(at []string, replace bool) *dedup.Base {
	db := &dedup.Base{Blocks: b.blocks, Replace: replace}
	var shift uint32
	withCats := false
	for _, bi := range b.images {
		withCats = withCats || (bi.md.HasCategoryNames && bi.md.HasBlockCategories)
	}
	if withCats {
		db.BlockCategories = make([]string, 0, b.blocks)
	}
	for i, bi := range b.images {
		n := bi.im.NumBlocks()
		db.Trees = append(db.Trees, dedup.BaseTree{Name: bi.name, FS: bi.fs, At: at[i], BlockShift: shift, Blocks: n})
		if withCats {
			md := bi.md
			for k := range n {
				name := dedup.CategoryDefault
				if md.HasCategoryNames && k < len(md.BlockCategories) && int(md.BlockCategories[k]) < len(md.CategoryNames) {
					name = md.CategoryNames[md.BlockCategories[k]]
				}
				db.BlockCategories = append(db.BlockCategories, name)
			}
			for _, kv := range md.BlockCategoryMetadata {
				if int(kv.Key) < n && int(kv.Value) < len(md.CategoryMetadataJSON) {
					if db.BlockCategoryMetadata == nil {
						db.BlockCategoryMetadata = map[int]string{}
					}
					db.BlockCategoryMetadata[int(shift)+int(kv.Key)] = md.CategoryMetadataJSON[kv.Value]
				}
			}
		}
		shift += uint32(n)
	}
	return db
}

// copyBlocks submits every input block, as stored, to the pipeline: its
// workers read them (in parallel, which hides the latency of a remote
// image) and the pipeline writes them in order. The XXH3 checksum of
// each is verified on the way.
func (b *bases) copyBlocks(ctx context.Context, pipe *pipeline, report func(func(*Progress))) error {
	for _, bi := range b.images {
		for i, s := range bi.im.Blocks() {
			if err := ctx.Err(); err != nil {
				return err
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
	}
	return nil
}

// hasher returns the whole-file hash function Base.Hash of the images.
func (b *bases) hasher(opt *dedup.Options) func(tree int, ino uint32) ([]byte, error) {
	if opt.FileHash == nil {
		return nil
	}
	return func(tree int, ino uint32) ([]byte, error) {
		bi := b.images[tree]
		if bi.cache == nil {
			bi.cache = newDecodedBlocks(bi.im, bi.limit, 4)
		}
		chunks, err := bi.fs.FileChunks(ino)
		if err != nil {
			return nil, err
		}
		h := opt.FileHash()
		var zeros [4096]byte
		for _, c := range chunks {
			if c.Hole {
				for n := c.Size; n > 0; {
					k := min(n, uint64(len(zeros)))
					h.Write(zeros[:k])
					n -= k
				}
				continue
			}
			d, err := bi.cache.get(c.Block)
			if err != nil {
				return nil, err
			}
			if uint64(c.Offset)+c.Size > uint64(len(d)) {
				return nil, fmt.Errorf("chunk %d+%d beyond block %d of %d bytes: %w", c.Offset, c.Size, c.Block, len(d), block.ErrCorrupt)
			}
			h.Write(d[c.Offset : uint64(c.Offset)+c.Size])
		}
		return h.Sum(nil), nil
	}
}

// grow writes the image of the base images (and the scanned tree in scan,
// if scan.Input is set) to t.Output.
func grow(ctx context.Context, t Target, scan dedup.Options, b *bases, memLimit int64, header []byte) (*BuildResult, error) {
	for _, s := range []struct {
		spec *string
		def  string
	}{{&t.BlockCompression, DefaultBlockCompression}, {&t.SchemaCompression, DefaultSchemaCompression},
		{&t.MetadataCompression, DefaultMetadataCompression}, {&t.HistoryCompression, DefaultHistoryCompression}} {
		if *s.spec == "" {
			*s.spec = s.def
		}
	}
	if err := sameFiles(t.Output, b); err != nil {
		return nil, err
	}
	r, err := buildImage(ctx, BuildOptions{Target: t, Scan: scan, MemoryLimit: memLimit, Header: header}, b)
	if err != nil {
		return nil, err
	}
	r.CopiedBlocks = b.blocks
	if b.update {
		r.CopiedBlocks = len(b.kept)
		for _, n := range b.kept {
			s, _ := b.images[0].im.Block(n)
			r.CopiedBytes += s.Length
		}
	}
	for _, bi := range b.images {
		for _, s := range bi.im.Blocks() {
			if !b.update {
				r.CopiedBytes += s.Length
			}
		}
		f := bi.src.Stats()
		r.Fetched.Requests += f.Requests
		r.Fetched.Retries += f.Retries
		r.Fetched.BytesFetched += f.BytesFetched
	}
	return r, nil
}

// sameFiles refuses an output that is one of the input images.
func sameFiles(output string, b *bases) error {
	ost, err := os.Stat(output)
	if err != nil || output == "-" {
		return nil
	}
	for _, bi := range b.images {
		if f, ok := bi.src.(*source.File); ok {
			if ist, err := f.File().Stat(); err == nil && os.SameFile(ist, ost) {
				return fmt.Errorf("%s and %s: %w", bi.name, output, ErrSameFile)
			}
		}
	}
	return nil
}

// Append writes a new image: opts.Image's tree with opts.Input's added at
// opts.At. The image's blocks are copied byte for byte; files of Input
// whose contents the image has (by whole-file hash) are stored as those
// files, the others are ordered, segmented and compressed into new blocks
// as a build would. The metadata is made anew for the whole tree with the
// image's options (see AppendOptions.Configure), and the history gets a
// new entry after the image's.
func Append(ctx context.Context, opts AppendOptions) (*BuildResult, error) {
	if opts.Input == "" {
		return nil, fmt.Errorf("append: no input directory: %w", ErrUsage)
	}
	b, err := openBases(ctx, []string{opts.Image}, !opts.NoCheck)
	if err != nil {
		return nil, fmt.Errorf("append: %w", err)
	}
	defer b.close()
	scan := dedup.ImageOptions(b.images[0].fs)
	scan.Input = opts.Input
	scan.WindowBits = AppendWindowBits
	if opts.Configure != nil {
		opts.Configure(&scan)
	}
	scan.InputAt = opts.At
	scan.Base = b.dedupBase([]string{""}, opts.Replace)
	scan.Base.Hash = b.hasher(&scan)
	if limit := cmp.Or(opts.SegmentIndex, DefaultSegmentIndex); limit > 0 {
		bi := b.images[0]
		n := bi.im.NumBlocks()
		k := int(min(limit/max(bi.limit, 1), int64(n)))
		for i := n - k; i < n; i++ {
			scan.Base.IndexBlocks = append(scan.Base.IndexBlocks, i)
		}
		scan.Base.BlockData = func(i int) ([]byte, error) {
			s, ok := bi.im.Block(i)
			if !ok {
				return nil, fmt.Errorf("no block %d: %w", i, block.ErrCorrupt)
			}
			return bi.im.ReadDecompressedLimit(s, bi.limit)
		}
	}
	r, err := grow(ctx, opts.Target, scan, b, opts.MemoryLimit, opts.Header)
	if err != nil {
		return nil, fmt.Errorf("append: %w", err)
	}
	return r, nil
}

// Merge writes one image of the trees of opts.Inputs, each at its At.
// Every input's blocks are copied byte for byte (nothing is decoded, so
// inputs at URLs are read with one ranged request per block); blocks keep
// their sizes, and the new image's block size is the largest. Files that
// share their chunks in an input share them in the output. The metadata
// is made anew with the first input's options (see
// MergeOptions.Configure), and the history holds the inputs' entries in
// order and a new one. When any input is a shard image (ShardOptions),
// the inputs must be every shard of one plan, each once (else the error
// wraps ErrShard, naming the missing, duplicate and foreign inputs), and
// they are merged in shard order.
func Merge(ctx context.Context, opts MergeOptions) (*BuildResult, error) {
	if len(opts.Inputs) == 0 {
		return nil, fmt.Errorf("merge: no input images: %w", ErrUsage)
	}
	names := make([]string, len(opts.Inputs))
	at := make([]string, len(opts.Inputs))
	for i, in := range opts.Inputs {
		names[i], at[i] = in.Image, in.At
	}
	b, err := openBases(ctx, names, !opts.NoCheck)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	defer b.close()
	order, err := checkShards(b)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	b.reorder(order, at)
	if b.shards && opts.History.Omit {
		// The last shard's entry would be the merged image's last.
		return nil, fmt.Errorf("merge: a merge of shards needs its own history entry, or the image would read as the last shard: %w", ErrUsage)
	}
	scan := dedup.ImageOptions(b.images[0].fs)
	if opts.Configure != nil {
		opts.Configure(&scan)
	}
	scan.Input, scan.InputList = "", nil
	scan.Base = b.dedupBase(at, opts.Replace)
	if !opts.KeepApart {
		scan.Base.Hash = b.hasher(&scan)
		scan.Base.MatchAcross = true
	}
	r, err := grow(ctx, opts.Target, scan, b, 0, opts.Header)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	return r, nil
}

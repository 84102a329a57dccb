package writer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/block/encode"
	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/metadata"
	"github.com/godwarfs/godwarfs/source"
)

// Errors returned (wrapped) by Recompress.
var (
	// ErrSameFile is returned when the output path names the input file.
	ErrSameFile = errors.New("output file is the same as the input file")
	// ErrNotSupported is returned for options that are not implemented.
	ErrNotSupported = errors.New("not supported yet")
	// ErrUsage reports invalid option values.
	ErrUsage = dedup.ErrPolicy
)

// RewriteOptions configure Rewrite. Target's compression specs apply to
// the sections Mode selects; "" keeps a section's stored bytes (or, when
// the section has to be re-encoded anyway, its algorithm with default
// parameters).
type RewriteOptions struct {
	Target
	// Input is the image to read; it is never modified.
	Input string
	// Mode is "all" (default when ""), "block", "metadata" or "none".
	// "block" recompresses BLOCK sections only, "metadata" the schema,
	// metadata and history sections only, "none" recompresses nothing
	// (useful with RebuildMetadata or to rewrite old framing as 2.5).
	Mode string
	// RemoveHeader drops any prefix before the first section.
	RemoveHeader bool
	// NoMetadataVersionHistory: do not record the previous metadata
	// incarnation in metadata_version_history on rebuild.
	NoMetadataVersionHistory bool
	// NoCheck skips the fast (XXH3) integrity check of all input sections
	// and the consistency check of rebuilt metadata.
	NoCheck bool
	// RebuildMetadata decodes, transforms (Rebuild) and re-encodes the
	// metadata. Legacy (format <= 2.2, no dir_entries) metadata is always
	// rebuilt into the 2.3+ model.
	RebuildMetadata bool
	// Rebuild is the policy of the metadata rebuild; what it leaves unset
	// keeps the image's value.
	Rebuild dedup.Policy
	// Categories restricts block recompression to blocks of these
	// categories (--recompress-categories). An element prefixed with "!"
	// excludes that category; if only exclusions are given, all other
	// categories are included. Blocks not selected are copied raw. It is an
	// error to name a category the image does not have, and to set
	// Categories at all for an image without category information.
	Categories []string
	// ChangeBlockSizeBits (--change-block-size with -S n, 10 <= n <= 30)
	// re-chunks all file data into blocks of 2^n bytes: every file's
	// contents are read through its chunks and concatenated into new
	// blocks (no segmenter / deduplication; per-category streams are kept
	// apart). Implies a metadata rebuild and re-encoding of every block
	// (with BlockCompression, or the first input block's algorithm).
	ChangeBlockSizeBits int
	// Now is the clock for the history timestamp (nil: time.Now).
	Now func() time.Time
}

// Rewrite reads the image opts.Input and writes the rewritten image to
// opts.Output, always as a v2.5 image with consecutive section numbers
// and (unless NoSectionIndex) a fresh SECTION_INDEX.
func Rewrite(ctx context.Context, opts RewriteOptions) (err error) {
	inPath, outPath := opts.Input, opts.Output
	if opts.Mode == "" {
		opts.Mode = "all"
	}
	switch opts.Mode {
	case "all", "block", "metadata", "none":
	default:
		return fmt.Errorf("rewrite: mode %q (want all, block, metadata or none): %w", opts.Mode, ErrUsage)
	}
	if b := opts.ChangeBlockSizeBits; b != 0 && (b < 10 || b > 30) {
		return fmt.Errorf("rewrite: --change-block-size: block size bits %d not in [10, 30]: %w", b, ErrUsage)
	}
	opts.Workers = opts.workers()
	// A local file or an image at a URL: a rewrite reads every block
	// once, in order, so a remote image streams through.
	in, err := source.Open(ctx, inPath, source.Options{})
	if err != nil {
		return fmt.Errorf("rewrite: %w", err)
	}
	defer in.Close()
	if f, ok := in.(*source.File); ok {
		ist, err := f.File().Stat()
		if err != nil {
			return fmt.Errorf("rewrite: %w", err)
		}
		if ost, err := os.Stat(outPath); err == nil && outPath != "-" && os.SameFile(ist, ost) {
			return fmt.Errorf("rewrite: %s and %s: %w", inPath, outPath, ErrSameFile)
		}
	}
	imageOffset := int64(-1)
	if off, ok := source.ImageOffset(in); ok {
		imageOffset = off // known from the section index
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("rewrite: %w", err)
	}

	r := &rewriter{ctx: ctx, opts: opts, comps: compressors{}}
	r.im, err = block.OpenImage(in, in.Size(), block.Options{ImageOffset: imageOffset, Name: in.Name()})
	if err != nil {
		return fmt.Errorf("rewrite: open %s: %w", in.Name(), err)
	}
	if err := r.prepare(in); err != nil {
		return fmt.Errorf("rewrite: %w", err)
	}
	if outPath == "-" && opts.Stdout == nil {
		return fmt.Errorf("rewrite: output - needs Target.Stdout: %w", ErrUsage)
	}
	out, err := createOutput(outPath, opts.Overwrite, opts.Stdout)
	if err != nil {
		return fmt.Errorf("rewrite: %w", err)
	}
	defer out.Abort()
	if err := r.write(out); err != nil {
		return fmt.Errorf("rewrite: %w", err)
	}
	if err := out.Commit(ctx); err != nil {
		return fmt.Errorf("rewrite: %w", err)
	}
	return nil
}

type rewriter struct {
	ctx  context.Context
	opts RewriteOptions
	im   *block.Image

	header     []byte
	schemaSec  block.Section
	metaSec    block.Section
	md         *metadata.Metadata
	schemaRaw  []byte // decompressed schema
	metaRaw    []byte // decompressed metadata
	rebuild    bool
	blockLimit int64
	selected   []bool // per block: recompress?
	rechunk    *rechunker
	blockComp  encode.Compressor
	catComp    map[uint32]encode.Compressor // by category index (-C CAT::SPEC)
	bound      map[[2]int]encode.Compressor // by category and metadata index (compFor)
	comps      compressors                  // non-block compressors by spec

	rawMu  sync.Mutex
	rawBuf []byte // compressed payload being decoded (see recodeBlock)
}

func (r *rewriter) progress(p Progress, format string, args ...any) {
	p.Message = fmt.Sprintf(format, args...)
	r.opts.progress(p)
}

func (r *rewriter) recompBlocks() bool {
	return r.opts.Mode == "all" || r.opts.Mode == "block"
}

func (r *rewriter) recompMeta() bool {
	return r.opts.Mode == "all" || r.opts.Mode == "metadata"
}

// prepare checks the input, loads the metadata and decides what to do.
func (r *rewriter) prepare(in io.ReaderAt) error {
	im := r.im
	if !r.opts.NoCheck {
		for _, s := range im.Sections() {
			if err := r.ctx.Err(); err != nil {
				return err
			}
			if err := im.VerifyFast(s); err != nil {
				return fmt.Errorf("integrity check: %w", err)
			}
		}
	}
	if !r.opts.RemoveHeader && im.Offset() > 0 {
		r.header = make([]byte, im.Offset())
		if _, err := in.ReadAt(r.header, 0); err != nil {
			return fmt.Errorf("read header: %w", err)
		}
	}
	schemas := im.Find(block.SectionMetadataSchema)
	metas := im.Find(block.SectionMetadata)
	if len(schemas) != 1 || len(metas) != 1 {
		return fmt.Errorf("image has %d schema and %d metadata sections, want one each: %w", len(schemas), len(metas), block.ErrCorrupt)
	}
	r.schemaSec, r.metaSec = schemas[0], metas[0]
	var err error
	if r.schemaRaw, err = im.ReadDecompressed(r.schemaSec); err != nil {
		return err
	}
	if r.metaRaw, err = im.ReadDecompressed(r.metaSec); err != nil {
		return err
	}
	if r.md, err = metadata.Decode(r.schemaRaw, r.metaRaw); err != nil {
		return err
	}
	r.blockLimit = int64(r.md.BlockSize)
	if r.blockLimit <= 0 {
		r.blockLimit = block.DefaultMaxBlockSize
	}
	r.rebuild = r.opts.RebuildMetadata || !r.md.HasDirEntries
	if r.recompBlocks() && r.opts.BlockCompression != "" {
		if r.blockComp, err = encode.NewCompressor(r.opts.BlockCompression); err != nil {
			return fmt.Errorf("block compression: %w", err)
		}
	}
	if r.recompBlocks() && r.md.HasCategoryNames {
		for i, name := range r.md.CategoryNames {
			spec, ok := r.opts.CategoryCompression[name]
			if !ok {
				continue
			}
			c, err := encode.NewCompressor(spec)
			if err != nil {
				return fmt.Errorf("block compression for category %s: %w", name, err)
			}
			if r.catComp == nil {
				r.catComp = map[uint32]encode.Compressor{}
			}
			r.catComp[uint32(i)] = c
		}
	}
	if b := r.opts.ChangeBlockSizeBits; b != 0 {
		if len(r.opts.Categories) > 0 {
			return fmt.Errorf("--change-block-size with --recompress-categories: %w", ErrUsage)
		}
		r.rebuild = true
		if r.blockComp == nil {
			spec := "null"
			if bl := im.Blocks(); len(bl) > 0 {
				if spec, err = keepSpec(bl[0].Compression); err != nil {
					return err
				}
			}
			if r.blockComp, err = encode.NewCompressor(spec); err != nil {
				return err
			}
		}
		r.rechunk = &rechunker{r: r, bs: 1 << b, cache: newDecodedBlocks(im, r.blockLimit, 8)}
		return nil
	}
	return r.selectBlocks()
}

// selectBlocks applies the category filter.
func (r *rewriter) selectBlocks() error {
	n := r.im.NumBlocks()
	r.selected = make([]bool, n)
	if r.blockComp == nil {
		return nil
	}
	if len(r.opts.Categories) == 0 {
		for i := range r.selected {
			r.selected[i] = true
		}
		return nil
	}
	md := r.md
	if !md.HasCategoryNames || !md.HasBlockCategories {
		return fmt.Errorf("--recompress-categories: image has no category information: %w", ErrUsage)
	}
	known := map[string]uint32{}
	for i, c := range md.CategoryNames {
		known[c] = uint32(i)
	}
	incl, excl := map[uint32]bool{}, map[uint32]bool{}
	for _, c := range r.opts.Categories {
		neg := strings.HasPrefix(c, "!")
		name := strings.TrimPrefix(c, "!")
		id, ok := known[name]
		if !ok {
			return fmt.Errorf("--recompress-categories: no category %q in image (have %s): %w", name, strings.Join(md.CategoryNames, ", "), ErrUsage)
		}
		if neg {
			excl[id] = true
		} else {
			incl[id] = true
		}
	}
	for i := range r.selected {
		if i >= len(md.BlockCategories) {
			continue
		}
		c := md.BlockCategories[i]
		r.selected[i] = (len(incl) == 0 || incl[c]) && !excl[c]
	}
	return nil
}

// keepSpec returns the -C spec of algorithm c with default parameters.
func keepSpec(c block.Compression) (string, error) {
	spec := "null"
	switch c {
	case block.CompNone:
	case block.CompZSTD:
		spec = "zstd"
	case block.CompLZMA:
		spec = "lzma"
	case block.CompLZ4:
		spec = "lz4"
	case block.CompLZ4HC:
		spec = "lz4hc"
	case block.CompBrotli:
		spec = "brotli"
	default:
		return "", fmt.Errorf("re-encode with %s: %w", c, block.ErrUnsupported)
	}
	return spec, nil
}

// spec returns the compression spec for a non-block section that is
// written anew: spec when set and metadata is recompressed, else the
// input's algorithm with default parameters.
func (r *rewriter) spec(spec string, orig block.Compression) (string, error) {
	if spec == "" || !r.recompMeta() {
		return keepSpec(orig)
	}
	return spec, nil
}

type blockResult struct {
	comp    block.Compression
	payload []byte
	err     error
}

type blockJob struct {
	idx  int
	sec  block.Section
	comp encode.Compressor // for the block's category
	data []byte            // rechunked block to compress (sec unused)
	buf  *blockBuf         // returned to the free list once written
}

// blockBuf is the memory one block in flight works in. The writer hands it
// back once the block is on disk, so a run holds a fixed number of them
// and, after the first few blocks, allocates nothing per block: the peak
// then is what is in flight, not that plus the garbage of earlier blocks.
type blockBuf struct {
	data []byte // the block as read (NONE) or decompressed
	out  []byte // recompressed payload
}

func (r *rewriter) write(out io.Writer) error {
	w := block.NewWriter(out, block.WriterOptions{Header: r.header, NoSectionIndex: r.opts.NoSectionIndex})
	if err := r.writeBlocks(w); err != nil {
		return err
	}
	if err := r.ctx.Err(); err != nil {
		return err
	}
	if err := r.writeMetadata(w); err != nil {
		return err
	}
	if err := r.writeHistory(w); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	r.progress(Progress{}, "wrote %d sections", len(w.Sections()))
	return nil
}

// writeBlocks streams all BLOCK sections through the compression
// pipeline, which writes them in order.
func (r *rewriter) writeBlocks(w *block.Writer) error {
	blocks := r.im.Blocks()
	workers := r.opts.Workers
	pipe := newPipeline(r.ctx, w, workers, int64(workers+1)*r.blockLimit, r.opts.Niceness)
	// One buffer set per worker: a block is read, decoded, encoded and
	// written before its buffers take the next one, which bounds memory to
	// Workers blocks in flight (plus the encoders' state).
	free := make(chan *blockBuf, workers)
	for range workers {
		free <- &blockBuf{}
	}
	total, totalText := len(blocks), fmt.Sprint(len(blocks))
	if r.rechunk != nil {
		total, totalText = 0, "?"
	}
	n := 0
	emit := func(j blockJob) error {
		select {
		case j.buf = <-free:
		case <-pipe.Done():
			return pipe.Stop()
		}
		return pipe.Submit(r.blockLimit, func(threads Threads, ws *encode.Workspace) (block.Compression, []byte, error) {
			res := r.recodeBlock(j, threads, ws)
			return res.comp, res.payload, res.err
		}, func(c block.Compression, p []byte) {
			free <- j.buf
			n++
			r.progress(Progress{Blocks: n, BlocksTotal: total}, "block %d/%s: %s, %d bytes", n, totalText, c, len(p))
		})
	}
	var err error
	if r.rechunk != nil {
		i := 0
		err = r.rechunk.produce(r.ctx, func(d []byte) error {
			i++
			meta := -1
			if cm := r.rechunk.catMeta; len(cm) > 0 && cm[len(cm)-1].Key == uint32(i-1) {
				meta = int(cm[len(cm)-1].Value)
			}
			return emit(blockJob{idx: i - 1, data: d, comp: r.compFor(r.rechunk.cats[i-1], meta)})
		})
	} else {
		blockMeta := map[uint32]int{}
		if r.md.HasBlockCategoryMetadata {
			for _, kv := range r.md.BlockCategoryMetadata {
				blockMeta[kv.Key] = int(kv.Value)
			}
		}
		for i, s := range blocks {
			cat := uint32(1<<32 - 1)
			if i < len(r.md.BlockCategories) {
				cat = r.md.BlockCategories[i]
			}
			meta, ok := blockMeta[uint32(i)]
			if !ok {
				meta = -1
			}
			comp := r.compFor(cat, meta)
			if len(blocks) == 1 {
				// A lone block would leave every other core idle.
				comp = encode.Split(comp)
			}
			if err = emit(blockJob{idx: i, sec: s, comp: comp}); err != nil {
				break
			}
		}
	}
	if werr := pipe.Wait(); err == nil {
		err = werr
	}
	return err
}

// granularity returns the frame size the compressor of a stream needs
// (1: none), so that --change-block-size cuts its blocks on whole frames.
func (r *rewriter) granularity(k streamKey) int {
	if k.meta < 0 || k.meta >= int64(len(r.md.CategoryMetadataJSON)) {
		return 1
	}
	c := r.blockComp
	if cc, ok := r.catComp[uint32(k.cat)]; ok && k.cat >= 0 && r.md.HasCategoryNames {
		c = cc
	}
	_, cons, err := encode.ForMetadata(c, r.md.CategoryMetadataJSON[k.meta])
	if err != nil {
		return 1
	}
	return max(1, cons.Granularity)
}

// compFor returns the compressor for blocks of category cat (an index
// into category_names) with category metadata meta (an index into
// category_metadata_json; -1: none). A compressor that depends on the
// metadata (encode.MetadataCompressor) is bound to it; should it refuse
// the metadata, the block compression is used.
func (r *rewriter) compFor(cat uint32, meta int) encode.Compressor {
	c := r.blockComp
	if cc, ok := r.catComp[cat]; ok && r.md.HasCategoryNames {
		c = cc
	}
	if meta < 0 || meta >= len(r.md.CategoryMetadataJSON) {
		return c
	}
	key := [2]int{int(cat), meta}
	if bc, ok := r.bound[key]; ok {
		return bc
	}
	bc, _, err := encode.ForMetadata(c, r.md.CategoryMetadataJSON[meta])
	if err != nil {
		bc = r.blockComp
	}
	if r.bound == nil {
		r.bound = map[[2]int]encode.Compressor{}
	}
	r.bound[key] = bc
	return bc
}

func (r *rewriter) recodeBlock(j blockJob, threads Threads, ws *encode.Workspace) blockResult {
	if err := r.ctx.Err(); err != nil {
		return blockResult{err: err}
	}
	i, s, b := j.idx, j.sec, j.buf
	if j.comp == nil {
		j.comp = r.blockComp
	}
	if j.data != nil {
		b.sizeOut(len(j.data))
		comp := encoderFor(j.comp, len(j.data), threads, ws)
		c, p, err := encode.CompressSectionInto(comp, b.out, j.data)
		if err != nil {
			return blockResult{err: fmt.Errorf("new block %d: %w", i, err)}
		}
		b.keepOut(c, p)
		return blockResult{comp: c, payload: p}
	}
	if !r.selected[i] {
		raw, err := r.im.ReadRawInto(s, b.data)
		if err != nil {
			return blockResult{err: fmt.Errorf("block %d: %w", i, err)}
		}
		b.data = keep(b.data, raw)
		return blockResult{comp: s.Compression, payload: raw}
	}
	var data []byte
	var err error
	switch s.Compression {
	case block.CompNone:
		data, _, err = r.im.ReadDecompressedInto(s, r.blockLimit, b.data, nil)
	case block.CompLZMA, block.CompBrotli:
		// Slow decoders: serialising them would cost parallelism.
		data, _, err = r.im.ReadDecompressedInto(s, r.blockLimit, nil, b.data)
	default:
		// The compressed payload is needed only while it is decoded, so
		// the workers share one buffer for it; zstd and lz4 decode fast
		// next to any encoder, and this saves a block's worth of memory
		// per worker.
		r.rawMu.Lock()
		var raw []byte
		data, raw, err = r.im.ReadDecompressedInto(s, r.blockLimit, r.rawBuf, b.data)
		r.rawBuf = keep(r.rawBuf, raw)
		r.rawMu.Unlock()
	}
	if err != nil {
		return blockResult{err: fmt.Errorf("block %d: %w", i, err)}
	}
	b.data = keep(b.data, data)
	b.sizeOut(len(data))
	comp := encoderFor(j.comp, len(data), threads, ws)
	c, p, err := encode.CompressSectionInto(comp, b.out, data)
	if err != nil {
		return blockResult{err: fmt.Errorf("block %d: %w", i, err)}
	}
	b.keepOut(c, p)
	return blockResult{comp: c, payload: p}
}

// sizeOut makes room for the payload of an n-byte block, with the margin
// by which the codecs' framing can exceed the input on incompressible
// data, so that the encoder appends without regrowing even for a block
// that then ends up stored as NONE.
func (b *blockBuf) sizeOut(n int) {
	if n += n>>7 + 4096; cap(b.out) < n {
		b.out = make([]byte, 0, n)
	}
}

// keepOut adopts a compressed payload's storage as the output buffer; a
// payload stored as NONE is the input itself and must not be adopted.
func (b *blockBuf) keepOut(c block.Compression, p []byte) {
	if c != block.CompNone {
		b.out = keep(b.out, p)
	}
}

// keep returns whichever of the old buffer and the slice a call returned
// has the larger storage, so that a buffer grows to the largest block and
// then stays.
func keep(old, got []byte) []byte {
	if cap(got) > cap(old) {
		return got
	}
	return old
}

// writeSection writes a non-block section: raw copy unless it must be
// re-encoded (data != nil) or a compression spec applies.
func (r *rewriter) writeSection(w *block.Writer, s block.Section, spec string, data []byte) error {
	if data == nil && (spec == "" || !r.recompMeta()) {
		raw, err := r.im.ReadRaw(s)
		if err != nil {
			return err
		}
		return w.WriteSection(s.Type, s.Compression, raw)
	}
	if data == nil {
		var err error
		if data, err = r.im.ReadDecompressed(s); err != nil {
			return err
		}
	}
	spec, err := r.spec(spec, s.Compression)
	if err != nil {
		return fmt.Errorf("%s compression: %w", s.Type, err)
	}
	return r.comps.writeSection(w, s.Type, spec, data)
}

func (r *rewriter) writeMetadata(w *block.Writer) error {
	if !r.rebuild {
		if err := r.writeSection(w, r.schemaSec, r.opts.SchemaCompression, nil); err != nil {
			return err
		}
		return r.writeSection(w, r.metaSec, r.opts.MetadataCompression, nil)
	}
	md, err := r.rebuildMetadata()
	if err != nil {
		return fmt.Errorf("rebuild metadata: %w", err)
	}
	dataSpec, err := r.spec(r.opts.MetadataCompression, r.metaSec.Compression)
	if err != nil {
		return fmt.Errorf("%s compression: %w", r.metaSec.Type, err)
	}
	schema, data, d, err := r.comps.encodeMetadataData(md, dataSpec)
	if err != nil {
		return fmt.Errorf("rebuild metadata: %w", err)
	}
	if !r.opts.NoCheck {
		if err := checkEncoded(schema, data); err != nil {
			return err
		}
	}
	r.progress(Progress{}, "metadata rebuilt")
	if err := r.writeSection(w, r.schemaSec, r.opts.SchemaCompression, schema); err != nil {
		return err
	}
	return w.WriteSection(d.t, d.ct, d.out)
}

// rebuildMetadata makes the output's metadata from the input's.
func (r *rewriter) rebuildMetadata() (*metadata.Metadata, error) {
	o := r.opts
	if !o.RebuildMetadata {
		// Forced conversion of the legacy model: no transformations.
		o.Rebuild = dedup.Policy{KeepAllTimes: true}
	}
	src := r.md
	if r.rechunk != nil {
		var err error
		if src, err = r.rechunk.apply(r.md); err != nil {
			return nil, err
		}
	}
	return dedup.RebuildMetadata(dedup.Rebuild{Metadata: src, Previous: r.md, Major: r.im.Major(), Minor: r.im.Minor(),
		NoVersionHistory: o.NoMetadataVersionHistory, NoCheck: o.NoCheck}, o.Rebuild)
}

// checkEncoded decodes rebuilt metadata and checks it as a reader would.
func checkEncoded(schema, data []byte) error {
	chk, err := metadata.Decode(schema, data)
	if err != nil {
		return fmt.Errorf("rebuilt metadata does not decode: %w", err)
	}
	fsys, err := metadata.NewFS(chk)
	if err != nil {
		return fmt.Errorf("rebuilt metadata invalid: %w", err)
	}
	if err := fsys.Check(); err != nil {
		return fmt.Errorf("rebuilt metadata invalid: %w", err)
	}
	return nil
}

func (r *rewriter) writeHistory(w *block.Writer) error {
	// Like the reference, all entries of the input's HISTORY sections and
	// the new one go into a single HISTORY section.
	var hist metadata.History
	last := block.CompNone
	have := false
	for _, s := range r.im.Sections() {
		switch s.Type {
		case block.SectionBlock, block.SectionMetadata, block.SectionMetadataSchema, block.SectionIndex:
			continue
		case block.SectionHistory:
			last, have = s.Compression, true
			b, err := r.im.ReadDecompressed(s)
			if err != nil {
				return fmt.Errorf("history: %w", err)
			}
			h, err := metadata.DecodeHistory(b)
			if err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
			hist.Entries = append(hist.Entries, h.Entries...)
		default:
			// Unknown section types are tolerated by readers >= 0.7.3;
			// copy them unchanged.
			raw, err := r.im.ReadRaw(s)
			if err != nil {
				return err
			}
			if err := w.WriteSection(s.Type, s.Compression, raw); err != nil {
				return err
			}
		}
	}
	orig := last
	if !have {
		orig = r.metaSec.Compression
	}
	spec, err := r.spec(r.opts.HistoryCompression, orig)
	if err != nil {
		return fmt.Errorf("history compression: %w", err)
	}
	return r.comps.writeHistory(w, hist.Entries, r.opts.History, spec, r.opts.Now)
}

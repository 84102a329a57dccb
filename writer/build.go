package writer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/block/encode"
	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/metadata"
	"github.com/godwarfs/godwarfs/shard"
	"github.com/godwarfs/godwarfs/source"
)

// Target says where and how an image is written; Build and Rewrite share
// it.
type Target struct {
	// Output is the image file. It is written under a temporary name and
	// appears only when complete; an existing file is replaced only with
	// Overwrite. "-" writes the image to Stdout.
	Output    string
	Overwrite bool
	Stdout    io.Writer
	// Executable gives the output file mode 0755 instead of 0644: an
	// image behind a runtime (mkdwarfs --runtime) is a program.
	Executable bool

	// Compression specs ("zstd:level=19", "lzma:level=9", "lz4",
	// "lz4hc:level=9", "brotli:quality=11", "null") for the sections.
	// Build uses mkdwarfs's level 7 defaults for "" (see the Default
	// constants); Rewrite keeps a section's stored bytes for "".
	BlockCompression, SchemaCompression, MetadataCompression, HistoryCompression string
	// CategoryCompression overrides BlockCompression for the blocks of
	// the named categories (mkdwarfs -C CATEGORY::SPEC).
	CategoryCompression map[string]string

	// Workers is the number of blocks compressed at once (0: GOMAXPROCS).
	Workers int
	// Niceness, if above 0, is added to the nice value of the threads
	// compressing blocks (Linux), so that scanning and segmenting, which
	// feed them, get the CPU first (mkdwarfs --compress-niceness).
	Niceness int
	// NoSectionIndex leaves out the SECTION_INDEX.
	NoSectionIndex bool
	// Sums has the BLAKE3 of every section computed as it is written
	// (BuildResult.Sums), for signing the image.
	Sums bool
	// History is the entry the image gets in its HISTORY section.
	History History
	// Progress, if set, is called now and then while the image is written.
	Progress func(Progress)
}

// The compression of a build's sections when Target leaves it "" (the
// reference mkdwarfs -l 7, but for the blocks' target length: a search
// that stops at a match of 512 bytes instead of level 22's own 999 costs
// trees of releases a quarter less CPU, for images at most 0.15% larger).
const (
	DefaultBlockCompression    = "zstd:level=22:tlen=512"
	DefaultSchemaCompression   = "zstd:level=16"
	DefaultMetadataCompression = "zstd:level=22"
	DefaultHistoryCompression  = "zstd:level=16"
)

// Progress reports a running build or rewrite.
type Progress struct {
	// Stats are a build's running totals (files scanned, duplicates,
	// blocks made); zero for a rewrite.
	Stats dedup.Stats
	// Phase is a build's current phase: Stats.Phase (scanning,
	// segmenting) while the tree is scanned and segmented, then
	// PhaseCompressing while the last blocks are compressed and
	// PhaseWriting for the metadata.
	Phase string
	// Blocks is the number of blocks written so far, of BlocksTotal (0
	// while not known); BlockBytes is their uncompressed size (builds).
	// Both counts include BlocksCopied, the blocks of base images that an
	// append or merge copies as stored (known from the start), so the
	// blocks compressed are Blocks-BlocksCopied of BlocksTotal-BlocksCopied.
	Blocks, BlocksTotal, BlocksCopied int
	BlockBytes                        int64
	// Message says what a rewrite just did, as a line for a log.
	Message string
}

// The phases of a build after scanning and segmenting.
const (
	PhaseCompressing = "compressing"
	PhaseWriting     = "writing"
)

func (t *Target) progress(p Progress) {
	if t.Progress != nil {
		t.Progress(p)
	}
}

func (t *Target) workers() int {
	if t.Workers <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return t.Workers
}

// BuildOptions configure Build.
type BuildOptions struct {
	Target
	// Scan says what is read and how it is deduplicated, ordered,
	// segmented and stored; start from dedup.DefaultOptions and set Input.
	Scan dedup.Options
	// MemoryLimit bounds the bytes of blocks waiting to be compressed or
	// written (0: two blocks per worker). Blocks are written in order, so
	// a worker that finishes a block while an older one is still being
	// compressed needs room for the next block to stay busy; blocks take
	// from a few to tens of seconds each at zstd:22 depending on their
	// content, and with one block per worker the faster worker would wait.
	MemoryLimit int64
	// Header is written before the image (mkdwarfs --header).
	Header []byte
	// Shard, if set, builds one shard of the input (see ShardOptions).
	Shard *ShardOptions
}

// BuildResult summarises a build.
type BuildResult struct {
	Stats      dedup.Stats
	ImageBytes int64
	// Timeline is where the build's time went, phase by phase.
	Timeline *Timeline
	// CopiedBlocks and CopiedBytes count the blocks Append and Merge
	// copied from their input images, and Fetched what reading the
	// images at URLs transferred (zero for files).
	CopiedBlocks int
	CopiedBytes  int64
	Fetched      source.Stats
	// Sums are, with Target.Sums, the BLAKE3 of the sections written
	// (block.Writer.Sums).
	Sums map[[32]byte][32]byte
	// Plan is the plan a shard build (BuildOptions.Shard) made.
	Plan *shard.Plan
}

// Build writes an image of the directory opts.Scan.Input to opts.Output.
func Build(ctx context.Context, opts BuildOptions) (*BuildResult, error) {
	t := &opts.Target
	for _, s := range []struct {
		spec *string
		def  string
	}{{&t.BlockCompression, DefaultBlockCompression}, {&t.SchemaCompression, DefaultSchemaCompression},
		{&t.MetadataCompression, DefaultMetadataCompression}, {&t.HistoryCompression, DefaultHistoryCompression}} {
		if *s.spec == "" {
			*s.spec = s.def
		}
	}
	if opts.Shard != nil {
		if err := opts.Shard.check(t.History); err != nil {
			return nil, err
		}
	}
	return buildImage(ctx, opts, nil)
}

// buildImage writes the image opts describe, grown from base (if not
// nil), under a temporary name and commits it.
func buildImage(ctx context.Context, opts BuildOptions, base *bases) (*BuildResult, error) {
	t := &opts.Target
	out, err := createOutput(t.Output, t.Overwrite, t.Stdout)
	if err != nil {
		return nil, err
	}
	out.exec = t.Executable
	defer out.Abort()
	scan := opts.Scan
	// An output inside the input tree must not be scanned.
	for _, p := range []string{out.TempName(), t.Output} {
		if p == "" || p == "-" || scan.Input == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			if in, err := filepath.Abs(scan.Input); err == nil && strings.HasPrefix(abs, in+string(filepath.Separator)) {
				scan.Exclude = append(scan.Exclude, filepath.Join(scan.Input, abs[len(in)+1:]))
			}
		}
	}
	tl := newTimeline(scan.Verbosef)
	var plan *shard.Plan
	if opts.Shard != nil {
		scan.Select = opts.Shard.selector(&plan)
	}
	stats, pipe, err := build(ctx, opts, scan, out, base, tl, &plan)
	if err != nil {
		return nil, err
	}
	if err := out.Commit(ctx); err != nil {
		return nil, err
	}
	return &BuildResult{Stats: stats, ImageBytes: out.Size(), Timeline: tl.finish(pipe), Sums: pipe.bw.Sums(), Plan: plan}, nil
}

// build writes the whole image to out, marking its phases on tl; with
// base (Append, Merge) the base images' blocks come first, copied raw,
// and their history entries before the new one; a shard build's entry
// records the shard of *plan. Its phases: check every
// compression spec, start the pipeline, copy the base blocks, scan and
// segment into new blocks, encode the metadata while the last blocks
// compress, and write the metadata and history after them.
func build(ctx context.Context, opts BuildOptions, scan dedup.Options, out io.Writer, base *bases, tl *timeline, plan **shard.Plan) (_ dedup.Stats, _ *pipeline, retErr error) {
	t := &opts.Target
	comps, cc, err := checkSpecs(t, base, scan.Log)
	if err != nil {
		return dedup.Stats{}, nil, err
	}
	bw := block.NewWriter(out, block.WriterOptions{NoSectionIndex: t.NoSectionIndex, Header: opts.Header, Sums: t.Sums})
	limit := opts.MemoryLimit
	if limit == 0 {
		limit = int64(2*t.workers()) << scan.BlockSizeBits
	}
	// Whatever way the build ends, the pipeline's goroutines end with it:
	// on an error they are cancelled rather than left waiting for blocks.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pipe := newPipeline(ctx, bw, t.workers(), limit, t.Niceness)
	defer func() {
		if retErr != nil {
			cancel()
			_ = pipe.Wait()
		}
	}()
	rep := &reporter{fn: t.Progress}
	hookScan(&scan, tl, rep, cc)
	// Blocks of base images come first, copied raw.
	firstNew := 0
	var sub *submitter
	if base != nil && base.update {
		// An update's kept base blocks follow the new ones: dedup says
		// which once it has made those.
		bc := *scan.Base
		u := *bc.Update
		u.Keep = func(ctx context.Context, kept []int) error {
			if err := sub.flush(); err != nil {
				return err
			}
			base.kept = kept
			rep.update(func(p *Progress) { p.BlocksCopied = len(kept) })
			tl.mark("copying")
			return base.copyKept(ctx, pipe, kept, rep.update)
		}
		bc.Update, scan.Base = &u, &bc
	} else if base != nil {
		tl.mark("copying")
		rep.update(func(p *Progress) { p.BlocksCopied = base.blocks })
		if err := base.copyBlocks(ctx, pipe, rep.update); err != nil {
			if werr := pipe.Wait(); werr != nil {
				return dedup.Stats{}, pipe, werr
			}
			return dedup.Stats{}, pipe, err
		}
		firstNew = base.blocks
	}
	sub = &submitter{pipe: pipe, cc: cc, rep: rep, next: firstNew, first: firstNew}
	md, stats, err := dedup.BuildCategorized(ctx, scan, sub.add)
	if err == nil {
		err = sub.flush()
	}
	if err == nil {
		// What scanning and segmenting left behind is garbage now, while
		// the last blocks' encoders (hundreds of MiB at zstd:22 or
		// lzma:9, outside the Go heap) are only starting: return it to
		// the system so the two do not add up in the peak.
		debug.FreeOSMemory()
		total := firstNew + stats.Blocks
		if base != nil && base.update {
			total = len(base.kept) + stats.Blocks
		}
		rep.update(func(p *Progress) { p.Stats, p.Phase, p.BlocksTotal = stats, PhaseCompressing, total })
		tl.mark(PhaseCompressing)
	}
	var meta []encodedSection
	if err == nil {
		err = comps.prepare(t.SchemaCompression, t.MetadataCompression)
	}
	if err == nil {
		meta, err = encodeWhileCompressing(pipe, comps, md, t)
	} else {
		_ = pipe.Wait() // the first error is the one to report
	}
	if err != nil {
		return stats, pipe, err
	}
	rep.update(func(p *Progress) { p.Phase = PhaseWriting })
	tl.mark(PhaseWriting)
	for _, s := range meta {
		if err := bw.WriteSection(s.t, s.ct, s.out); err != nil {
			return stats, pipe, err
		}
	}
	var prior []metadata.HistoryRecord
	if base != nil {
		prior = base.history
	}
	hist := t.History
	if opts.Shard != nil {
		if *plan == nil {
			return stats, pipe, errors.New("shard build: the input was not planned")
		}
		rec := shard.Record{Index: opts.Shard.Index, Count: opts.Shard.Count, Digest: (*plan).Digest}
		hist.Arguments = rec.AddTo(hist.Arguments)
	}
	if err := comps.writeHistory(bw, prior, hist, t.HistoryCompression, scan.Now); err != nil {
		return stats, pipe, err
	}
	return stats, pipe, bw.Close()
}

// checkSpecs resolves every compression spec of t before the pipeline
// starts: a mistake in one costs no scan and leaves nothing running.
func checkSpecs(t *Target, base *bases, log io.Writer) (compressors, *categoryCompression, error) {
	comps := compressors{}
	comp, err := comps.get(t.BlockCompression)
	if err != nil {
		return nil, nil, fmt.Errorf("block compression: %w", err)
	}
	catComp := map[string]encode.Compressor{}
	for cat, spec := range t.CategoryCompression {
		if catComp[cat], err = comps.get(spec); err != nil {
			return nil, nil, fmt.Errorf("block compression for category %s: %w", cat, err)
		}
	}
	for _, s := range []struct{ what, spec string }{{"schema", t.SchemaCompression}, {"metadata", t.MetadataCompression}} {
		if _, err := comps.get(s.spec); err != nil {
			return nil, nil, fmt.Errorf("%s compression: %w", s.what, err)
		}
	}
	if !t.History.Omit || (base != nil && len(base.history) > 0) {
		if _, err := comps.get(t.HistoryCompression); err != nil {
			return nil, nil, fmt.Errorf("history compression: %w", err)
		}
	}
	return comps, &categoryCompression{def: comp, cats: catComp, log: log}, nil
}

// reporter keeps a build's running Progress. The scanner and the
// pipeline's writer both update it, from their own goroutines.
type reporter struct {
	fn func(Progress) // nil: nobody listens, and updates cost nothing

	mu sync.Mutex
	p  Progress
}

func (r *reporter) update(f func(*Progress)) {
	if r.fn == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.p)
	r.fn(r.p)
}

// hookScan connects the scanner's callbacks to the build: phases to the
// timeline, running stats to the progress, categories to their
// compressors. Callbacks the caller set are kept.
func hookScan(scan *dedup.Options, tl *timeline, rep *reporter, cc *categoryCompression) {
	if next := scan.Phase; next != nil {
		scan.Phase = func(name string) { tl.mark(name); next(name) }
	} else {
		scan.Phase = tl.mark
	}
	if rep.fn != nil {
		scan.Progress = func(s dedup.Stats) { rep.update(func(p *Progress) { p.Stats, p.Phase = s, s.Phase }) }
	}
	if scan.BeforeSegmenting == nil {
		scan.BeforeSegmenting = debug.FreeOSMemory
	}
	if scan.BeforeMetadata == nil {
		scan.BeforeMetadata = debug.FreeOSMemory
	}
	if scan.AcceptCategory == nil {
		scan.AcceptCategory = cc.accept
	}
	if scan.Granularity == nil {
		scan.Granularity = cc.granularity
	}
}

// submitter queues the segmenter's new blocks on the pipeline. Only a
// build's lone new block is cut into jobs for several threads
// (encode.Split): with two or more blocks every worker has a block of its
// own, and a cut would only cost CPU. So the first block waits for the
// second, or for the end of the data, to learn whether it is the only
// one; the segmenter makes the second in a fraction of the time the first
// takes to compress.
type submitter struct {
	pipe *pipeline
	cc   *categoryCompression
	rep  *reporter

	next, first int // the index of the next block, and of the first new one
	held        []byte
	heldCat     dedup.BlockCategory
	holding     bool
}

// add is the segmenter's block callback.
func (s *submitter) add(_ context.Context, data []byte, cat dedup.BlockCategory) error {
	i := s.next
	s.next++
	if i == s.first {
		s.held, s.heldCat, s.holding = data, cat, true
		return nil
	}
	if s.holding {
		if err := s.release(false); err != nil {
			return err
		}
	}
	return s.submit(i, data, cat, false)
}

// flush submits the first block if it is still held: it was the only one.
func (s *submitter) flush() error {
	if !s.holding {
		return nil
	}
	return s.release(true)
}

func (s *submitter) release(split bool) error {
	data, cat := s.held, s.heldCat
	s.held, s.holding = nil, false
	return s.submit(s.first, data, cat, split)
}

func (s *submitter) submit(i int, data []byte, cat dedup.BlockCategory, split bool) error {
	comp := s.cc.forBlock(cat)
	if split {
		comp = encode.Split(comp)
	}
	var written func(block.Compression, []byte)
	if s.rep.fn != nil {
		size := int64(len(data))
		written = func(block.Compression, []byte) {
			s.rep.update(func(p *Progress) { p.Blocks++; p.BlockBytes += size })
		}
	}
	return s.pipe.Submit(int64(len(data)), func(threads Threads, ws *encode.Workspace) (block.Compression, []byte, error) {
		ct, p, err := encode.CompressSection(encoderFor(comp, len(data), threads, ws), data)
		if errors.Is(err, block.ErrUnsupported) && comp.Compression() != s.cc.def.Compression() {
			// A category's codec that cannot take this block's data
			// losslessly: the block is stored with the block
			// compression, which readers take as well.
			def := s.cc.fallback(i, cat, err)
			if split {
				def = encode.Split(def)
			}
			ct, p, err = encode.CompressSection(encoderFor(def, len(data), threads, ws), data)
		}
		if err != nil {
			err = fmt.Errorf("block %d: %w", i, err)
		}
		return ct, p, err
	}, written)
}

// encodeWhileCompressing encodes and compresses the metadata, which is
// final once the last block is made, while the last blocks compress: on
// the first core their workers leave idle. It returns once both are done.
func encodeWhileCompressing(pipe *pipeline, comps compressors, md *metadata.Metadata, t *Target) ([]encodedSection, error) {
	var (
		meta    []encodedSection
		metaErr error
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		if err := pipe.RunIdle(func() { meta, metaErr = comps.encodeMetadata(md, t) }); err != nil {
			metaErr = err
		}
	}()
	err := pipe.Wait()
	<-done
	if err == nil {
		err = metaErr
	}
	return meta, err
}

// encodeMetadata encodes md and compresses its schema and data sections,
// in the order they are written. It only reads c (see prepare).
func (c compressors) encodeMetadata(md *metadata.Metadata, t *Target) ([]encodedSection, error) {
	schema, _, d, err := c.encodeMetadataData(md, t.MetadataCompression)
	if err != nil {
		return nil, err
	}
	s, err := c.encodeSection(block.SectionMetadataSchema, t.SchemaCompression, schema)
	if err != nil {
		return nil, err
	}
	return []encodedSection{s, d}, nil
}

// smallMetadata is the size under which metadata is also tried in the
// default layout: where there are few rows to repeat (625 executables:
// 17 KB) whole bytes cost a few percent, and compressing such metadata
// twice costs a fraction of a second at most.
const smallMetadata = 256 << 10

// encodeMetadataData encodes md and compresses its data section with
// spec, returning the schema and the encoded data with it. Compressed
// metadata is laid out in whole bytes (metadata.EncodeOptions.WholeBytes),
// which makes it a third smaller on trees of many versions.
func (c compressors) encodeMetadataData(md *metadata.Metadata, spec string) (schema, data []byte, d encodedSection, err error) {
	comp, err := c.get(spec)
	if err != nil {
		return nil, nil, d, fmt.Errorf("%s compression: %w", block.SectionMetadata, err)
	}
	whole := comp.Compression() != block.CompNone
	if schema, data, d, err = c.encodeLayout(md, spec, metadata.EncodeOptions{WholeBytes: whole}); err != nil {
		return nil, nil, d, err
	}
	if !whole || len(data) >= smallMetadata {
		return schema, data, d, nil
	}
	s2, data2, d2, err := c.encodeLayout(md, spec, metadata.EncodeOptions{})
	if err != nil {
		return nil, nil, d, err
	}
	if len(d2.out) < len(d.out) {
		return s2, data2, d2, nil
	}
	return schema, data, d, nil
}

// encodeLayout encodes md with opt and compresses its data section.
func (c compressors) encodeLayout(md *metadata.Metadata, spec string, opt metadata.EncodeOptions) (schema, data []byte, d encodedSection, err error) {
	if schema, data, err = metadata.EncodeWith(md, opt); err != nil {
		return nil, nil, d, fmt.Errorf("encoding metadata: %w", err)
	}
	d, err = c.encodeSection(block.SectionMetadata, spec, data)
	return schema, data, d, err
}

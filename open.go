package godwarfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/lru"
	"github.com/godwarfs/godwarfs/internal/mmap"
	"github.com/godwarfs/godwarfs/metadata"
)

// checkMode is what opening an image checks at once and what it leaves
// to the first use of each part. It is derived once, by checkModeOf,
// from the options that combine into it (NoCheck, LazyBlockCheck,
// EagerHeaders, Verify); the stages of opening read only this.
type checkMode struct {
	// lazyHeaders: a block's header is read when the block is first
	// used, and the metadata is checked as metadata.FS.CheckLazy does.
	// Otherwise every section header is read, and all of the metadata
	// checked, at open.
	lazyHeaders bool
	// lazyMetadata: the metadata is checked as metadata.FS.CheckLazy
	// does (with lazyHeaders, or LazyMetadataCheck).
	lazyMetadata bool
	// checkStored, with lazyHeaders: a stored (uncompressed) block's
	// checksum is checked when its header is read, since its bytes are
	// then read from the file piecewise, past any per-read check.
	checkStored bool
	// sweep is which sections the fast checksum pass at open covers.
	sweep sweep
	// verify is the signature to check the image against, nil for none.
	// A signed image has every section checked against its signed
	// digest whenever it is read, blocks on every load into the cache.
	verify *Verify
}

// sweep is the extent of the fast checksum pass at open. Failures become
// warnings; a damaged data block fails only the reads that need it.
type sweep int

const (
	sweepAll     sweep = iota // every section but the metadata (checked when read)
	sweepNone                 // none (NoCheck)
	sweepUnowned              // none that a load checks anyway: compressed and pending blocks are left out (LazyBlockCheck)
)

// checkModeOf derives the check mode of o, or says why o asks for
// something that cannot be checked.
func checkModeOf(o *Options) (checkMode, error) {
	if o.Verify != nil && len(o.Verify.Signature) == 0 && o.Verify.SignatureFile == "" {
		return checkMode{}, fmt.Errorf("a verified image was asked for, but no signature was given: %w", ErrUnsigned)
	}
	if o.Verify != nil && o.Verify.AllowedSigners == nil {
		return checkMode{}, errors.New("a verified image was asked for, but no allowed signers were given")
	}
	m := checkMode{
		lazyHeaders: (o.NoCheck || o.LazyBlockCheck) && !o.EagerHeaders,
		verify:      o.Verify,
	}
	// A verified image reads stored blocks through the cache, which
	// checks each block on every load: checking them again when their
	// headers are read, which a verified open does for every header,
	// would read them all at open and refuse the image for one bad block.
	m.lazyMetadata = m.lazyHeaders || o.LazyMetadataCheck
	m.checkStored = m.lazyHeaders && !o.NoCheck && o.Verify == nil
	switch {
	case o.NoCheck:
		m.sweep = sweepNone
	case o.LazyBlockCheck:
		m.sweep = sweepUnowned
	}
	return m, nil
}

// withDefaults returns a copy of opts (nil: the zero Options) with its
// zero sizes replaced by the defaults.
func withDefaults(opts *Options) Options {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.CacheSize <= 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.Cache != nil {
		o.Workers = o.Cache.Workers()
	}
	return o
}

// opening is one call of OpenReaderAt: its inputs and what its stages
// have built so far.
type opening struct {
	name string
	r    io.ReaderAt
	size int64
	o    Options
	mode checkMode

	im   *Image
	meta mappedMetadata
}

// stages opens the image, stage by stage; on error, abandon releases
// what they built.
func (op *opening) stages() error {
	if err := op.openSections(); err != nil {
		return err
	}
	if op.mode.verify != nil {
		if err := op.verifySignature(); err != nil {
			return err
		}
	}
	schema, data, err := op.readMetadata()
	if err != nil {
		return err
	}
	fsys, err := op.decodeMetadata(schema, data)
	if err != nil {
		return err
	}
	if err := op.checkMetadata(fsys); err != nil {
		return err
	}
	op.sweepSections()
	op.startCache()
	return nil
}

// openSections locates the image in r and reads its section index and
// headers (the block headers too unless they are lazy).
func (op *opening) openSections() error {
	offset := op.o.ImageOffset
	if offset < 0 || (offset == 0 && !op.o.ExactOffset) {
		offset = -1 // search
	}
	bi, err := block.OpenImage(op.r, op.size, block.Options{
		ImageOffset: offset, Name: op.name,
		LazyHeaders: op.mode.lazyHeaders, CheckStored: op.mode.checkStored, CheckSHA: op.mode.verify != nil,
	})
	if err != nil {
		return named(op.name, err)
	}
	op.im = &Image{
		name: op.name, r: op.r, blk: bi, blocks: bi.Blocks(), badBlocks: map[int]error{}, workers: op.o.Workers,
		layouts: lru.New[uint32, *layout](layoutCacheBytes),
	}
	return nil
}

// verifySignature reads the signature, which the number of sections
// bounds, checks it and the headers read so far, and checks the
// sections a reader does not read (history, index) against it, for the
// tools that show them. With lazy headers, the pending ones are compared
// with the signed digest as they are read, so that opening reads no
// more than without a signature.
func (op *opening) verifySignature() error {
	v, bi := op.mode.verify, op.im.blk
	sigFile, err := readSignature(v, op.r, op.o.Remote, len(bi.Sections()))
	if err != nil {
		return fmt.Errorf("%s: %w", op.name, err)
	}
	now := v.Now
	if now.IsZero() {
		now = time.Now()
	}
	if op.im.signer, err = sigFile.Verify(bi, now); err != nil {
		return named(op.name, err)
	}
	for _, s := range bi.Sections() {
		switch s.Type {
		case block.SectionBlock, block.SectionMetadata, block.SectionMetadataSchema:
		default:
			if err := bi.VerifyFull(s); err != nil {
				return named(op.name, err)
			}
		}
	}
	return nil
}

// readMetadata returns the metadata schema and the metadata, both
// verified unless the metadata is mapped (see mapMetadata).
func (op *opening) readMetadata() (schema, data []byte, err error) {
	im, bi := op.im, op.im.blk
	schemas := bi.Find(block.SectionMetadataSchema)
	metas := bi.Find(block.SectionMetadata)
	if len(schemas) != 1 || len(metas) != 1 {
		return nil, nil, fmt.Errorf("%s: expected one metadata schema and one metadata section, found %d and %d", op.name, len(schemas), len(metas))
	}
	im.schemaSection, im.metaSection = schemas[0], metas[0]
	if schema, err = bi.ReadDecompressed(schemas[0]); err != nil {
		return nil, nil, named(op.name, err)
	}
	if f := localFile(op.r); op.o.MapMetadata && f != nil {
		if data, err = op.mapMetadata(metas[0], f); err != nil {
			return nil, nil, err
		}
	}
	if data == nil {
		if data, err = bi.ReadDecompressed(metas[0]); err != nil {
			return nil, nil, named(op.name, err)
		}
	}
	im.metaSize = int64(len(data))
	im.metaMapped = op.meta.region != nil
	return schema, data, nil
}

// mappedMetadata is metadata mapped from the image file: its checksum is
// computed beside the decoding and checks, and its verdict awaited when
// they are done.
type mappedMetadata struct {
	region *mmap.Region // nil: not mapped
	sum    chan error
}

// mapMetadata maps the stored metadata s from f and starts checking its
// checksum. It returns nil data (and no error) where the metadata cannot
// be mapped, to be read instead.
func (op *opening) mapMetadata(s block.Section, f *os.File) ([]byte, error) {
	bi := op.im.blk
	region, err := bi.MapRaw(s, f)
	if errors.Is(err, mmap.ErrUnsupported) {
		return nil, nil
	}
	if err != nil {
		return nil, named(op.name, err)
	}
	data := region.Bytes()
	// Reading the file (cold, on a mount) and decoding overlap: the
	// kernel reads ahead while the checksum runs beside the decoding and
	// the checks, which expect hostile data anyway.
	region.WillNeed()
	op.meta = mappedMetadata{region: region, sum: make(chan error, 1)}
	go func() {
		if op.mode.verify != nil {
			op.meta.sum <- bi.CheckPayload(s, data)
			return
		}
		// Read from the file, not the mapping: a goroutine waiting in a
		// page fault for the disk cannot be stopped for the garbage
		// collector, which then holds up every allocation of the
		// decoding beside it; one in a read can.
		op.meta.sum <- bi.VerifyFast(s)
	}()
	return data, nil
}

// wait returns the verdict of the mapped metadata's checksum.
func (m *mappedMetadata) wait() error {
	if m.region == nil {
		return nil
	}
	return <-m.sum
}

// decodeMetadata decodes the metadata and builds the file system view.
func (op *opening) decodeMetadata(schema, data []byte) (*metadata.FS, error) {
	md, err := metadata.DecodeLazy(schema, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op.name, err)
	}
	fsys, err := metadata.NewFS(md)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op.name, err)
	}
	op.im.md = md
	return fsys, nil
}

// checkMetadata checks every structural rule of the metadata once,
// before anything is served (the reference does this only for v1 images,
// which carry no checksums, and in dwarfsck), and keeps what the image
// needs from it. With lazy metadata checks (opened for serving) it runs
// what metadata.FS.CheckLazy runs: each directory's names wait until the
// directory is first used (checking them here decodes every name), and
// the rules serving does not rely on are left out. BlockNeeds reads the
// chunks beside the checks; their error wins.
func (op *opening) checkMetadata(fsys *metadata.FS) error {
	im := op.im
	type needs struct {
		need []metadata.BlockNeed
		err  error
	}
	nc := make(chan needs, 1)
	go func() {
		var n needs
		n.err = untrusted(func() (err error) {
			n.need, err = fsys.BlockNeeds(len(im.blocks))
			return err
		})
		nc <- n
	}()
	check := fsys.Check
	if op.mode.lazyMetadata {
		check = fsys.CheckLazy
	}
	cerr := check()
	nd := <-nc
	if cerr != nil {
		return fmt.Errorf("%s: %w", op.name, cerr)
	}
	if im.need = nd.need; nd.err != nil {
		return fmt.Errorf("%s: %w", op.name, nd.err)
	}
	for n, s := range im.blocks {
		// Stored blocks' sizes are known now; the others' when first loaded.
		if !s.Pending() && s.Compression == block.CompNone {
			if err := im.checkNeed(n, uint64(s.Length)); err != nil {
				return err
			}
		}
	}
	im.fs, im.blockSize = fsys, fsys.BlockSize()
	if im.blockSize == 0 {
		return fmt.Errorf("%s: metadata block size is zero", op.name)
	}
	root, err := fsys.LookupPath("")
	if err != nil {
		root = 0
	}
	im.root = root
	return nil
}

// sweepSections runs the fast checksum pass over the sections the mode
// covers. Failures are warnings; a damaged block is remembered, to fail
// the reads that need it, as the reference does.
func (op *opening) sweepSections() {
	if op.mode.sweep == sweepNone {
		return
	}
	im, bi := op.im, op.im.blk
	blockNo := map[int]int{} // section index -> block number
	for i, s := range im.blocks {
		blockNo[s.Index] = i
	}
	for _, s := range bi.Sections() {
		if s.Type == block.SectionMetadata || s.Type == block.SectionMetadataSchema {
			continue // already verified when read
		}
		if op.mode.sweep == sweepUnowned && s.Type == block.SectionBlock && (s.Pending() || s.Compression != block.CompNone) {
			continue // verified on every load, or (stored) on the first
		}
		if err := bi.VerifyFast(s); err != nil {
			im.warnings = append(im.warnings, err)
			// Damaged content stays damaged; a failed read (a storage
			// fault) is retried when the block is needed.
			if n, ok := blockNo[s.Index]; ok && s.Type == block.SectionBlock && errors.Is(err, block.ErrChecksum) {
				im.badBlocks[n] = err
			}
		}
	}
}

// startCache creates the block cache, the last stage: from here on the
// image holds resources that abandon must release.
func (op *opening) startCache() {
	im, o := op.im, &op.o
	if o.Cache != nil {
		im.cache = o.Cache.NewCache(im.loadBlock)
	} else {
		im.cache = block.NewCache(im.loadBlock, block.CacheOptions{Capacity: o.CacheSize, Workers: o.Workers})
	}
	im.rawBufs = im.cache.Shared().Spare()
	// A verified image checks every block load against the signed digest
	// of the whole payload, which a piece cannot be.
	if op.mode.verify == nil {
		im.pieces = make([]atomic.Pointer[blockPieces], len(im.blocks))
		im.cache.SetPieceLoader(im.loadPiece)
	}
	if f := localFile(op.r); f != nil {
		im.ahead = f
		im.advised = make([]atomic.Uint64, (len(im.blocks)+63)/64)
	}
}

// finish ends opening with err, the stages' result: it waits for the
// mapped metadata's checksum, whose failure explains any other (but a
// panic's), then keeps or releases what the stages built.
func (op *opening) finish(err error) (*Image, error) {
	if serr := op.meta.wait(); serr != nil && !isPanic(err) {
		err = named(op.name, serr)
	}
	if err != nil {
		if isPanic(err) {
			err = fmt.Errorf("%s: %w", op.name, err)
		}
		if op.im != nil && op.im.cache != nil {
			op.im.cache.Close()
		}
		if op.meta.region != nil {
			_ = op.meta.region.Unmap() // nothing refers to it now
		}
		return nil, err
	}
	if op.meta.region != nil {
		// The checks read every page; requests read few.
		_ = op.meta.region.DropResident() // only a measure of memory use
	}
	return op.im, nil
}

// panicError is a panic while opening, turned into an error.
type panicError struct{ v any }

func (p *panicError) Error() string {
	return fmt.Sprintf("internal error (panic) while opening: %v", p.v)
}

// isPanic reports whether err is a panic of the stages themselves (not a
// wrapped one of a helper goroutine, which counts as any other failure).
func isPanic(err error) bool {
	_, ok := err.(*panicError)
	return ok
}

// untrusted runs f, which decodes an image's untrusted headers or
// metadata, and turns a panic in it into an error. The decoders check
// what they read, so a panic is a bug; a corrupt image must still produce
// an error, never take the process (a mount serving other images) down.
// Every goroutine that decodes at open runs under it.
func untrusted(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &panicError{p}
		}
	}()
	return f()
}

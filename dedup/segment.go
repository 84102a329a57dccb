package dedup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"runtime/debug"
	"sync"
	"time"

	"github.com/godwarfs/godwarfs/internal/mmap"
)

// pchunk is a chunk before hole encoding. A hole has block holeBlock and
// its length in off (high half) and size (low half), which keeps the
// chunk of every file in 12 bytes.
type pchunk struct {
	block, off, size uint32
}

const holeBlock = ^uint32(0)

func holeChunk(n int64) pchunk {
	return pchunk{block: holeBlock, off: uint32(uint64(n) >> 32), size: uint32(n)}
}

func (c pchunk) isHole() bool { return c.block == holeBlock }

// holeSize is a hole's length.
func (c pchunk) holeSize() int64 { return int64(uint64(c.off)<<32 | uint64(c.size)) }

// buzTable is the byte substitution table of the cyclic polynomial (buzhash)
// rolling hash, derived from a fixed seed so images are reproducible.
var buzTable = func() (t [256]uint32) {
	x := uint64(0x9E3779B97F4A7C15)
	for i := range t {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		t[i] = uint32(x >> 32)
	}
	return t
}()

func buzhash(p []byte) uint32 {
	var h uint32
	for _, c := range p {
		h = bits.RotateLeft32(h, 1) ^ buzTable[c]
	}
	return h
}

// rotl1 rolls the window hash by one byte: out leaves, in enters.
func rotl1(h uint32, s *segmenter, out, in byte) uint32 {
	return bits.RotateLeft32(h, 1) ^ bits.RotateLeft32(buzTable[out], int(s.rollOut)) ^ buzTable[in]
}

// BlockSink receives finished blocks in block-number order. The data must be
// treated as read-only: the segmenter keeps referencing it for lookback.
type BlockSink func(ctx context.Context, data []byte) error

type segBlock struct {
	num    uint32
	data   []byte
	hashes []uint32 // table keys inserted for this block (for eviction)
}

// segmenter assembles blocks and finds repeated data: windows of `window`
// bytes sampled every `step` bytes of the retained blocks are kept in a hash
// table (guarded by a bloom filter); the input is scanned with a rolling hash
// and every verified match is extended and stored as a reference.
type segmenter struct {
	ctx       context.Context
	blockSize int
	window    int
	step      int
	lookback  int // finished blocks kept for matching besides the current one
	sink      BlockSink
	tracef    func(format string, args ...any) // nil: no trace
	file      string                           // the file being added, for tracef
	stats     *Stats

	blocks []*segBlock // retained finished blocks, oldest first
	base   *baseIndex  // base blocks to match against too (nil: none)
	cur    *segBlock
	next   uint32

	table     map[uint32]uint64 // hash -> block<<32 | offset
	bloom     []uint64
	bloomBits uint
	rollOut   uint32 // rotation applied to the byte leaving the window

	// gran is the frame size (1: bytes): with a larger one, block sizes,
	// windows, match offsets and lengths are whole frames, so that a
	// compressor that needs whole frames (FLAC) gets them.
	gran int

	// openLit is true while the tail of cur is a literal run of the file
	// being added that no chunk references yet (so it may be trimmed).
	openLit   bool
	openStart int // offset in cur.data where that run starts
}

func newSegmenter(ctx context.Context, opt *Options, sink BlockSink, st *Stats) *segmenter {
	s := &segmenter{
		ctx:       ctx,
		blockSize: 1 << opt.BlockSizeBits,
		lookback:  max(opt.Lookback-1, 0),
		sink:      sink,
		stats:     st,
		tracef:    opt.Tracef,
		gran:      1,
	}
	// Lookback counts the blocks searched including the one being filled,
	// as the reference's -B does: 1 searches only the current block, and
	// 0 turns segmenting off.
	if opt.WindowBits > 0 && opt.Lookback > 0 {
		s.window = 1 << opt.WindowBits
		s.step = max(1, s.window>>opt.WindowStep)
		if s.window > s.blockSize {
			s.window = 0
		}
	}
	if s.window > 0 {
		entries := (s.lookback + 1) * (s.blockSize / s.step)
		s.bloomBits = bloomBits(entries, opt.BloomSizeShift)
		if s.lookback > 0 && s.bloomBits > 6 {
			// Half the bits per window when more than the current block
			// is searched, which keeps -B 2's filter the size of -B 1's:
			// probed at every input position, the filter twice as large
			// cost more in cache misses than its fewer false positives
			// saved (x/tools x8 at -B 2: 5% of the build's CPU).
			s.bloomBits--
		}
		s.bloom = make([]uint64, (1<<s.bloomBits)/64)
		s.table = make(map[uint32]uint64, min(entries, 1<<16))
		s.rollOut = uint32(s.window % 32)
	}
	s.newBlock()
	return s
}

// setGranularity makes the segmenter work in frames of g bytes, as the
// reference's does: the block size is cut to whole frames and the window
// and step count frames. Base images' blocks are not matched against,
// their data not being laid out in frames.
func (s *segmenter) setGranularity(g int) {
	s.gran = g
	s.blockSize -= s.blockSize % g
	if s.window > 0 {
		s.window *= g
		s.step *= g
		s.rollOut = uint32(s.window % 32)
		if s.window > s.blockSize {
			s.window = 0
		}
	}
}

// aligned says whether a position in the input is on a frame boundary.
func (s *segmenter) aligned(p int) bool { return s.gran <= 1 || p%s.gran == 0 }

// startAt numbers the segmenter's blocks from n on (a category stream
// after others).
func (s *segmenter) startAt(n uint32) {
	s.cur.num, s.next = n, n+1
}

func (s *segmenter) newBlock() {
	s.cur = &segBlock{num: s.next, data: make([]byte, 0, s.blockSize)}
	s.next++
	s.openLit = false
}

// maxBloomBits caps a bloom filter at 2^28 bits (32 MiB, 32 bits a value
// at the base index's largest table): more would cost memory for next to
// no fewer false positives, and the positions bloomPositions derives must
// fit in 32 bits.
const maxBloomBits = 28

// bloomBits is the size (log2 bits) of a filter for entries values at
// --bloom-filter-size shift: 2^shift bits a value, at least 64 bits and
// at most 2^maxBloomBits.
func bloomBits(entries, shift int) uint {
	b := uint(bits.Len(uint(max(entries-1, 1)))) + uint(min(max(shift, 0), maxBloomBits))
	return min(max(b, 6), maxBloomBits)
}

// bloomPositions derives the two bit positions of h in a filter of 2^b
// bits (b <= maxBloomBits) from one multiply: the top b bits of the
// product and the b bits below its upper half. Two probes keep false
// positives (and so map lookups) around 1%.
func bloomPositions(h uint32, b uint) (uint32, uint32) {
	x := uint64(h) * 0x9E3779B97F4A7C15
	return uint32(x >> (64 - b)), uint32(x>>(32-b)) & (1<<b - 1)
}

func (s *segmenter) bloomIdx(h uint32) (uint32, uint32) { return bloomPositions(h, s.bloomBits) }

func (s *segmenter) bloomHas(h uint32) bool {
	i, j := s.bloomIdx(h)
	return s.bloom[i/64]&(1<<(i%64)) != 0 && s.bloom[j/64]&(1<<(j%64)) != 0
}

func (s *segmenter) bloomAdd(h uint32) {
	i, j := s.bloomIdx(h)
	s.bloom[i/64] |= 1 << (i % 64)
	s.bloom[j/64] |= 1 << (j % 64)
}

// flushBlock hands the current block to the sink and retires old ones.
func (s *segmenter) flushBlock() error {
	if len(s.cur.data) == 0 {
		return nil
	}
	b := s.cur
	s.stats.Blocks++
	s.stats.BlockBytes += int64(len(b.data))
	if err := s.sink(s.ctx, b.data); err != nil {
		return err
	}
	if s.window > 0 {
		s.blocks = append(s.blocks, b)
		if len(s.blocks) > s.lookback {
			old := s.blocks[0]
			s.blocks = s.blocks[1:]
			for _, h := range old.hashes {
				if v, ok := s.table[h]; ok && uint32(v>>32) == old.num {
					delete(s.table, h)
				}
			}
			old.hashes = nil
			clear(s.bloom)
			for h := range s.table {
				s.bloomAdd(h)
			}
		}
	}
	s.newBlock()
	return nil
}

func (s *segmenter) finish() error { return s.flushBlock() }

// appendLiteral stores p in the block stream and returns the chunks used.
func (s *segmenter) appendLiteral(p []byte, out []pchunk) ([]pchunk, error) {
	for len(p) > 0 {
		room := s.blockSize - len(s.cur.data)
		if room == 0 {
			if err := s.flushBlock(); err != nil {
				return out, err
			}
			continue
		}
		n := min(room, len(p))
		start := len(s.cur.data)
		if start+n > cap(s.cur.data) {
			// Grow by doubling but never beyond the block size.
			nc := min(max(2*cap(s.cur.data), start+n), s.blockSize)
			s.cur.data = append(make([]byte, 0, nc), s.cur.data...)
		}
		s.cur.data = append(s.cur.data, p[:n]...)
		if s.window > 0 {
			s.index(start)
			if !s.openLit {
				s.openLit, s.openStart = true, start
			}
		}
		out = addChunk(out, pchunk{block: s.cur.num, off: uint32(start), size: uint32(n)})
		p = p[n:]
	}
	return out, nil
}

// index adds table entries for all sampled windows that end in
// cur.data[from:].
func (s *segmenter) index(from int) {
	d := s.cur.data
	o := from - s.window + 1
	if o < 0 {
		o = 0
	}
	o = (o + s.step - 1) / s.step * s.step
	var h uint32
	for first := true; o+s.window <= len(d); o += s.step {
		if first || s.step >= s.window {
			h = buzhash(d[o : o+s.window])
			first = false
		} else {
			// Roll from the previous sample: one step per byte instead
			// of rehashing the whole window.
			for q := o - s.step; q < o; q++ {
				h = rotl1(h, s, d[q], d[q+s.window])
			}
		}
		s.table[h] = uint64(s.cur.num)<<32 | uint64(o)
		s.cur.hashes = append(s.cur.hashes, h)
		s.bloomAdd(h)
	}
}

// addChunk appends c, merging it with the previous chunk if contiguous.
func addChunk(out []pchunk, c pchunk) []pchunk {
	if n := len(out); n > 0 && !c.isHole() && !out[n-1].isHole() && out[n-1].block == c.block &&
		out[n-1].off+out[n-1].size == c.off && uint64(out[n-1].size)+uint64(c.size) <= 1<<32-1 {
		out[n-1].size += c.size
		return out
	}
	return append(out, c)
}

func (s *segmenter) blockData(num uint32) []byte {
	if num == s.cur.num {
		return s.cur.data
	}
	if s.base != nil {
		if d, ok := s.base.blocks[num]; ok {
			return d
		}
	}
	for _, b := range s.blocks {
		if b.num == num {
			return b.data
		}
	}
	return nil
}

// add segments one contiguous data range of a file.
func (s *segmenter) add(d []byte, out []pchunk) ([]pchunk, error) {
	s.openLit = false // a new file: earlier tail bytes may be referenced
	if s.window == 0 || len(d) < s.window {
		return s.appendLiteral(d, out)
	}
	w := s.window
	var err error
	lit := 0 // start of the pending (not yet stored) literal
	p := 0
	h := buzhash(d[:w])
	for {
		if p&0xFFFF == 0 {
			if err := s.ctx.Err(); err != nil {
				return out, err
			}
		}
		bn, off, ok := uint32(0), 0, false
		if !s.aligned(p) {
			// Only whole frames match.
		} else if s.bloomHas(h) {
			if v, found := s.table[h]; found {
				bn, off = uint32(v>>32), int(uint32(v))
				bd := s.blockData(bn)
				ok = off+w <= len(bd) && bytes.Equal(bd[off:off+w], d[p:p+w])
			}
		}
		if !ok && s.base != nil && s.gran <= 1 && s.aligned(p) {
			// The recent blocks first, then the base's.
			if bn, off, ok = s.base.lookup(h); ok {
				bd := s.base.blocks[bn]
				ok = off+w <= len(bd) && bytes.Equal(bd[off:off+w], d[p:p+w])
			}
		}
		if ok {
			out, p, err = s.match(d, out, lit, p, bn, off)
			if err != nil {
				return out, err
			}
			lit = p
			if p+w > len(d) {
				break
			}
			h = buzhash(d[p : p+w])
			continue
		}
		// Store literal data in pieces so that repeats inside one large
		// file can be found too.
		if p-lit >= 4*w && s.aligned(p) {
			if out, err = s.appendLiteral(d[lit:p], out); err != nil {
				return out, err
			}
			lit = p
		}
		if p+w >= len(d) {
			break
		}
		h = rotl1(h, s, d[p], d[p+w])
		p++
	}
	return s.appendLiteral(d[lit:], out)
}

// match handles a verified window match of d[p:] against block bn at off:
// it extends the match backwards (into pending literal data and into the
// still unreferenced literal tail of the current block) and forwards, and
// emits the reference. It returns the new input position.
func (s *segmenter) match(d []byte, out []pchunk, lit, p int, bn uint32, off int) ([]pchunk, int, error) {
	bd := s.blockData(bn)
	// Backwards into pending literal bytes.
	k := 0
	for p-k > lit && off-k > 0 && d[p-k-1] == bd[off-k-1] {
		k++
	}
	k -= k % s.gran
	// Further back into the open literal tail of the current block, which
	// is trimmed again. Not for matches into the current block itself,
	// whose referenced bytes could be the ones trimmed.
	trim := 0
	if p-k == lit && bn != s.cur.num && s.openLit && len(out) > 0 {
		last := &out[len(out)-1]
		cd := s.cur.data
		for len(cd)-trim > s.openStart && int(last.size) > trim && off-k-trim > 0 &&
			p-k-trim > 0 && d[p-k-trim-1] == bd[off-k-trim-1] {
			trim++
		}
		trim -= trim % s.gran
		if trim > 0 {
			s.cur.data = cd[:len(cd)-trim]
			last.size -= uint32(trim)
			if last.size == 0 {
				out = out[:len(out)-1]
			}
		}
	}
	var err error
	if out, err = s.appendLiteral(d[lit:p-k], out); err != nil {
		return out, p, err
	}
	if bn == s.cur.num {
		bd = s.cur.data
	}
	n := s.window
	for p+n < len(d) && off+n < len(bd) && d[p+n] == bd[off+n] {
		n++
	}
	n -= n % s.gran
	start := off - k - trim
	size := k + trim + n
	out = addChunk(out, pchunk{block: bn, off: uint32(start), size: uint32(size)})
	if s.tracef != nil {
		s.tracef("segment match: %s at %d, %d bytes from block %d offset %d", s.file, p-k-trim, size, bn, start)
	}
	s.openLit = false
	s.stats.SegMatches++
	s.stats.SegMatchBytes += int64(size)
	return out, p + n, nil
}

// segmentAll orders the distinct contents and feeds them through the
// segmenter. With a categorizer, each category gets a segmenter (and
// order) of its own, so that its blocks hold only its data; the category
// streams follow each other in the reference's category order.
func (b *builder) segmentAll(ctx context.Context, unique []*content, sink CategorizedSink) error {
	// The first file's report starts the phase, so its first frame
	// already names a file.
	b.stats.Phase = "segmenting"
	if len(b.opt.Categorize) == 0 || b.opt.Hollow {
		ordered, starts := b.order(unique, b.opt, "")
		return b.segmentStream(ctx, b.opt, catDefault, ordered, starts, sink)
	}
	streams, names := categoryPlan(unique, b.opt.rank, b.cz.less)
	if b.opt.Verbosef != nil {
		// As the reference reports them: fragments per category, the
		// largest category first.
		count, size := map[catKind]int{}, map[catKind]int64{}
		for _, c := range unique {
			for _, f := range c.fragments() {
				count[f.cat.kind]++
				size[f.cat.kind] += f.size
			}
		}
		for _, k := range names {
			b.verbosef("found %d %s fragments (%d bytes)", count[k], kindNames[k], size[k])
		}
	}
	for _, cat := range streams {
		var in []*content
		for _, c := range unique {
			for _, f := range c.fragments() {
				if f.cat == cat {
					in = append(in, c)
					break
				}
			}
		}
		copt := b.opt.forCategory(cat.name())
		ordered, starts := b.order(in, copt, b.cz.prefix(cat))
		if err := b.segmentStream(ctx, copt, cat, ordered, starts, sink); err != nil {
			return err
		}
	}
	// Join each file's fragments' chunks, in file order.
	for _, c := range unique {
		if c.fragChunks() != nil {
			c.chunks = nil
			if c.size > 0 {
				for _, ch := range c.fragChunks() {
					c.chunks = append(c.chunks, ch...)
				}
			}
			c.setFragChunks(nil)
		}
	}
	return nil
}

// order orders one stream's contents and logs the result; prefix names
// the category. It also returns where each family of the order starts
// (see orderContents).
func (b *builder) order(cs []*content, opt *Options, prefix string) ([]*content, []familyStart) {
	b.phase("ordering")
	t0 := time.Now()
	out, starts := orderContents(cs, opt, b.sc.listPos)
	if len(starts) > 1 {
		b.verbosef("%sordered %d contents by %s in %d families of top-level directories [%v]", prefix, len(out), opt.Order, len(starts), time.Since(t0))
	} else {
		b.verbosef("%sordered %d contents by %s [%v]", prefix, len(out), opt.Order, time.Since(t0))
	}
	if b.opt.Debugf != nil {
		for i, c := range out {
			b.debugf("%sorder %d: %s (%d bytes)", prefix, i, c.rep.relPath(), c.size)
		}
	}
	return out, starts
}

// familyBreaks lists the indexes of contents before which the segmenter
// starts a new block: the start of every family but the first that is,
// or begins, a family of at least a block's bytes. Such a family's blocks
// then fall as they would in a build of its own (a shard): the segmenter
// finds repeats only within its last blocks, so where the block
// boundaries fall inside a family decides what it finds, and a family
// that starts in the middle of the previous one's last block loses more
// at its boundaries than one that starts with a block. Smaller families
// are packed on, as a block of their own would compress badly.
func familyBreaks(starts []familyStart, blockSize int) map[int]bool {
	breaks := map[int]bool{}
	for _, s := range starts {
		if s.at > 0 && s.span >= int64(blockSize) {
			breaks[s.at] = true
		}
	}
	return breaks
}

// segmentStream segments the data of category cat of contents, in that
// order, into blocks numbered on from those already written.
func (b *builder) segmentStream(ctx context.Context, opt *Options, cat category, contents []*content, starts []familyStart, sink CategorizedSink) error {
	b.phase("segmenting")
	bc := BlockCategory{Name: cat.name(), Metadata: b.cz.metadataJSON(cat)}
	gran := 1
	if opt.Granularity != nil && len(b.opt.Categorize) > 0 {
		gran = max(1, opt.Granularity(bc.Name, bc.Metadata))
	}
	if bc.Metadata != "" {
		b.verbosef("%smetadata: %s", b.cz.prefix(cat), bc.Metadata)
	}
	seg := newSegmenter(ctx, opt, func(ctx context.Context, data []byte) error {
		b.blockCats = append(b.blockCats, cat)
		return sink(ctx, data, bc)
	}, &b.stats)
	if gran > 1 {
		seg.setGranularity(gran)
		b.verbosef("%susing %d-byte frames for segment analysis", b.cz.prefix(cat), gran)
	}
	seg.base = b.baseIdx
	seg.startAt(uint32(b.blockBase + len(b.blockCats)))
	breaks := familyBreaks(starts, seg.blockSize)
	var progMu sync.Mutex
	for i, c := range contents {
		if err := ctx.Err(); err != nil {
			return err
		}
		if breaks[i] {
			if err := seg.flushBlock(); err != nil {
				return err
			}
		}
		if c.size == 0 {
			continue
		}
		if b.opt.Hollow {
			c.chunks = []pchunk{holeChunk(c.size)}
			b.stats.HoleBytes += c.size
			continue
		}
		var ranges []frange
		var bytes int64
		if c.rep.frags() == nil {
			ranges = []frange{{0, c.size, 0}}
			bytes = c.size
		} else {
			if c.fragChunks() == nil {
				c.setFragChunks(make([][]pchunk, len(c.rep.frags())))
			}
			var pos int64
			for i, f := range c.rep.frags() {
				if f.cat == cat {
					ranges = append(ranges, frange{pos, pos + f.size, i})
					bytes += f.size
				}
				pos += f.size
			}
		}
		if b.opt.Progress != nil {
			progMu.Lock()
			b.stats.Current = c.rep.relPath()
			b.report()
			progMu.Unlock()
		}
		seg.file = c.rep.relPath()
		matched := b.stats.SegMatchBytes
		outs, err := b.segmentFile(seg, c, ranges)
		if err != nil {
			var se *segmenterError
			if ctx.Err() != nil || !b.opt.ContinueOnErr || errors.As(err, &se) {
				return err
			}
			// As the reference does with a file that fails while being
			// read: keep it, empty, and report the error.
			b.sc.warn("%v; storing it as an empty file", err)
			b.stats.Errors++
			c.chunks, c.size = nil, 0
			for _, in := range append(c.inodes, c.rep) {
				in.size = 0
			}
			continue
		}
		if c.rep.frags() == nil {
			c.chunks = outs[0]
		} else {
			for i, r := range ranges {
				c.x.fragChunks[r.idx] = outs[i]
			}
		}
		if c.copyOf() == nil { // a family copy is not more input (progress)
			b.stats.SegmentedBytes += bytes
		}
		nchunks := 0
		for _, o := range outs {
			nchunks += len(o)
		}
		b.debugf("segmented %s: %d bytes in %d chunks, %d bytes matched earlier data", seg.file, bytes, nchunks, b.stats.SegMatchBytes-matched)
		if b.opt.Progress != nil {
			progMu.Lock()
			b.report()
			progMu.Unlock()
		}
	}
	return seg.finish()
}

// frange is a range [lo, hi) of a file's logical bytes; idx is the
// fragment it belongs to.
type frange struct {
	lo, hi int64
	idx    int
}

// segmenterError marks a segmentFile error after which the segmenter
// cannot go on: the block sink failed. It always ends the build; other
// errors are the input's.
type segmenterError struct{ err error }

func (e *segmenterError) Error() string { return e.err.Error() }
func (e *segmenterError) Unwrap() error { return e.err }

// segmentFile maps the file (falling back to reading it) and segments its
// data extents; a file that shrinks while mapped is caught as a fault.
func (b *builder) segmentFile(seg *segmenter, c *content, ranges []frange) (_ [][]pchunk, err error) {
	f := c.rep
	if f.data != nil {
		return b.segmentData(seg, f, ranges)
	}
	fh, err := b.opt.OpenFile(b.osPath(f))
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", b.osPath(f), err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot stat %s: %w", b.osPath(f), err)
	}
	if fi.Size() != f.size {
		return nil, fmt.Errorf("%s: %w (expected %d bytes, now %d)", b.osPath(f), errSizeChanged, f.size, fi.Size())
	}
	var data []byte
	if f.size >= 1<<20 && f.size == int64(int(f.size)) {
		if r, merr := mmap.Map(fh, 0, f.size); merr == nil {
			data = r.Bytes()
			defer r.Unmap()
			// A truncation while mapped raises SIGBUS; turn it into an error.
			old := debug.SetPanicOnFault(true)
			defer func() {
				debug.SetPanicOnFault(old)
				if r := recover(); r != nil {
					// An input error, not a segmenter one: the segmenter
					// reads the mapped input before changing any state,
					// and appendLiteral's copy is assigned to the block
					// only once complete, so a fault leaves it consistent.
					err = fmt.Errorf("%s: %w, or unreadable (fault while reading the mapped file: %v)", b.osPath(f), errSizeChanged, r)
				}
			}()
		}
	}
	if data == nil {
		// Segmenting is sequential and copies what it keeps, so one
		// growing buffer serves all small files.
		if int64(cap(b.segBuf)) < f.size {
			b.segBuf = make([]byte, f.size)
		}
		data = b.segBuf[:f.size]
		n, rerr := io.ReadFull(fh, data)
		if rerr != nil {
			if errors.Is(rerr, io.ErrUnexpectedEOF) || errors.Is(rerr, io.EOF) {
				return nil, fmt.Errorf("%s: %w (expected %d bytes, read %d)", b.osPath(f), errSizeChanged, f.size, n)
			}
			return nil, fmt.Errorf("cannot read %s: %w", b.osPath(f), rerr)
		}
		var one [1]byte
		if m, _ := fh.Read(one[:]); m > 0 {
			return nil, fmt.Errorf("%s: %w (grew beyond %d bytes)", b.osPath(f), errSizeChanged, f.size)
		}
	}
	outs, err := b.segmentRanges(seg, f, data, ranges)
	if err != nil {
		return nil, err
	}
	// Catch files that grew (or were replaced) while being read.
	if fi, err := fh.Stat(); err != nil {
		return nil, fmt.Errorf("cannot stat %s: %w", b.osPath(f), err)
	} else if fi.Size() != f.size {
		return nil, fmt.Errorf("%s: %w (expected %d bytes, now %d)", b.osPath(f), errSizeChanged, f.size, fi.Size())
	}
	return outs, nil
}

// segmentData segments a TreeSource's file; a mapped archive that
// shrinks meanwhile is caught as a fault.
func (b *builder) segmentData(seg *segmenter, f *inode, ranges []frange) (_ [][]pchunk, err error) {
	data, release, err := b.mapData(f)
	if err != nil {
		return nil, err
	}
	defer release()
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %w, or unreadable (fault while reading the mapped input: %v)", b.osPath(f), errSizeChanged, r)
		}
	}()
	return b.segmentRanges(seg, f, data, ranges)
}

// segmentRanges segments the ranges of file f, whose bytes are data.
func (b *builder) segmentRanges(seg *segmenter, f *inode, data []byte, ranges []frange) ([][]pchunk, error) {
	outs := make([][]pchunk, len(ranges))
	for i, r := range ranges {
		var err error
		if outs[i], err = b.segmentRange(seg, f, data, r); err != nil {
			return nil, &segmenterError{err}
		}
	}
	return outs, nil
}

// segmentRange segments the bytes [r.lo, r.hi) of file f, whose contents
// are data: its data extents, and holes between them.
func (b *builder) segmentRange(seg *segmenter, f *inode, data []byte, r frange) ([]pchunk, error) {
	if f.extents() == nil {
		return seg.add(data[r.lo:r.hi], nil)
	}
	var out []pchunk
	var err error
	pos := r.lo
	for _, e := range f.extents() {
		lo, hi := max(e.off, r.lo), min(e.off+e.len, r.hi)
		if lo >= hi {
			continue
		}
		if lo > pos {
			out = append(out, holeChunk(lo-pos))
			b.stats.HoleBytes += lo - pos
		}
		if out, err = seg.add(data[lo:hi], out); err != nil {
			return out, err
		}
		pos = hi
	}
	if pos < r.hi {
		out = append(out, holeChunk(r.hi-pos))
		b.stats.HoleBytes += r.hi - pos
	}
	return out, nil
}

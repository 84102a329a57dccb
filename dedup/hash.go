package dedup

import (
	"cmp"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha3"
	"crypto/sha512"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/bits"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/godwarfs/godwarfs/dedup/formats"
	"github.com/zeebo/xxh3"
	"golang.org/x/sync/errgroup"
)

// FileHashes lists the supported --file-hash names.
var FileHashes = []string{"none", "md5", "sha1", "sha224", "sha256", "sha3-224", "sha3-256",
	"sha3-384", "sha3-512", "sha384", "sha512", "sha512-224", "sha512-256", "xxh3-128", "xxh3-64"}

type xxh128 struct{ *xxh3.Hasher }

func (h xxh128) Sum(b []byte) []byte {
	v := h.Sum128().Bytes()
	return append(b, v[:]...)
}
func (h xxh128) Size() int { return 16 }

func newXXH3128() hash.Hash { return xxh128{xxh3.New()} }

// NewFileHash returns a constructor for the named whole-file hash; nil for
// "none" (whole-file deduplication disabled).
func NewFileHash(name string) (func() hash.Hash, error) {
	switch name {
	case "none":
		return nil, nil
	case "xxh3-128":
		return newXXH3128, nil
	case "xxh3-64":
		return func() hash.Hash { return xxh3.New() }, nil
	case "md5":
		return md5.New, nil
	case "sha1":
		return sha1.New, nil
	case "sha224":
		return sha256.New224, nil
	case "sha256":
		return sha256.New, nil
	case "sha384":
		return sha512.New384, nil
	case "sha512":
		return sha512.New, nil
	case "sha512-224":
		return sha512.New512_224, nil
	case "sha512-256":
		return sha512.New512_256, nil
	case "sha3-224":
		return func() hash.Hash { return sha3.New224() }, nil
	case "sha3-256":
		return func() hash.Hash { return sha3.New256() }, nil
	case "sha3-384":
		return func() hash.Hash { return sha3.New384() }, nil
	case "sha3-512":
		return func() hash.Hash { return sha3.New512() }, nil
	}
	return nil, fmt.Errorf("unsupported file hash %q", name)
}

// simAcc accumulates a nilsimsa-style locality sensitive digest: every byte
// votes, together with bytes of the preceding 4, into 256 trigram buckets;
// the digest bit is set where a bucket is above the mean.
type simAcc struct {
	// acc counts the votes of each of the four trigrams apart: votes
	// that follow each other then rarely wait on the same counter.
	acc   [4][256]uint32
	prev  [4]byte
	n     int
	total uint64
}

// simAccs recycles accumulators: at 4 KiB each, one per file read would
// make most of a scan's garbage.
var simAccs = sync.Pool{New: func() any { return new(simAcc) }}

func getSimAcc() *simAcc {
	s := simAccs.Get().(*simAcc)
	*s = simAcc{}
	return s
}

func trigram(a, b, c byte, n uint32) uint8 {
	x := uint32(a)*0x9E3779B1 ^ uint32(b)*0x85EBCA77 ^ uint32(c)*0xC2B2AE3D ^ n*0x27D4EB2F
	x ^= x >> 15
	x *= 0x2C1B3C6D
	return uint8(x >> 24)
}

func (s *simAcc) Write(p []byte) (int, error) {
	size := len(p)
	c1, c2, c3, c4 := s.prev[0], s.prev[1], s.prev[2], s.prev[3]
	// The first four bytes of a stream only fill the window; the loop
	// below then needs no test per byte.
	for s.n < 4 && len(p) > 0 {
		c4, c3, c2, c1 = c3, c2, c1, p[0]
		p = p[1:]
		s.n++
	}
	acc := &s.acc
	for _, c0 := range p {
		acc[0][trigram(c0, c1, c2, 0)]++
		acc[1][trigram(c0, c1, c3, 1)]++
		acc[2][trigram(c0, c2, c3, 2)]++
		acc[3][trigram(c0, c1, c4, 3)]++
		c4, c3, c2, c1 = c3, c2, c1, c0
	}
	s.total += 4 * uint64(len(p))
	s.prev = [4]byte{c1, c2, c3, c4}
	return size, nil
}

func (s *simAcc) digest() (d [4]uint64, sim uint32) {
	mean := s.total / 256
	var fold [32]uint64
	for i := range 256 {
		v := s.acc[0][i] + s.acc[1][i] + s.acc[2][i] + s.acc[3][i]
		if uint64(v) > mean {
			d[i/64] |= 1 << (i % 64)
		}
		fold[i%32] += uint64(v)
	}
	foldMean := s.total / 32
	for i, v := range fold {
		if v > foldMean {
			sim |= 1 << i
		}
	}
	return d, sim
}

func hamming(a, b *[4]uint64) int {
	return bits.OnesCount64(a[0]^b[0]) + bits.OnesCount64(a[1]^b[1]) +
		bits.OnesCount64(a[2]^b[2]) + bits.OnesCount64(a[3]^b[3])
}

// errSizeChanged reports a file whose size differs from what lstat said.
var errSizeChanged = errors.New("file size changed while reading")

// scanFiles reads every regular inode once: it checks readability and size,
// finds sparse extents, and computes the whole-file hash (only where another
// inode of the same size exists) and the similarity digest when needed.
func (b *builder) scanFiles(ctx context.Context, files []*inode) ([]*inode, error) {
	newHash := b.opt.FileHash
	sizeCount := map[int64]int{}
	for _, f := range files {
		sizeCount[f.size]++
	}
	for size, n := range b.baseSizes {
		if sizeCount[size] > 0 {
			sizeCount[size] += n
		}
	}
	needDigest := (b.opt.Order == OrderNilsimsa || b.opt.Order == OrderSimilarity) && !b.opt.Hollow
	for _, co := range b.opt.PerCategory {
		if co.Order != nil && (*co.Order == OrderNilsimsa || *co.Order == OrderSimilarity) {
			needDigest = !b.opt.Hollow
		}
	}
	// Hashers are reused too (xxh3's holds a 1 KiB buffer).
	var hashers sync.Pool
	if newHash != nil {
		hashers.New = func() any { return newHash() }
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, b.opt.ScannerWorkers))
	bad := &badFiles{sc: b.sc}
	b.sc.mu.Lock()
	b.stats.FilesToScan = len(files)
	b.report()
	b.sc.mu.Unlock()
	for _, f := range files {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			var h hash.Hash
			if newHash != nil && sizeCount[f.size] > 1 && f.size > 0 {
				h = hashers.Get().(hash.Hash)
				h.Reset()
				defer hashers.Put(h)
			}
			// A file whose size another file shares may turn out to be a
			// duplicate: its digest waits until the hashes have grouped
			// the contents (digestContents), so that it is computed once
			// per content, as the reference does, not once per file.
			var n int64
			err := b.detect(f)
			fc := b.cz.start(f)
			var sa io.Writer
			var acc *simAcc
			if needDigest && h == nil && b.wantsDigest(f) {
				acc = getSimAcc()
				defer simAccs.Put(acc)
				// With no incompressible check to come, the format
				// categorizer's fragments are final.
				sa = b.digestWriter(f, acc, fc == nil)
			}
			if err == nil {
				n, err = b.readForScan(gctx, f, h, sa, fc)
			}
			if err == nil && fc != nil {
				frags, claimed, cerr := fc.result()
				switch {
				case cerr != nil:
					err = fmt.Errorf("categorizing %s: %w", b.osPath(f), cerr)
				case claimed:
					// Before the format categorizers in --categorize: its
					// result wins over theirs.
					f.setFrags(frags)
					f.setClaimedBy(b.cz.incIdx + 1)
				}
			}
			b.sc.mu.Lock()
			b.stats.ScannedBytes += n
			b.stats.FilesScanned++
			b.stats.Current = f.relPath()
			b.report()
			b.sc.mu.Unlock()
			if err != nil {
				return bad.mark(gctx, f, err)
			}
			if h != nil {
				f.hash = string(h.Sum(nil))
			}
			if acc != nil {
				f.simDigest, f.simHash = acc.digest()
				f.hasDigest = true
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	files = bad.drop(files)
	if !needDigest {
		return files, nil
	}
	return b.digestContents(ctx, files)
}

// digestContents computes the nilsimsa digests scanFiles left out: one
// per distinct content (equal size and hash), read from the first of its
// files that can still be read, and shared by all of them.
func (b *builder) digestContents(ctx context.Context, files []*inode) ([]*inode, error) {
	// Group by sorting rather than in a map keyed by hash: a build may
	// hold millions of files, and the slices cost a few bytes each. The
	// groups are then read in the order of their first file, the tree's.
	var cand []*inode
	for _, f := range files {
		if f.hash == "" || f.hasDigest || !b.wantsDigest(f) {
			continue
		}
		cand = append(cand, f)
	}
	if len(cand) == 0 {
		return files, nil
	}
	byKey := make([]int32, len(cand))
	for i := range byKey {
		byKey[i] = int32(i)
	}
	slices.SortFunc(byKey, func(i, j int32) int {
		a, b := cand[i], cand[j]
		if c := cmp.Compare(a.size, b.size); c != 0 {
			return c
		}
		if c := strings.Compare(a.hash, b.hash); c != 0 {
			return c
		}
		return cmp.Compare(i, j)
	})
	// next links each file to the next of its group (-1: last); a
	// group's first file in tree order leads it.
	next := make([]int32, len(cand))
	lead := make([]bool, len(cand))
	for k := 0; k < len(byKey); {
		e := k + 1
		for e < len(byKey) && cand[byKey[e]].size == cand[byKey[k]].size && cand[byKey[e]].hash == cand[byKey[k]].hash {
			e++
		}
		lead[byKey[k]] = true
		for m := k; m < e; m++ {
			next[byKey[m]] = -1
			if m+1 < e {
				next[byKey[m]] = byKey[m+1]
			}
		}
		k = e
	}
	byKey = nil
	members := func(i int32, yield func(*inode) bool) {
		for ; i >= 0; i = next[i] {
			if !yield(cand[i]) {
				return
			}
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, b.opt.ScannerWorkers))
	bad := &badFiles{sc: b.sc}
	for i := range cand {
		if !lead[i] {
			continue
		}
		g.Go(func() error {
			var err error
			members(int32(i), func(f *inode) bool {
				if err = gctx.Err(); err != nil {
					return false
				}
				sa := getSimAcc()
				defer simAccs.Put(sa)
				var n int64
				n, err = b.readForScan(gctx, f, nil, b.digestWriter(f, sa, true), nil)
				b.sc.mu.Lock()
				b.stats.ScannedBytes += n
				b.sc.mu.Unlock()
				if err != nil {
					err = bad.mark(gctx, f, err)
					return err == nil
				}
				d, sim := sa.digest()
				members(int32(i), func(m *inode) bool {
					m.simDigest, m.simHash, m.hasDigest = d, sim, true
					return true
				})
				return false
			})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return bad.drop(files), nil
}

// badFiles collects the files that could not be read while scanning and
// are left out of the image (--continue-on-error).
type badFiles struct {
	sc  *scanner
	mu  sync.Mutex
	set map[*inode]bool
}

// mark records that reading f failed with err. It returns the error that
// ends the scan: the context's, or err itself unless failures are only
// reported; nil means the scan goes on without f.
func (bf *badFiles) mark(ctx context.Context, f *inode, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err := bf.sc.fail(err); err != nil {
		return err
	}
	bf.mu.Lock()
	defer bf.mu.Unlock()
	if bf.set == nil {
		bf.set = map[*inode]bool{}
	}
	bf.set[f] = true
	return nil
}

// drop returns files without the marked ones, reusing its array.
func (bf *badFiles) drop(files []*inode) []*inode {
	if len(bf.set) == 0 {
		return files
	}
	out := files[:0]
	for _, f := range files {
		if !bf.set[f] {
			out = append(out, f)
		}
	}
	return out
}

// detect runs the format categorizers on f, if any are enabled.
func (b *builder) detect(f *inode) error {
	if b.cz == nil || (!b.cz.detect && !b.cz.hotness) || f.size == 0 {
		return nil
	}
	if !b.cz.detect || f.size < formats.MinPCMAudioSize {
		// No format categorizer looks at a file this small.
		if f.hot {
			b.detectFormats(f, nil)
		}
		return nil
	}
	fh, err := b.openData(f)
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", b.osPath(f), err)
	}
	defer fh.Close()
	b.detectFormats(f, fh)
	return nil
}

func (b *builder) readForScan(ctx context.Context, f *inode, h hash.Hash, sa io.Writer, fc *fileCat) (int64, error) {
	fh, err := b.openData(f)
	if err != nil {
		return 0, fmt.Errorf("cannot read %s: %w", b.osPath(f), err)
	}
	defer fh.Close()
	if !b.opt.NoSparse {
		var ext []extent
		if f.data != nil {
			ext = f.dataExtents()
		} else if !f.dense {
			if ext, err = dataExtents(fh.(*os.File), f.size, 0); err != nil {
				return 0, fmt.Errorf("cannot read %s: %w", b.osPath(f), err)
			}
		}
		if ext != nil || f.x != nil {
			f.ext().extents = ext
		}
	}
	if sw, ok := sa.(*spanWriter); ok && f.extents() != nil {
		// Its reads skip the holes, so positions would not match.
		sa = sw.w
	}
	if h == nil && sa == nil && fc == nil {
		// Reading is deferred to the segmenter; still probe one byte so
		// that unreadable files are reported before any output is made.
		var one [1]byte
		if f.size > 0 {
			if _, err := fh.ReadAt(one[:], 0); err != nil && err != io.EOF {
				return 0, fmt.Errorf("cannot read %s: %w", b.osPath(f), err)
			}
		}
		return 0, nil
	}
	var ws []io.Writer
	if h != nil {
		ws = append(ws, h)
	}
	if sa != nil {
		ws = append(ws, sa)
	}
	if fc != nil {
		ws = append(ws, fc)
	}
	w := ws[0]
	if len(ws) > 1 {
		w = io.MultiWriter(ws...)
	}
	var buf []byte
	if f.size < 1<<20 {
		buf = make([]byte, max(f.size, 512))
	} else {
		bp := b.bufs.Get().(*[]byte)
		defer b.bufs.Put(bp)
		buf = *bp
	}
	if f.extents() != nil {
		// Sparse: hash the extent layout and the data only, so holes
		// cost nothing; equal hashes then also mean equal chunk layouts.
		if h != nil {
			fmt.Fprintf(h, "sparse:%d", len(f.extents()))
		}
		var total, pos int64
		for _, e := range f.extents() {
			if fc != nil && e.off > pos {
				fc.hole(e.off - pos)
			}
			pos = e.off + e.len
			if h != nil {
				fmt.Fprintf(h, ":%d+%d", e.off, e.len)
			}
			n, err := io.CopyBuffer(w, io.NewSectionReader(fh, e.off, e.len), buf)
			total += n
			if err != nil {
				return total, fmt.Errorf("cannot read %s: %w", b.osPath(f), err)
			}
			if n != e.len {
				return total, fmt.Errorf("%s: %w (data extent shorter than expected)", b.osPath(f), errSizeChanged)
			}
		}
		if fc != nil && pos < f.size {
			fc.hole(f.size - pos)
		}
		return total, nil
	}
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, err := fh.Read(buf)
		if n > 0 {
			w.Write(buf[:n])
			total += int64(n)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return total, fmt.Errorf("cannot read %s: %w", b.osPath(f), err)
		}
	}
	if total != f.size {
		return total, fmt.Errorf("%s: %w (expected %d bytes, read %d)", b.osPath(f), errSizeChanged, f.size, total)
	}
	return total, nil
}

// content is one distinct file content (one chunk list).
type content struct {
	rep    *inode
	inodes []*inode
	size   int64
	chunks []pchunk
	// x holds what only categorized contents and family copies have
	// (nil: none of it).
	x *contentExtra
}

type contentExtra struct {
	// fragChunks holds the chunks of each of rep.frags while the
	// category streams are segmented.
	fragChunks [][]pchunk
	// copyOf is, for a family's copy of a content (see familyCopies),
	// the content it is a copy of.
	copyOf *content
}

func (c *content) fragChunks() [][]pchunk {
	if c.x == nil {
		return nil
	}
	return c.x.fragChunks
}

func (c *content) setFragChunks(fc [][]pchunk) {
	if fc != nil || c.x != nil {
		if c.x == nil {
			c.x = &contentExtra{}
		}
		c.x.fragChunks = fc
	}
}

func (c *content) copyOf() *content {
	if c.x == nil {
		return nil
	}
	return c.x.copyOf
}

// digestWriter returns what f's similarity digest reads: all of f, or,
// when a categorizer split it into fragments that are final, only the
// fragments of the categories ordered by similarity, as the reference
// digests each category's fragments apart. A PCM file's waveform, ordered
// by path, is then never digested, only its metadata. Nil when no
// fragment needs a digest. readForScan digests a sparse file whole.
func (b *builder) digestWriter(f *inode, acc *simAcc, final bool) io.Writer {
	if !final || f.frags() == nil || f.hot {
		return acc
	}
	w := &spanWriter{w: acc}
	var pos int64
	for _, fr := range f.frags() {
		if o := b.opt.forCategory(fr.cat.name()).Order; o == OrderNilsimsa || o == OrderSimilarity {
			w.spans = append(w.spans, extent{off: pos, len: fr.size})
		}
		pos += fr.size
	}
	switch {
	case len(w.spans) == 0:
		return nil
	case len(w.spans) == len(f.frags()):
		return acc
	}
	return w
}

// spanWriter passes on the bytes of a stream that fall in its spans
// (sorted, apart) and drops the rest.
type spanWriter struct {
	w     io.Writer
	spans []extent
	pos   int64
}

func (s *spanWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && len(s.spans) > 0 {
		sp := &s.spans[0]
		if s.pos >= sp.off+sp.len {
			s.spans = s.spans[1:]
			continue
		}
		if skip := sp.off - s.pos; skip > 0 {
			if skip >= int64(len(p)) {
				break
			}
			p, s.pos = p[skip:], sp.off
		}
		take := min(int64(len(p)), sp.off+sp.len-s.pos)
		if _, err := s.w.Write(p[:take]); err != nil {
			return n - len(p), err
		}
		p, s.pos = p[take:], s.pos+take
	}
	s.pos += int64(len(p))
	return n, nil
}

// wantsDigest says whether f gets a nilsimsa digest when the order needs
// them: empty files and those above --max-similarity-size do not.
func (b *builder) wantsDigest(f *inode) bool {
	return f.size > 0 && (b.opt.MaxSimilaritySize <= 0 || f.size <= b.opt.MaxSimilaritySize)
}

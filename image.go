package godwarfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/metadata"
	"github.com/godwarfs/godwarfs/source"
)

// Defaults used for zero Options fields; they match the dwarfs driver.
const (
	DefaultCacheSize = 512 << 20 // bytes of decompressed blocks kept
	DefaultWorkers   = 2         // blocks decompressed at once
)

// Options controls how an image is opened. The zero value (or a nil
// *Options) opens the image the way the tools do by default.
type Options struct {
	// ImageOffset is where the image starts in the file. Zero searches
	// for the image, so images behind a header (a self-extracting script,
	// say) open without knowing its length; an image at the very start is
	// found first. A positive value is the exact offset; a negative one
	// searches too.
	ImageOffset int64
	// ExactOffset makes an ImageOffset of zero exact too: the image must
	// start at the first byte.
	ExactOffset bool
	// CacheSize is how many bytes of decompressed blocks are kept
	// (DefaultCacheSize if zero or negative).
	CacheSize int64
	// Workers is how many blocks are decompressed at once
	// (DefaultWorkers if zero or negative).
	Workers int
	// Cache, when set, keeps the image's decoded blocks in a cache that
	// shares its capacity, LRU order and decode pool with the other
	// images opened with it (CacheSize and Workers are then its own);
	// Close drops only this image's blocks.
	Cache *block.SharedCache
	// NoCheck skips the fast checksum pass over all sections at open.
	// The metadata is always verified.
	NoCheck bool
	// LazyBlockCheck leaves compressed data blocks out of that pass: their
	// checksum is verified whenever they are loaded anyway, so a damaged
	// one fails its reads either way, and opening (mounting) reads only
	// the metadata instead of the whole image, as the reference driver
	// does. Warnings then report only the other sections and the stored
	// (uncompressed) blocks, which are read without a per-read check.
	LazyBlockCheck bool
	// EagerHeaders reads and checks every section header at open, as
	// dwarfsck does. Otherwise, when NoCheck or LazyBlockCheck is set and
	// the image has a section index, a block's header is read when the
	// block is first used (as the reference does), so that opening a
	// large image reads the index and the metadata only; a bad block
	// header then fails the reads of that block, with an error naming
	// the image and the section, and stored blocks are checked then too
	// instead of being reported by Warnings. Likewise, the metadata is
	// then checked as metadata.FS.CheckLazy does: each directory's
	// entries and names (which takes reading every entry and name of the
	// image) when the directory is first listed or searched, an inode's
	// attributes and a file's chunks when they are used, each failing
	// with an error naming the image and the fault if they are wrong; the
	// rules serving does not rely on (every inode has an entry, link
	// counts match entries) not at all. The rest of the metadata is still
	// checked at open.
	EagerHeaders bool
	// LazyMetadataCheck checks the metadata as for serving (see
	// EagerHeaders) even when every section header is read at open, as
	// dwarfsck --no-check does.
	LazyMetadataCheck bool

	// MapMetadata maps the metadata of a local image read-only from the
	// file, when it is stored uncompressed, instead of copying it into
	// memory: its pages are then the page cache's, shared with other
	// readers of the file, and leave the process's resident set once
	// opening has checked them. The mapping is kept until the process
	// exits, also after Close, so it suits a process that serves one
	// image, like the FUSE driver. As with the reference tools, which map
	// the whole image, the file must not be changed or truncated while it
	// is open. Remote images, compressed metadata and readers other than
	// a file are read as usual.
	MapMetadata bool

	// Remote configures how Open fetches http://, https:// and s3://
	// images (see package source).
	Remote source.Options

	// Verify, when set, opens only a signed image (see package imagesig):
	// opening fails unless the signature (Verify.Signature, or the file
	// Verify.SignatureFile names) is a good signature by one of
	// Verify.AllowedSigners and the section headers match the digest it
	// signed. Every section is then checked against its signed BLAKE3
	// (or, for a version 1 digest, its header's SHA-512/256) when it is
	// read: each block whenever it is loaded into the block cache
	// (stored blocks, otherwise read straight from the file, go through
	// the cache too), the metadata at open. A mismatch fails that read
	// with an error naming the section; no byte that differs from what was
	// signed is returned. Every section header is read at open, except,
	// with lazy block headers (NoCheck, LazyBlockCheck, remote images)
	// and a signature file that carries the signed digest (as dwarfsck
	// --sign writes), the block headers: each is compared with the
	// digest when it is first read, and a changed one fails that block's
	// reads; the section index, read at open, must list the signed
	// offsets and lengths.
	Verify *Verify
}

// Verify is what Options.Verify checks an image against.
type Verify struct {
	// AllowedSigners checks the signature: imagesig.AllowedSigners, the
	// keys of an ssh-keygen allowed signers file (parsed by
	// imagesig.ParseAllowedSigners), or another SignatureVerifier.
	AllowedSigners SignatureVerifier
	// Signature is the contents of the signature file. When it is empty,
	// the signature is read from SignatureFile.
	Signature []byte
	// SignatureFile is where the signature is read from when Signature
	// is empty: a local path or an http://, https:// or s3:// URL,
	// fetched like the image (Options.Remote, and the image's connections
	// when it is at a URL too). Empty means IMAGE.sig beside the image
	// for Open (source.Sibling: for s3://BUCKET/KEY the object KEY.sig);
	// OpenReaderAt, which knows no file name, then fails. A signature
	// that cannot be read is an error naming where it was looked for: an
	// unsigned image does not open. The file is bounded by
	// AllowedSigners.MaxSignatureSize.
	SignatureFile string
	// Now is the time at which the signer must be valid (zero: the time
	// of opening).
	Now time.Time
}

// ErrUnsigned reports an image that has no signature or cannot be
// signed; package imagesig's errors of that kind wrap it too.
var ErrUnsigned = errors.New("not signed")

// A SignatureVerifier checks an image against its signature file for
// Options.Verify; imagesig.AllowedSigners is one. The interface keeps the
// signature code (x/crypto/ssh, which links x509, RSA and ECDSA) out of
// readers that never verify.
type SignatureVerifier interface {
	// MaxSignatureSize is the size of the largest signature file that can
	// belong to an image of the given number of sections; a signature
	// file is read no further.
	MaxSignatureSize(sections int) int64
	// ParseSignature decodes a signature file.
	ParseSignature(sigFile []byte) (Signature, error)
}

// A Signature is a decoded signature file, ready to check an image.
type Signature interface {
	// Verify checks that the signature is good and by an allowed signer
	// at now, and that the section headers of im read so far match what
	// was signed; the rest of im is left to be checked as it is read
	// (block.Image.ExpectHeaders, block.Image.ExpectSums). im is not
	// shared yet.
	Verify(im *block.Image, now time.Time) (*Signer, error)
}

// Signer says who signed a verified image.
type Signer struct {
	Principals    string // of the allowed signer, as written in the allowed signers file
	KeyType       string // such as ssh-ed25519
	Fingerprint   string // SHA256:... of the signing key
	DigestVersion int    // of the signed digest (package imagesig)
}

func (s *Signer) String() string {
	return fmt.Sprintf("good signature by %s with %s key %s", s.Principals, s.KeyType, s.Fingerprint)
}

// Image is an open DwarFS image. It is safe for concurrent use.
type Image struct {
	name      string
	file      io.Closer     // non-nil when Open opened the file or object itself
	src       source.Source // non-nil for images opened from a URL
	r         io.ReaderAt
	blk       *block.Image
	md        *metadata.Metadata
	fs        *metadata.FS
	cache     *block.Cache
	blocks    []block.Section
	blockSize uint32
	root      uint32

	// badBlocks holds the fast-check failures found at open; like the
	// reference, they only become errors when the block is read.
	badBlocks map[int]error
	warnings  []error

	// Schema/metadata sizes, kept for tools such as dwarfsck.
	metaSection   block.Section
	schemaSection block.Section
	metaSize      int64
	metaMapped    bool // the metadata is mapped from the file (MapMetadata)

	// need[n] is how far into block n the chunks reach.
	need []metadata.BlockNeed

	layouts *layoutCache // of files with many chunks

	workers int // blocks decoded at once; a sequential Read decodes this many ahead
	// rawBufs holds spare buffers for compressed payloads, one per
	// decode worker. Unlike a sync.Pool, which the collector empties,
	// it keeps a stream of block loads from allocating a new payload
	// buffer (megabytes of garbage) per block.
	rawBufs chan []byte

	// ahead is the local image file, for read-ahead hints (nil for a
	// remote image); advised[n/64] bit n%64 says block n's compressed
	// bytes were hinted already.
	ahead   *os.File
	advised []atomic.Uint64

	// signer is who signed the image, when Options.Verify checked it;
	// then stored blocks are read through the cache, to be checked.
	signer *Signer

	// pieces[n] is block n's piece layout (block.Pieces) once its index
	// was read; nil when the image's blocks are always decoded whole (a
	// verified image: only a whole payload can be checked against its
	// signed digest).
	pieces []atomic.Pointer[blockPieces]
}

// blockPieces is what is known of a block's pieces: p nil means it is
// decoded whole.
type blockPieces struct{ p *block.Pieces }

// Open opens the image file at path, or the remote image at an
// http://, https:// or s3:// URL or a docker:// reference; nil opts means
// the zero Options. Remote images need the package that reads their
// scheme imported (github.com/godwarfs/godwarfs/source/remote for all of
// them); without it Open fails with an error that names it. Close
// releases the file or the connection.
func Open(path string, opts *Options) (*Image, error) {
	if opts != nil && opts.Verify != nil && len(opts.Verify.Signature) == 0 && opts.Verify.SignatureFile == "" {
		o, v := *opts, *opts.Verify
		v.SignatureFile = source.Sibling(path, ".sig")
		o.Verify = &v
		opts = &o
	}
	if source.IsRemote(path) {
		return openRemote(path, opts)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	size := st.Size()
	if st.Mode()&os.ModeDevice != 0 {
		// A block device (an image written to a partition or loop device)
		// reports no size; its end does.
		if size, err = f.Seek(0, io.SeekEnd); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	im, err := OpenReaderAt(f, size, path, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	im.file = f
	return im, nil
}

// openRemote opens an image in object storage. Only the section index and
// the metadata are fetched here; blocks follow as they are read.
func openRemote(url string, opts *Options) (*Image, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	// Opened with NoCheck below, so block headers are read on first use
	// (a verified open compares them with the signed digest then).
	o.Remote.LazyBlockHeaders = !o.EagerHeaders
	src, err := source.Open(context.Background(), url, o.Remote)
	if err != nil {
		return nil, err
	}
	if off, ok := source.ImageOffset(src); ok && (o.ImageOffset < 0 || o.ImageOffset == 0 && !o.ExactOffset) {
		// Known from the section index: no prefix scan.
		o.ImageOffset, o.ExactOffset = off, true
	}
	// Checking every block at open would fetch the whole image; blocks
	// are still verified when read.
	o.NoCheck = true
	im, err := OpenReaderAt(src, src.Size(), src.Name(), &o)
	if err != nil {
		src.Close()
		return nil, err
	}
	im.file, im.src = src, src
	return im, nil
}

// readSignature returns the signature file v names, read with the
// connections of r when r is a remote source.
func readSignature(v *Verify, r io.ReaderAt, ro source.Options, sections int) (Signature, error) {
	b := v.Signature
	if len(b) == 0 {
		share, _ := r.(source.Source)
		var err error
		if b, err = source.ReadSmall(context.Background(), v.SignatureFile, v.AllowedSigners.MaxSignatureSize(sections), ro, share); err != nil {
			return nil, fmt.Errorf("signature: %w", err)
		}
	}
	f, err := v.AllowedSigners.ParseSignature(b)
	if err != nil {
		if v.SignatureFile != "" && len(v.Signature) == 0 {
			return nil, fmt.Errorf("signature %s: %w", source.Redact(v.SignatureFile), err)
		}
		return nil, fmt.Errorf("signature: %w", err)
	}
	return f, nil
}

// SourceStats returns the transfer counters of an image opened from a
// URL; ok is false for local images.
func (im *Image) SourceStats() (st source.Stats, ok bool) {
	if im.src == nil {
		return source.Stats{}, false
	}
	return im.src.Stats(), true
}

// OpenReaderAt opens an image stored in r, which holds size bytes: a file
// region, an in-memory copy or a remote object. name appears in error
// messages. nil opts means the zero Options. r must stay usable until
// Close, and must be safe for concurrent ReadAt calls, as io.ReaderAt
// requires; Close does not close it.
func OpenReaderAt(r io.ReaderAt, size int64, name string, opts *Options) (*Image, error) {
	o := withDefaults(opts)
	mode, err := checkModeOf(&o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	op := &opening{name: name, r: r, size: size, o: o, mode: mode}
	return op.finish(untrusted(op.stages))
}

// localFile returns the file r reads at the same offsets, or nil.
func localFile(r io.ReaderAt) *os.File {
	switch f := r.(type) {
	case *os.File:
		return f
	case *source.File:
		return f.File()
	}
	return nil
}

// Close releases the block cache and, if Open opened it, the image file.
// Files opened from the image must not be used afterwards.
func (im *Image) Close() error {
	if im.cache != nil {
		im.cache.Close()
	}
	if im.file != nil {
		return im.file.Close()
	}
	return nil
}

// Warnings returns the checksum failures found at open. Like the reference
// tools, a damaged data block only fails the reads that need it; damage
// elsewhere is informational.
func (im *Image) Warnings() []error { return append([]error(nil), im.warnings...) }

// Signer returns who signed the image when Options.Verify checked it at
// open, else nil.
func (im *Image) Signer() *Signer { return im.signer }

// Name is the name the image was opened with.
func (im *Image) Name() string { return im.name }

// Root is the inode number of the root directory. Inode numbers are those
// of the image, as Lookup, Stat.Ino and dwarfsck report them.
func (im *Image) Root() uint32 { return im.root }

// InodeInfo returns the attributes of inode ino.
func (im *Image) InodeInfo(ino uint32) (metadata.Inode, error) {
	in, err := im.fs.Inode(ino)
	if err != nil {
		return in, fmt.Errorf("%s: inode %d: %w", im.name, ino, err)
	}
	return in, nil
}

// loadBlock is the cache's loader: it decodes block n into a buffer from
// alloc, which the cache makes room for before decoding starts.
func (im *Image) loadBlock(ctx context.Context, n int, alloc block.AllocFunc) ([]byte, error) {
	if n < 0 || n >= len(im.blocks) {
		return nil, fmt.Errorf("%s: block %d out of range (%d blocks)", im.name, n, len(im.blocks))
	}
	if err := im.badBlocks[n]; err != nil {
		return nil, named(im.name, err)
	}
	s, err := im.block(int(n))
	if err != nil {
		return nil, err
	}
	var raw []byte
	select {
	case raw = <-im.rawBufs:
	default:
	}
	var out []byte
	out, raw, err = im.blk.ReadDecompressedAlloc(s, int64(im.blockSize), raw, alloc)
	// A payload much larger than a block is not one a well-formed image
	// has (compression expands incompressible data by a fraction of a
	// percent); its buffer is not worth keeping. Stored blocks use none.
	if raw != nil && int64(cap(raw)) <= 2*int64(im.blockSize) {
		select {
		case im.rawBufs <- raw:
		default:
		}
	}
	if err != nil {
		return nil, named(im.name, err)
	}
	if err := im.checkNeed(n, uint64(len(out))); err != nil {
		return nil, err
	}
	return out, nil
}

// block returns block n (in range) with its header read: blocks of an
// image opened with lazy headers are pending until first used.
func (im *Image) block(n int) (block.Section, error) {
	s := im.blocks[n]
	if !s.Pending() {
		return s, nil
	}
	s, err := im.blk.Header(s)
	if err != nil {
		return s, named(im.name, err)
	}
	return s, nil
}

// checkNeed checks the chunks of block n against its uncompressed size.
func (im *Image) checkNeed(n int, size uint64) error {
	if nd := im.need[n]; nd.Chunk >= 0 && nd.End > size {
		return fmt.Errorf("%s: metadata: check: chunks[%d] ends at %d, beyond block %d of %d bytes", im.name, nd.Chunk, nd.End, n, size)
	}
	return nil
}

// errBounds reports a chunk that points outside its block.
var errBounds = errors.New("chunk outside block")

// readChunk copies bytes [off, off+len(p)) of block n into p. cached is
// the block (or piece) an earlier call of the same read pinned (none at
// first); readChunk leaves the one it used pinned there for the next
// call, so a read spanning many chunks of one block asks the cache once.
// The caller releases it when the read is done. A wait for the block's
// decompression ends with ctx.
func (im *Image) readChunk(ctx context.Context, n uint32, off uint64, p []byte, cached *blockRef) error {
	if int64(n) >= int64(len(im.blocks)) {
		return fmt.Errorf("%s: block %d out of range (%d blocks)", im.name, n, len(im.blocks))
	}
	s, err := im.block(int(n))
	if err != nil {
		return err
	}
	if s.Compression == block.CompNone && im.signer == nil {
		if err := im.badBlocks[int(n)]; err != nil {
			return named(im.name, err)
		}
		if off+uint64(len(p)) > uint64(s.Length) {
			return fmt.Errorf("%s: block %d: %w", im.name, n, errBounds)
		}
		// Uncompressed blocks bypass the cache: one pread is cheaper.
		// Section offsets are relative to the image start (after any prefix).
		_, err = im.r.ReadAt(p, im.blk.Offset()+s.DataOffset+int64(off))
		if err != nil {
			return fmt.Errorf("%s: block %d: %w", im.name, n, err)
		}
		return nil
	}
	pc, err := im.piecesOf(int(n))
	if err != nil {
		return err
	}
	if pc != nil {
		return im.readPieces(ctx, int(n), pc, off, p, cached)
	}
	if !cached.Held() || cached.Block() != int(n) || cached.Piece() >= 0 {
		cached.release()
		if err := im.cache.Get(ctx, int(n), &cached.Pin); err != nil {
			return err
		}
	}
	data := cached.Bytes()
	if off+uint64(len(p)) > uint64(len(data)) {
		return fmt.Errorf("%s: block %d: %w", im.name, n, errBounds)
	}
	copy(p, data[off:])
	return nil
}

// readPieces is readChunk for block n, which decodes in pieces pc: it
// copies from the pieces holding the bytes, each decoded on its own.
func (im *Image) readPieces(ctx context.Context, n int, pc *block.Pieces, off uint64, p []byte, cached *blockRef) error {
	if off > uint64(pc.Size()) || uint64(len(p)) > uint64(pc.Size())-off {
		return fmt.Errorf("%s: block %d: %w", im.name, n, errBounds)
	}
	if len(p) == 0 {
		return nil
	}
	pos := int64(off)
	for i := pc.Find(pos); len(p) > 0; i++ {
		if !cached.Held() || cached.Block() != n || cached.Piece() != i {
			cached.release()
			if err := im.cache.GetPiece(ctx, n, i, &cached.Pin); err != nil {
				return err
			}
		}
		start, _ := pc.Range(i)
		k := copy(p, cached.Bytes()[pos-start:])
		p = p[k:]
		pos += int64(k)
	}
	return nil
}

// piecesOf returns the pieces block n (compressed, in range) decodes in,
// or nil when it is decoded whole. The block's index is read on first
// use; a damaged index is an error (not remembered: a failed read may be
// retried).
func (im *Image) piecesOf(n int) (*block.Pieces, error) {
	if im.pieces == nil {
		return nil, nil
	}
	if bp := im.pieces[n].Load(); bp != nil {
		return bp.p, nil
	}
	if err := im.badBlocks[n]; err != nil {
		return nil, named(im.name, err)
	}
	s, err := im.block(n)
	if err != nil {
		return nil, err
	}
	p, err := im.blk.Pieces(s, int64(im.blockSize))
	if err != nil {
		return nil, named(im.name, err)
	}
	if p != nil {
		if err := im.checkNeed(n, uint64(p.Size())); err != nil {
			return nil, err
		}
	}
	im.pieces[n].Store(&blockPieces{p})
	return p, nil
}

// loadPiece is the cache's loader of pieces: it decodes piece i of block
// n into a buffer from alloc.
func (im *Image) loadPiece(ctx context.Context, n, i int, alloc block.AllocFunc) ([]byte, error) {
	if n < 0 || n >= len(im.blocks) {
		return nil, fmt.Errorf("%s: block %d out of range (%d blocks)", im.name, n, len(im.blocks))
	}
	pc, err := im.piecesOf(n)
	if err != nil {
		return nil, err
	}
	if pc == nil {
		return nil, fmt.Errorf("%s: block %d is not read in pieces", im.name, n)
	}
	s, err := im.block(n)
	if err != nil {
		return nil, err
	}
	var raw []byte
	select {
	case raw = <-im.rawBufs:
	default:
	}
	out, raw, err := im.blk.ReadPiece(s, pc, i, raw, alloc)
	if raw != nil && int64(cap(raw)) <= 2*int64(im.blockSize) {
		select {
		case im.rawBufs <- raw:
		default:
		}
	}
	if err != nil {
		return nil, named(im.name, err)
	}
	return out, nil
}

// blockRef is a block pinned in the cache while one read copies from it.
type blockRef struct{ block.Pin }

// release unpins the block, if any; the read must not touch it afterwards.
func (r *blockRef) release() {
	if r.Held() {
		r.Release()
	}
}

// prefetchBlock starts decompressing block n in the background unless it
// is stored uncompressed (those are read directly, never cached).
func (im *Image) prefetchBlock(n uint32) {
	// A pending block may be stored; the cache loads those correctly too.
	if int64(n) >= int64(len(im.blocks)) || (!im.blocks[n].Pending() && im.blocks[n].Compression == block.CompNone && im.signer == nil) {
		return
	}
	im.adviseBlock(n)
	im.cache.Prefetch(int(n))
}

// prefetchRange starts decompressing the bytes [off, off+size) of block n
// in the background: the pieces holding them if it decodes in pieces,
// else the whole block, and then reports true.
func (im *Image) prefetchRange(n uint32, off, size uint64) (whole bool) {
	if int64(n) >= int64(len(im.blocks)) || size == 0 {
		return false
	}
	if im.pieces != nil && (im.blocks[n].Pending() || im.blocks[n].Compression != block.CompNone) {
		pc, err := im.piecesOf(int(n))
		if err != nil {
			return false // the read reports it
		}
		if pc != nil {
			if off >= uint64(pc.Size()) {
				return false
			}
			end := min(off+size, uint64(pc.Size()))
			for i := pc.Find(int64(off)); i < pc.Len(); i++ {
				if start, _ := pc.Range(i); uint64(start) >= end {
					break
				}
				im.cache.PrefetchPiece(int(n), i)
			}
			return false
		}
	}
	im.prefetchBlock(n)
	return true
}

// spentRange is Cache.Spent for the bytes [off, off+size) of block n: the
// pieces that end within them if it decodes in pieces, else the block.
func (im *Image) spentRange(n uint32, off, size uint64) {
	if bp := im.pieceState(n); bp != nil && bp.p != nil {
		pc := bp.p
		if off >= uint64(pc.Size()) {
			return
		}
		end := min(off+size, uint64(pc.Size()))
		for i := pc.Find(int64(off)); i < pc.Len(); i++ {
			_, pend := pc.Range(i)
			if uint64(pend) > end {
				break
			}
			im.cache.SpentPiece(int(n), i)
		}
		return
	}
	im.cache.Spent(int(n))
}

// pieceState is what is known of block n's pieces, nil if nothing yet.
func (im *Image) pieceState(n uint32) *blockPieces {
	if im.pieces == nil || int64(n) >= int64(len(im.pieces)) {
		return nil
	}
	return im.pieces[n].Load()
}

// adviseBlock has the kernel start reading the compressed bytes of block
// n (in range) of a local image, once. A decode worker's read then finds
// them in the page cache: with only the kernel's own read-ahead, the
// disk idles whenever all workers are decoding, and a cold sequential
// read takes the disk's time plus much of the decoding's.
func (im *Image) adviseBlock(n uint32) {
	if im.ahead == nil {
		return
	}
	w, bit := &im.advised[n/64], uint64(1)<<(n%64)
	if w.Or(bit)&bit != 0 {
		return
	}
	// Offsets and length are known also before the header is read.
	s := im.blocks[n]
	adviseWillNeed(im.ahead, im.blk.Offset()+s.HeaderOffset, s.End()-s.HeaderOffset)
}

// named prefixes err with the image name unless it already starts with it
// (errors from the block package carry the name themselves).
func named(name string, err error) error {
	if strings.HasPrefix(err.Error(), name+":") {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// The project's tools (dwarfsck, the FUSE driver) need the section
// container, block cache and decoded metadata, which are no part of the
// public API; they reach them through package imageaccess.
func init() {
	imageaccess.Register(func(v any) *imageaccess.Parts {
		im := v.(*Image)
		return &imageaccess.Parts{
			Blocks: im.blk, Cache: im.cache, Metadata: im.md, FS: im.fs,
			MetadataSection: im.metaSection, MetadataSize: im.metaSize, MetadataMapped: im.metaMapped,
		}
	})
}

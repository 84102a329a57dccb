package writer

import (
	"context"
	"fmt"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/metadata"
)

// rechunker lays the contents of every chunk_table entry out into new
// blocks of a different size (--change-block-size). It is simple
// concatenation: no segmenter, so data that the input shared between files
// through overlapping chunks is stored once per chunk_table entry.
// Per-category (and per category-metadata) streams are kept apart, so
// block_categories and block_category_metadata stay valid.
type rechunker struct {
	r     *rewriter
	bs    uint32
	cache *decodedBlocks

	// open output block per (category, category metadata) stream
	open     map[streamKey]*openBlock
	nextProv uint32
	final    []uint32 // provisional id -> final block number
	nFlushed uint32
	cats     []uint32 // final block number -> category
	catMeta  []metadata.KV32

	chunks []metadata.Chunk
	prov   []bool // chunks[i].Block is a provisional id (false: hole)
	holes  []holeChunk
	large  []uint64 // large_hole_size of the output
	table  []uint32
}

// holeChunk is a hole at chunks[idx]; holes are encoded once the largest
// output data chunk is known.
type holeChunk struct {
	idx    int
	length uint64
}

// streamKey identifies an output stream: category (-1: none) and
// category metadata index (-1: none).
type streamKey struct{ cat, meta int64 }

type openBlock struct {
	prov  uint32
	key   streamKey
	limit uint32 // the block size, cut to whole frames of the stream's compressor
	data  []byte
}

// decodedBlocks reads an input image's blocks, decoded, for the passes
// that read chunks in the files' order (rechunking, hashing base files):
// consecutive chunks mostly lie in one block or a few recent ones, so a
// block.Cache of a few blocks saves decoding them again. Its caller is
// one goroutine.
type decodedBlocks struct {
	im    *block.Image
	limit int64 // largest decoded block
	cache *block.Cache
	pin   block.Pin // the block get returned last
	raw   []byte    // the loader's buffer for compressed payloads
}

// newDecodedBlocks returns a reader of im's blocks that keeps n of them
// (blocks decode to limit bytes at most).
func newDecodedBlocks(im *block.Image, limit int64, n int) *decodedBlocks {
	d := &decodedBlocks{im: im, limit: limit}
	// One worker: the one caller waits for each load anyway.
	d.cache = block.NewCache(d.load, block.CacheOptions{Capacity: int64(n) * limit, Workers: 1})
	return d
}

// get returns the decoded block n, valid until the next get or close.
func (d *decodedBlocks) get(n uint32) ([]byte, error) {
	if d.pin.Held() {
		if d.pin.Block() == int(n) {
			return d.pin.Bytes(), nil
		}
		d.pin.Release()
	}
	if int64(n) >= int64(d.im.NumBlocks()) {
		return nil, fmt.Errorf("chunk refers to block %d, image has %d: %w", n, d.im.NumBlocks(), block.ErrCorrupt)
	}
	if err := d.cache.Get(context.Background(), int(n), &d.pin); err != nil {
		return nil, err
	}
	return d.pin.Bytes(), nil
}

// load is the cache's loader; loads run one at a time (one worker).
func (d *decodedBlocks) load(_ context.Context, n int, alloc block.AllocFunc) ([]byte, error) {
	s, ok := d.im.Block(n)
	if !ok {
		return nil, fmt.Errorf("chunk refers to block %d, image has %d: %w", n, d.im.NumBlocks(), block.ErrCorrupt)
	}
	var out []byte
	var err error
	out, d.raw, err = d.im.ReadDecompressedAlloc(s, d.limit, d.raw, alloc)
	return out, err
}

// close releases the blocks (mapped memory, returned to the system now).
func (d *decodedBlocks) close() {
	if d.pin.Held() {
		d.pin.Release()
	}
	d.cache.Close()
}

// produceRechunked emits the new blocks (uncompressed) in order through
// emit and records the new chunk list.
func (rc *rechunker) produce(ctx context.Context, emit func(data []byte) error) error {
	defer rc.cache.close()
	fsys, err := metadata.NewFS(rc.r.md)
	if err != nil {
		return err
	}
	// The tables are read whole: every index must be in range, whether
	// or not the input was checked.
	if err := fsys.CheckTables(); err != nil {
		return err
	}
	norm := fsys.Metadata()
	md := rc.r.md
	rc.open = map[streamKey]*openBlock{}
	var order []streamKey // streams in order of first use, for the final flush
	blockMeta := map[uint32]int64{}
	if md.HasBlockCategoryMetadata {
		for _, kv := range md.BlockCategoryMetadata {
			blockMeta[kv.Key] = int64(kv.Value)
		}
	}
	flush := func(ob *openBlock) error {
		if len(ob.data) == 0 {
			return nil
		}
		for uint32(len(rc.final)) <= ob.prov {
			rc.final = append(rc.final, 0)
		}
		rc.final[ob.prov] = rc.nFlushed
		rc.nFlushed++
		if ob.key.meta >= 0 {
			rc.catMeta = append(rc.catMeta, metadata.KV32{Key: rc.nFlushed - 1, Value: uint32(ob.key.meta)})
		}
		rc.cats = append(rc.cats, uint32(max(ob.key.cat, 0)))
		d := ob.data
		ob.data = nil
		return emit(d)
	}
	holeBlk := uint32(0)
	holes := md.HoleBlockIndex != nil
	if holes {
		holeBlk = *md.HoleBlockIndex
	}
	ct := norm.ChunkTable
	rc.table = make([]uint32, 0, len(ct))
	for i := 0; i+1 < len(ct); i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		rc.table = append(rc.table, uint32(len(rc.chunks)))
		for _, c := range md.Chunks[ct[i]:ct[i+1]] {
			if holes && c.Block == holeBlk {
				n, err := md.HoleLength(c)
				if err != nil {
					return fmt.Errorf("%w: %w", err, block.ErrCorrupt)
				}
				rc.holes = append(rc.holes, holeChunk{len(rc.chunks), n})
				rc.chunks = append(rc.chunks, c)
				rc.prov = append(rc.prov, false)
				continue
			}
			src, err := rc.cache.get(c.Block)
			if err != nil {
				return err
			}
			if uint64(c.Offset)+uint64(c.Size) > uint64(len(src)) {
				return fmt.Errorf("chunk %d+%d outside block %d of %d bytes: %w", c.Offset, c.Size, c.Block, len(src), block.ErrCorrupt)
			}
			data := src[c.Offset : c.Offset+c.Size]
			key := streamKey{-1, -1}
			if md.HasBlockCategories && int(c.Block) < len(md.BlockCategories) {
				key.cat = int64(md.BlockCategories[c.Block])
			}
			if m, ok := blockMeta[c.Block]; ok {
				key.meta = m
			}
			ob := rc.open[key]
			if ob == nil {
				ob = &openBlock{prov: rc.nextProv, key: key, limit: rc.bs}
				if g := uint32(rc.r.granularity(key)); g > 1 && rc.bs >= g {
					ob.limit -= rc.bs % g
				}
				rc.nextProv++
				rc.open[key] = ob
				order = append(order, key)
			}
			for len(data) > 0 {
				if ob.data == nil {
					ob.data = make([]byte, 0, rc.bs)
				}
				n := min(len(data), int(ob.limit)-len(ob.data))
				off := uint32(len(ob.data))
				ob.data = append(ob.data, data[:n]...)
				data = data[n:]
				if k := len(rc.chunks) - 1; k >= int(rc.table[i]) && rc.prov[k] && rc.chunks[k].Block == ob.prov &&
					rc.chunks[k].Offset+rc.chunks[k].Size == off {
					rc.chunks[k].Size += uint32(n) // contiguous with the previous chunk
				} else {
					rc.chunks = append(rc.chunks, metadata.Chunk{Block: ob.prov, Offset: off, Size: uint32(n)})
					rc.prov = append(rc.prov, true)
				}
				if len(ob.data) == int(ob.limit) {
					if err := flush(ob); err != nil {
						return err
					}
					ob.prov = rc.nextProv
					rc.nextProv++
				}
			}
		}
	}
	rc.table = append(rc.table, uint32(len(rc.chunks)))
	for _, k := range order {
		if err := flush(rc.open[k]); err != nil {
			return err
		}
	}
	var maxData uint32
	for i := range rc.chunks {
		if rc.prov[i] {
			rc.chunks[i].Block = rc.final[rc.chunks[i].Block]
			maxData = max(maxData, rc.chunks[i].Size)
		}
	}
	if holes {
		enc := metadata.NewHoleEncoder(rc.nFlushed, rc.bs, maxData)
		for _, h := range rc.holes {
			rc.chunks[h.idx] = enc.Chunk(h.length)
		}
		rc.large = enc.Sizes
	}
	return nil
}

// apply returns a copy of the input metadata with the new chunks.
func (rc *rechunker) apply(orig *metadata.Metadata) (*metadata.Metadata, error) {
	md := *orig
	md.Chunks = rc.chunks
	md.ChunkTable = rc.table
	if orig.Options != nil {
		o := *orig.Options
		md.Options = &o
		if o.PackedChunkTable {
			md.ChunkTable = metadata.PackChunkTable(rc.table)
		}
	}
	md.BlockSize = rc.bs
	if md.HoleBlockIndex != nil {
		h := rc.nFlushed
		md.HoleBlockIndex = &h
		md.LargeHoleSize, md.HasLargeHoleSize = rc.large, true
	}
	if md.HasBlockCategories {
		md.BlockCategories = rc.cats
	}
	if md.HasBlockCategoryMetadata {
		md.BlockCategoryMetadata = rc.catMeta
	}
	if orig.RegFileSizeCache != nil {
		// The cache selects files by chunk count, which changed.
		sc, err := md.SizeCache(rc.table, uint32(orig.RegFileSizeCache.MinChunkCount))
		if err != nil {
			return nil, err
		}
		md.RegFileSizeCache = sc
	}
	return &md, nil
}

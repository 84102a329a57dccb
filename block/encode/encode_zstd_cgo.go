//go:build cgo && !purego

package encode

/*
#include <stddef.h>

// libzstd is compiled from the sources that github.com/DataDog/zstd ships
// (with ZSTD_MULTITHREAD). That package's Go API sets only a level, so the
// few calls of zstd's API needed to also enable long-distance matching
// (the "long" option) and to compress one input on several threads are
// declared here, with the target length (the "tlen" option) and the block
// pre-splitter (see alternatives); they resolve against its objects at
// link time.
typedef struct ZSTD_CCtx_s ZSTD_CCtx;
ZSTD_CCtx* ZSTD_createCCtx(void);
size_t ZSTD_freeCCtx(ZSTD_CCtx* cctx);
size_t ZSTD_CCtx_setParameter(ZSTD_CCtx* cctx, int param, int value);
size_t ZSTD_compress2(ZSTD_CCtx* cctx, void* dst, size_t cap, const void* src, size_t n);
size_t ZSTD_compressBound(size_t n);
unsigned ZSTD_isError(size_t code);
int ZSTD_getErrorCode(size_t code);
const char* ZSTD_getErrorName(size_t code);
const char* ZSTD_versionString(void);
int ZSTD_minCLevel(void);

// The parameters a level picks for an input size: ZSTD_getCParams and the
// layout of ZSTD_compressionParameters (zstd.h, static linking section).
typedef struct {
	unsigned windowLog, chainLog, hashLog, searchLog, minMatch, targetLength;
	int strategy;
} gdCParams;
gdCParams ZSTD_getCParams(int level, unsigned long long srcSizeHint, size_t dictSize);

// Parameter ids and error codes of zstd.h / zstd_errors.h.
enum {
	gdCompressionLevel = 100,
	gdWindowLog = 101,
	gdHashLog = 102,
	gdChainLog = 103,
	gdTargetLength = 106,
	gdBlockSplitterLevel = 1017, // ZSTD_c_blockSplitterLevel (experimental)
	gdEnableLDM = 160,
	gdContentSizeFlag = 200,
	gdChecksumFlag = 201,
	gdNbWorkers = 400,
	gdJobSize = 401,
	gdOverlapLog = 402,
	gdErrMemory = 64,
	gdErrDstTooSmall = 70,
};

// gdSplit is how libzstd's multi-threaded mode cuts one input into jobs;
// jobSize 0: in one piece, on the calling thread.
typedef struct {
	int workers, jobSize, overlapLog, hashLog, chainLog;
} gdSplit;

// libzstd's allocations go through hugealloc.c (see there why).
typedef void* (*gdAllocFn)(void* opaque, size_t size);
typedef void (*gdFreeFn)(void* opaque, void* address);
typedef struct { gdAllocFn alloc; gdFreeFn free; void* opaque; } gdCustomMem; // ZSTD_customMem
ZSTD_CCtx* ZSTD_createCCtx_advanced(gdCustomMem customMem);
size_t ZSTD_CCtx_reset(ZSTD_CCtx* cctx, int reset);
enum { gdResetSessionAndParameters = 3 };

#include "hugealloc.h"

static void* gd_alloc(void* opaque, size_t n) { return gd_huge_alloc(n); }
static void gd_free(void* opaque, void* q) { gd_huge_free(q); }

static ZSTD_CCtx* gd_zstd_new(void) {
	gdCustomMem m = {gd_alloc, gd_free, NULL};
	return ZSTD_createCCtx_advanced(m);
}

// gd_zstd_compress writes one frame, with the content size in its header
// (the format requires it) and no checksum (the section hash covers it).
// With keep NULL the context is made for this call and freed after it, as
// the reference does; otherwise keep is reset and used, and stays.
// With a split, the frame depends on the split alone, not on the number
// of workers that compress its jobs.
static size_t gd_zstd_compress(ZSTD_CCtx* keep, void* dst, size_t cap, const void* src, size_t n, int level, int targetLength, int presplit, int ldmWindowLog, gdSplit sp) {
	ZSTD_CCtx* c = keep;
	size_t r = 0;
	if (c) {
		r = ZSTD_CCtx_reset(c, gdResetSessionAndParameters);
	} else {
		c = gd_zstd_new();
		if (!c) return (size_t)-gdErrMemory;
	}
	if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, gdCompressionLevel, level);
	if (!ZSTD_isError(r) && targetLength > 0) r = ZSTD_CCtx_setParameter(c, gdTargetLength, targetLength);
	if (!ZSTD_isError(r) && presplit > 0) r = ZSTD_CCtx_setParameter(c, gdBlockSplitterLevel, presplit);
	if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, gdContentSizeFlag, 1);
	if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, gdChecksumFlag, 0);
	if (!ZSTD_isError(r) && ldmWindowLog > 0) {
		r = ZSTD_CCtx_setParameter(c, gdEnableLDM, 1);
		if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, gdWindowLog, ldmWindowLog);
	}
	if (!ZSTD_isError(r) && sp.jobSize > 0) {
		r = ZSTD_CCtx_setParameter(c, gdNbWorkers, sp.workers);
		if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, gdJobSize, sp.jobSize);
		if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, gdOverlapLog, sp.overlapLog);
		if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, gdHashLog, sp.hashLog);
		if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, gdChainLog, sp.chainLog);
	}
	if (!ZSTD_isError(r)) r = ZSTD_compress2(c, dst, cap, src, n);
	if (!keep) ZSTD_freeCCtx(c);
	return r;
}
*/
import "C"

import (
	"fmt"
	"math/bits"
	"slices"
	"unsafe"

	// The libzstd C sources.
	_ "github.com/DataDog/zstd"

	"github.com/godwarfs/godwarfs/block"
)

const nativeZstd = true

func zstdEncoderName() string {
	return "libzstd " + C.GoString(C.ZSTD_versionString()) + ", cgo"
}

func zstdLevelRange() (int, int) { return int(C.ZSTD_minCLevel()), 22 }

type cZstdCompressor struct {
	level    int
	tlen     int // libzstd's targetLength; 0: the level's own
	presplit int // libzstd's block pre-splitter: 0 the strategy's, 1 off (see alternatives)
	long     bool
	threads  int  // at most this many threads per input; 0 or 1: one
	cut      bool // cut large inputs into jobs (see Split)
	ws       *Workspace
}

// zstdWorkspace is a context kept for inputs compressed in one piece; a
// cut input gets a context of its own, whose job contexts go with it.
type zstdWorkspace struct {
	cctx *C.ZSTD_CCtx
}

func (w *zstdWorkspace) close() {
	if w.cctx != nil {
		C.ZSTD_freeCCtx(w.cctx)
		w.cctx = nil
	}
}

func (z *cZstdCompressor) withWorkspace(w *Workspace) Compressor {
	c := *z
	c.ws = w
	return &c
}

func newNativeZstd(so *specOptions) (Compressor, error) {
	lo, hi := zstdLevelRange()
	lvl, err := so.int("level", hi, lo, hi)
	if err != nil {
		return nil, err
	}
	tlen, err := so.int("tlen", 0, 0, zstdMaxTargetLength)
	if err != nil {
		return nil, err
	}
	return &cZstdCompressor{level: lvl, tlen: tlen, long: so.flag("long")}, nil
}

func (z *cZstdCompressor) Compression() block.Compression { return block.CompZSTD }

// The split of one input into jobs that libzstd compresses in parallel.
// It depends on the level and the input's size only, never on the number
// of threads, so that an image does not depend on -N.
const (
	// zstdSplitLevel: from here on (the "ultra" levels, whose window
	// usually spans a whole block) a large input is split. Below, a block
	// takes a fraction of the time and stays one job as before.
	zstdSplitLevel = 20
	// zstdSplitMin: smaller inputs are one job. A cut costs a little
	// ratio (the second job starts with fresh statistics and sees only
	// part of the first as history), most on small inputs, which take
	// little time as one job anyway.
	zstdSplitMin = 4 << 20
	// zstdJobs is how many jobs a large input is cut into: as many as
	// the default number of workers on the machines this is tuned for.
	// More jobs would lose more ratio at each cut. split assumes 2.
	zstdJobs = 2
	// zstdSplitMax: libzstd's largest job is 1 GiB.
	zstdSplitMax = zstdJobs << 30
)

// split returns how an input of n bytes is compressed: in one piece
// (jobSize 0) or as two jobs. The second job reloads the end of the first
// as history (the overlap), whose size must be a power of two no larger
// than a job, so:
//   - when the largest such power covers at least 7/8 of half the input,
//     the first job is 55% of the input and that is the overlap;
//   - otherwise the first job is the next power of two, all of it history
//     for the second, which is smaller to make up for the reloading.
//
// Either way the second job sees all or nearly all of the first, which
// loses less ratio than a cut in half with a partial overlap. A job's
// match tables need only reach across what it sees, history and job, and
// not across the whole input: sized for 7/8 of that, two jobs in flight
// take about as much memory as one context for the whole input, and less
// for large inputs.
func (z *cZstdCompressor) split(n int) C.gdSplit {
	if !z.cut || z.long || z.level < zstdSplitLevel || n < zstdSplitMin || n > zstdSplitMax {
		return C.gdSplit{}
	}
	cp := C.ZSTD_getCParams(C.int(z.level), C.ulonglong(n), 0)
	half := (n + 1) / 2
	overlapBits := bits.Len(uint(half)) - 1
	// Reloading the history costs the second job most of what
	// compressing it would, so the first job takes a little more than
	// half.
	job := max(n/20*11, 1<<overlapBits)
	if 1<<overlapBits < half/8*7 {
		overlapBits++
		job = 1 << overlapBits
	}
	seen := 1<<overlapBits + (n - job) // history and second job
	chainLog := min(int(cp.chainLog), bits.Len(uint(seen/8*7-1))+1)
	return C.gdSplit{
		workers:    C.int(max(z.threads, 1)),
		jobSize:    C.int(job),
		overlapLog: C.int(min(max(9-(int(cp.windowLog)-overlapBits), 2), 9)),
		chainLog:   C.int(chainLog),
		hashLog:    C.int(min(int(cp.hashLog), chainLog-1)),
	}
}

func (z *cZstdCompressor) maxThreads(n int) int {
	if z.split(n).jobSize == 0 {
		return 1
	}
	return zstdJobs
}

func (z *cZstdCompressor) withThreads(t int) Compressor {
	c := *z
	c.threads = t
	return &c
}

// zstdBlockMax is the most a zstd block holds; libzstd's pre-splitter
// cuts only inputs larger than that.
const zstdBlockMax = 128 << 10

// alternatives offers libzstd without its block pre-splitter. Since
// libzstd 1.5.7, before searching a 128 KiB block for matches, it may cut
// it where the byte statistics seem to change, so that each part gets
// entropy tables of its own. On large metadata, tables of fixed-size
// rows, that guess sometimes costs far more than it saves, depending on
// where the rows happen to fall; on blocks of file data the two settings
// stay close either way, which is not worth compressing every block twice.
func (z *cZstdCompressor) alternatives(n int) []Compressor {
	if z.presplit != 0 || n <= zstdBlockMax {
		return nil
	}
	c := *z
	c.presplit = 1
	return []Compressor{&c}
}

func (z *cZstdCompressor) withSplit() Compressor {
	c := *z
	c.cut = true
	return &c
}

func (z *cZstdCompressor) Compress(src []byte) ([]byte, error) {
	return z.compress(nil, src, int(C.ZSTD_compressBound(C.size_t(len(src)))))
}

// CompressAppend appends the frame to dst, or fails with errNoGain when it
// would not be smaller than src; the encoder then stops early and needs no
// room beyond that.
func (z *cZstdCompressor) CompressAppend(dst, src []byte) ([]byte, error) {
	if len(src) <= 1 {
		return nil, errNoGain
	}
	return z.compress(dst, src, len(src)-1)
}

func (z *cZstdCompressor) compress(dst, src []byte, room int) ([]byte, error) {
	// With long-distance matching the reference sets the window to the
	// whole input, which also makes the frame single-segment.
	wlog := 0
	if z.long {
		wlog = min(max(bits.Len(uint(max(len(src), 1)-1)), 10), 31)
	}
	out := newScratch(max(room, 1))
	defer out.release()
	var in unsafe.Pointer
	if len(src) > 0 {
		in = unsafe.Pointer(&src[0])
	}
	sp := z.split(len(src))
	var keep *C.ZSTD_CCtx
	if z.ws != nil && sp.jobSize == 0 {
		if z.ws.zstd.cctx == nil {
			z.ws.zstd.cctx = C.gd_zstd_new() // NULL: a context per call
		}
		keep = z.ws.zstd.cctx
	}
	r := C.gd_zstd_compress(keep, unsafe.Pointer(&out.b[0]), C.size_t(room), in, C.size_t(len(src)), C.int(z.level), C.int(z.tlen), C.int(z.presplit), C.int(wlog), sp)
	if C.ZSTD_isError(r) != 0 {
		if C.ZSTD_getErrorCode(r) == C.gdErrDstTooSmall && room < len(src) {
			return nil, errNoGain
		}
		return nil, fmt.Errorf("libzstd: %s", C.GoString(C.ZSTD_getErrorName(r)))
	}
	return append(slices.Grow(dst, int(r)), out.b[:r]...), nil
}

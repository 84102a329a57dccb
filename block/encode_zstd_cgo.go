//go:build cgo && !purego

package block

/*
#include <stddef.h>

// libzstd is compiled from the sources that github.com/DataDog/zstd ships.
// That package's Go API sets only a level, so the few calls of zstd's
// stable API needed to also enable long-distance matching (the "long"
// option) are declared here; they resolve against its objects at link
// time.
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

// Parameter ids and error codes of zstd.h / zstd_errors.h (stable API).
enum {
	gdCompressionLevel = 100,
	gdWindowLog = 101,
	gdEnableLDM = 160,
	gdContentSizeFlag = 200,
	gdChecksumFlag = 201,
	gdErrMemory = 64,
	gdErrDstTooSmall = 70,
};

// gd_zstd_compress writes one frame, with the content size in its header
// (the format requires it) and no checksum (the section hash covers it).
// A context per call, as the reference does: its match tables at level 22
// are hundreds of MiB and are freed as soon as the block is done.
static size_t gd_zstd_compress(void* dst, size_t cap, const void* src, size_t n, int level, int ldmWindowLog) {
	ZSTD_CCtx* c = ZSTD_createCCtx();
	if (!c) return (size_t)-gdErrMemory;
	size_t r = ZSTD_CCtx_setParameter(c, gdCompressionLevel, level);
	if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, gdContentSizeFlag, 1);
	if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, gdChecksumFlag, 0);
	if (!ZSTD_isError(r) && ldmWindowLog > 0) {
		r = ZSTD_CCtx_setParameter(c, gdEnableLDM, 1);
		if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, gdWindowLog, ldmWindowLog);
	}
	if (!ZSTD_isError(r)) r = ZSTD_compress2(c, dst, cap, src, n);
	ZSTD_freeCCtx(c);
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
)

const nativeZstd = true

func zstdEncoderName() string {
	return "libzstd " + C.GoString(C.ZSTD_versionString()) + ", cgo"
}

func zstdLevelRange() (int, int) { return int(C.ZSTD_minCLevel()), 22 }

type cZstdCompressor struct {
	level int
	long  bool
}

func newNativeZstd(so *specOptions) (Compressor, error) {
	lo, hi := zstdLevelRange()
	lvl, err := so.int("level", hi, lo, hi)
	if err != nil {
		return nil, err
	}
	return &cZstdCompressor{level: lvl, long: so.flag("long")}, nil
}

func (z *cZstdCompressor) Compression() Compression { return CompZSTD }

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
	r := C.gd_zstd_compress(unsafe.Pointer(&out.b[0]), C.size_t(room), in, C.size_t(len(src)), C.int(z.level), C.int(wlog))
	if C.ZSTD_isError(r) != 0 {
		if C.ZSTD_getErrorCode(r) == C.gdErrDstTooSmall && room < len(src) {
			return nil, errNoGain
		}
		return nil, fmt.Errorf("libzstd: %s", C.GoString(C.ZSTD_getErrorName(r)))
	}
	return append(slices.Grow(dst, int(r)), out.b[:r]...), nil
}

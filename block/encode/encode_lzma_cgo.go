//go:build cgo && liblzma && !purego

package encode

/*
// liblzma comes from the system (Debian: liblzma-dev); there is no Go
// module that builds it from source.
#cgo LDFLAGS: -llzma
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <lzma.h>
#include "hugealloc.h"

// liblzma's allocations go through hugealloc.c (see there why).
static void* gd_lzma_alloc(void* opaque, size_t nmemb, size_t size) {
	if (size && nmemb > (size_t)-1 / size) return NULL;
	return gd_huge_alloc(nmemb * size);
}
static void gd_lzma_dealloc(void* opaque, void* p) { gd_huge_free(p); }
static const lzma_allocator gd_lzma_allocator = {gd_lzma_alloc, gd_lzma_dealloc, NULL};

// gd_lzma_encode writes one .xz stream (CRC64 check) the way the
// reference mkdwarfs does: preset, then the explicit options over it, and
// a BCJ filter before LZMA2 unless bcj is LZMA_VLI_UNKNOWN; with chunk > 0
// the stream is cut into xz blocks of chunk bytes (LZMA_FULL_FLUSH ends
// one and starts the next), which its index lists. dict,
// mode, mf, nice, depth are 0 (or -1 for mode/mf/pb) when not set;
// nice_min raises the preset's nice length, at the preset's depth, when
// nice is not set.
// With keep NULL the encoder is made for this call and freed after it;
// otherwise keep (from gd_lzma_stream) is set up again, which reuses its
// match finder's tables when their sizes are the same, and stays.
// It returns LZMA_OK with *out_pos set, LZMA_BUF_ERROR when the output did
// not fit in out_size, or another lzma_ret on failure.
static int gd_lzma_encode(lzma_stream* keep, const uint8_t* in, size_t in_size, uint8_t* out, size_t out_size, size_t* out_pos,
		uint32_t preset, uint32_t dict, int mode, int mf, uint32_t nice, uint32_t nice_min, uint32_t depth, int pb, uint64_t bcj,
		size_t chunk) {
	lzma_options_lzma opt;
	if (lzma_lzma_preset(&opt, preset)) return LZMA_OPTIONS_ERROR;
	if (dict) opt.dict_size = dict;
	if (mode >= 0) opt.mode = (lzma_mode)mode;
	if (mf >= 0) opt.mf = (lzma_match_finder)mf;
	if (depth) opt.depth = depth;
	if (nice) {
		opt.nice_len = nice;
	} else if (opt.nice_len < nice_min) {
		// Keep the preset's search depth (liblzma derives an unset one
		// from nice_len): the longer nice length then costs little time.
		if (!opt.depth) opt.depth = opt.mf >= LZMA_MF_BT2 ? 16 + opt.nice_len / 2 : 4 + opt.nice_len / 4;
		opt.nice_len = nice_min;
	}
	if (pb >= 0) opt.pb = (uint32_t)pb;
	lzma_filter filters[3] = {{bcj, NULL}, {LZMA_FILTER_LZMA2, &opt}, {LZMA_VLI_UNKNOWN, NULL}};
	lzma_stream local = LZMA_STREAM_INIT;
	lzma_stream* s = keep;
	if (!s) {
		local.allocator = &gd_lzma_allocator;
		s = &local;
	}
	lzma_ret r = lzma_stream_encoder(s, bcj == LZMA_VLI_UNKNOWN ? filters + 1 : filters, LZMA_CHECK_CRC64);
	if (r == LZMA_OK) {
		s->next_out = out;
		s->avail_out = out_size;
		size_t pos = 0;
		for (;;) {
			lzma_action act = LZMA_FINISH;
			size_t n = in_size - pos;
			if (chunk && n > chunk) {
				n = chunk;
				act = LZMA_FULL_FLUSH;
			}
			s->next_in = in + pos;
			s->avail_in = n;
			pos += n;
			do {
				r = lzma_code(s, act);
			} while (r == LZMA_OK && s->avail_out > 0);
			// LZMA_STREAM_END after a full flush: the block is done.
			if (r != LZMA_STREAM_END || act == LZMA_FINISH) break;
		}
		*out_pos = out_size - s->avail_out;
	}
	// The buffers are the caller's (Go memory): the stream keeps no pointer to them.
	s->next_in = NULL;
	s->avail_in = 0;
	s->next_out = NULL;
	s->avail_out = 0;
	if (!keep) lzma_end(s);
	if (r == LZMA_STREAM_END) return LZMA_OK;
	if (r == LZMA_OK) return LZMA_BUF_ERROR;
	return r;
}

// gd_lzma_stream returns a stream for gd_lzma_encode to keep its encoder
// in from call to call; gd_lzma_free frees it and the encoder.
static lzma_stream* gd_lzma_stream(void) {
	lzma_stream init = LZMA_STREAM_INIT;
	lzma_stream* s = malloc(sizeof *s);
	if (s) {
		*s = init;
		s->allocator = &gd_lzma_allocator;
	}
	return s;
}

static void gd_lzma_free(lzma_stream* s) {
	lzma_end(s);
	free(s);
}

static const char* gd_lzma_version(void) { return lzma_version_string(); }
*/
import "C"

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/block/internal/xzfmt"
)

const nativeLZMA = true

func lzmaEncoderName() string { return "liblzma " + C.GoString(C.gd_lzma_version()) + ", cgo" }

var (
	lzmaModes    = map[string]C.int{"fast": C.LZMA_MODE_FAST, "normal": C.LZMA_MODE_NORMAL}
	lzmaFinders  = map[string]C.int{"hc3": C.LZMA_MF_HC3, "hc4": C.LZMA_MF_HC4, "bt2": C.LZMA_MF_BT2, "bt3": C.LZMA_MF_BT3, "bt4": C.LZMA_MF_BT4}
	lzmaErrNames = map[C.int]string{
		C.LZMA_MEM_ERROR:     "cannot allocate memory",
		C.LZMA_OPTIONS_ERROR: "invalid or unsupported options",
		C.LZMA_PROG_ERROR:    "programming error",
	}
)

type cLZMACompressor struct {
	preset      C.uint32_t
	dict        int // 0: the preset's
	mode, mf    C.int
	nice, depth C.uint32_t
	pb          int           // lzmaAutoPB leaves it to lzmaProfile
	bcj         *xzfmt.Filter // nil: LZMA2 only
	chunk       int           // xz block size, 0: one xz block
	ws          *Workspace
}

// lzmaWorkspace is an encoder kept from input to input. At preset 9 its
// match finder is about 700 MiB: made afresh for each block, its pages
// are faulted in (and zeroed) every time.
type lzmaWorkspace struct {
	s *C.lzma_stream
}

func (w *lzmaWorkspace) close() {
	if w.s != nil {
		C.gd_lzma_free(w.s)
		w.s = nil
	}
}

func (l *cLZMACompressor) withWorkspace(w *Workspace) Compressor {
	c := *l
	c.ws = w
	return &c
}

func newNativeLZMA(so *specOptions) (Compressor, error) {
	lvl, err := so.int("level", 9, 0, 9)
	if err != nil {
		return nil, err
	}
	l := &cLZMACompressor{preset: C.uint32_t(lvl), mode: -1, mf: -1}
	if so.flag("extreme") {
		l.preset |= C.LZMA_PRESET_EXTREME
	}
	l.dict = lzmaPresetDict(lvl)
	if _, ok := so.opts["dict_size"]; ok {
		d, err := so.int("dict_size", 0, 12, 30)
		if err != nil {
			return nil, err
		}
		l.dict = 1 << d
	}
	if l.bcj, err = lzmaBinary(so); err != nil {
		return nil, err
	}
	for key, set := range map[string]struct {
		names map[string]C.int
		dst   *C.int
	}{"mode": {lzmaModes, &l.mode}, "mf": {lzmaFinders, &l.mf}} {
		if v, ok := so.opts[key]; ok {
			so.used[key] = true
			n, ok := set.names[v]
			if !ok {
				return nil, specErrorf("unknown lzma %s %q (valid: %s)", key, v, lzmaOptionNames(set.names))
			}
			*set.dst = n
		}
	}
	nice, err := lzmaNice(so)
	if err != nil {
		return nil, err
	}
	depth, err := lzmaDepth(so)
	if err != nil {
		return nil, err
	}
	l.nice, l.depth = C.uint32_t(nice), C.uint32_t(depth)
	if l.pb, err = lzmaPB(so); err != nil {
		return nil, err
	}
	if l.chunk, err = lzmaXZBlock(so); err != nil {
		return nil, err
	}
	// Bad combinations (e.g. mf=hc3 with nice=2) fail now, not on first use.
	if _, err := l.Compress([]byte("godwarfs")); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *cLZMACompressor) Compression() block.Compression { return block.CompLZMA }

func (l *cLZMACompressor) Compress(src []byte) ([]byte, error) {
	// liblzma's bound: the input plus its headers and chunk overhead.
	return l.best(nil, src, len(src)+len(src)/64+1024, false)
}

// CompressAppend appends the stream to dst, or fails with errNoGain when it
// would not be smaller than src.
func (l *cLZMACompressor) CompressAppend(dst, src []byte) ([]byte, error) {
	if len(src) <= 1 {
		return nil, errNoGain
	}
	return l.best(dst, src, len(src)-1, true)
}

// best is compress, and with a BCJ filter set compresses a second time
// with it and keeps that stream only if it is smaller, as the reference
// does: a BCJ filter makes data that is not code of its kind larger.
func (l *cLZMACompressor) best(dst, src []byte, room int, onlyGain bool) ([]byte, error) {
	base := len(dst)
	out, err := l.compress(dst, src, room, onlyGain, nil)
	if err != nil || l.bcj == nil || len(out)-base <= 1 {
		return out, err
	}
	alt, err := l.compress(nil, src, len(out)-base-1, true, l.bcj)
	if errors.Is(err, errNoGain) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	return append(out[:base], alt...), nil
}

// compress writes one stream with the given BCJ filter (nil: none).
func (l *cLZMACompressor) compress(dst, src []byte, room int, onlyGain bool, bcj *xzfmt.Filter) ([]byte, error) {
	// A dictionary larger than the input finds no more matches; it only
	// costs encoder memory (about ten times the dictionary) and makes every
	// decoder allocate it too.
	dict := max(min(l.dict, len(src)), 4096)
	chunk := 0
	if l.chunk > 0 && l.chunk < len(src) {
		chunk = l.chunk
		dict = max(min(dict, chunk), 4096)
	}
	out := newScratch(max(room, 1))
	defer out.release()
	var in *C.uint8_t
	if len(src) > 0 {
		in = (*C.uint8_t)(unsafe.Pointer(&src[0]))
	}
	var n C.size_t
	pb, niceMin := lzmaProfile(src, l.pb, int(l.preset&C.LZMA_PRESET_LEVEL_MASK), int(l.nice))
	filter := C.uint64_t(C.LZMA_VLI_UNKNOWN)
	if bcj != nil {
		filter = C.uint64_t(bcj.ID)
	}
	var keep *C.lzma_stream
	if l.ws != nil {
		if l.ws.lzma.s == nil {
			l.ws.lzma.s = C.gd_lzma_stream() // NULL: an encoder per call
		}
		keep = l.ws.lzma.s
	}
	r := C.gd_lzma_encode(keep, in, C.size_t(len(src)), (*C.uint8_t)(unsafe.Pointer(&out.b[0])), C.size_t(room), &n,
		l.preset, C.uint32_t(dict), l.mode, l.mf, l.nice, C.uint32_t(niceMin), l.depth, C.int(pb), filter, C.size_t(chunk))
	switch {
	case r == C.LZMA_OK:
		return append(slices.Grow(dst, int(n)), out.b[:n]...), nil
	case r == C.LZMA_BUF_ERROR && onlyGain:
		return nil, errNoGain
	}
	msg, ok := lzmaErrNames[r]
	if !ok {
		msg = fmt.Sprintf("error %d", int(r))
	}
	return nil, fmt.Errorf("liblzma: %s", msg)
}

func lzmaOptionNames(m map[string]C.int) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

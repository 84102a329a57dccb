//go:build cgo && libflac && !purego

package encode

/*
// libFLAC comes from the system (Debian: libflac-dev).
#cgo LDFLAGS: -lFLAC
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <FLAC/stream_encoder.h>

// gd_flac_buf is the growing output of one encode; the encoder seeks back
// at the end to rewrite STREAMINFO, so writes go to pos, not the end.
typedef struct {
	uint8_t* data;
	size_t len, cap, pos;
	int oom;
} gd_flac_buf;

static FLAC__StreamEncoderWriteStatus gd_flac_write(const FLAC__StreamEncoder* e, const FLAC__byte buffer[],
		size_t bytes, uint32_t samples, uint32_t frame, void* ctx) {
	gd_flac_buf* b = ctx;
	size_t end = b->pos + bytes;
	if (end > b->cap) {
		size_t c = b->cap ? b->cap : 65536;
		while (c < end) c *= 2;
		uint8_t* d = realloc(b->data, c);
		if (!d) { b->oom = 1; return FLAC__STREAM_ENCODER_WRITE_STATUS_FATAL_ERROR; }
		b->data = d;
		b->cap = c;
	}
	memcpy(b->data + b->pos, buffer, bytes);
	b->pos = end;
	if (end > b->len) b->len = end;
	return FLAC__STREAM_ENCODER_WRITE_STATUS_OK;
}

static FLAC__StreamEncoderSeekStatus gd_flac_seek(const FLAC__StreamEncoder* e, FLAC__uint64 off, void* ctx) {
	gd_flac_buf* b = ctx;
	if (off > b->len) return FLAC__STREAM_ENCODER_SEEK_STATUS_ERROR;
	b->pos = off;
	return FLAC__STREAM_ENCODER_SEEK_STATUS_OK;
}

static FLAC__StreamEncoderTellStatus gd_flac_tell(const FLAC__StreamEncoder* e, FLAC__uint64* off, void* ctx) {
	*off = ((gd_flac_buf*)ctx)->pos;
	return FLAC__STREAM_ENCODER_TELL_STATUS_OK;
}

// gd_flac_encode encodes n interleaved sample frames with the settings
// the reference mkdwarfs uses (not the streamable subset, a nominal 48 kHz
// rate, the level's preset, exhaustive model search on request), feeding
// at most 65536 samples per call as it does. It returns NULL and sets
// *err to a libFLAC state string on failure; the caller frees the result.
static uint8_t* gd_flac_encode(const int32_t* samples, uint64_t n, unsigned channels, unsigned bps,
		unsigned level, int exhaustive, size_t* out_len, const char** err) {
	gd_flac_buf b = {0};
	*err = NULL;
	FLAC__StreamEncoder* e = FLAC__stream_encoder_new();
	if (!e) { *err = "cannot allocate encoder"; return NULL; }
	FLAC__stream_encoder_set_streamable_subset(e, false);
	FLAC__stream_encoder_set_channels(e, channels);
	FLAC__stream_encoder_set_bits_per_sample(e, bps);
	FLAC__stream_encoder_set_sample_rate(e, 48000);
	FLAC__stream_encoder_set_compression_level(e, level);
	FLAC__stream_encoder_set_do_exhaustive_model_search(e, exhaustive != 0);
	FLAC__stream_encoder_set_total_samples_estimate(e, n);
	if (FLAC__stream_encoder_init_stream(e, gd_flac_write, gd_flac_seek, gd_flac_tell, NULL, &b) != FLAC__STREAM_ENCODER_INIT_STATUS_OK) {
		*err = FLAC__stream_encoder_get_resolved_state_string(e);
		FLAC__stream_encoder_delete(e);
		free(b.data);
		return NULL;
	}
	uint64_t per_call = 65536 / channels;
	while (n > 0) {
		uint64_t k = n < per_call ? n : per_call;
		if (!FLAC__stream_encoder_process_interleaved(e, samples, (uint32_t)k)) {
			*err = FLAC__stream_encoder_get_resolved_state_string(e);
			break;
		}
		samples += k * channels;
		n -= k;
	}
	if (!FLAC__stream_encoder_finish(e) && !*err) {
		*err = FLAC__stream_encoder_get_resolved_state_string(e);
	}
	FLAC__stream_encoder_delete(e);
	if (b.oom && !*err) *err = "out of memory";
	if (*err) { free(b.data); return NULL; }
	*out_len = b.len;
	return b.data;
}

static const char* gd_flac_version(void) { return FLAC__VERSION_STRING; }
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/godwarfs/godwarfs/block"
)

const nativeFLAC = true

func flacEncoderName() string { return "libFLAC " + C.GoString(C.gd_flac_version()) + ", cgo" }

// encodeFLACNative appends a libFLAC stream of samples to hdr.
func encodeFLACNative(hdr []byte, samples []int32, l block.PCMLayout, level int, exhaustive bool) ([]byte, error) {
	var p *C.int32_t
	if len(samples) > 0 {
		p = (*C.int32_t)(unsafe.Pointer(&samples[0]))
	}
	ex := C.int(0)
	if exhaustive {
		ex = 1
	}
	var n C.size_t
	var cerr *C.char
	out := C.gd_flac_encode(p, C.uint64_t(len(samples)/l.Channels), C.uint(l.Channels), C.uint(l.BitsPerSample),
		C.uint(level), ex, &n, &cerr)
	if out == nil {
		return nil, fmt.Errorf("libFLAC: %s", C.GoString(cerr))
	}
	defer C.free(unsafe.Pointer(out))
	res := make([]byte, len(hdr), len(hdr)+int(n))
	copy(res, hdr)
	return append(res, unsafe.Slice((*byte)(unsafe.Pointer(out)), int(n))...), nil
}

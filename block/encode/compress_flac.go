package encode

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/block/flac"
)

// PCMCompressor is a Compressor whose algorithm needs to know how its
// input is laid out: FLAC. Its plain Compress fails; a writer passes the
// layout from the block's category metadata (pcmaudio) to CompressPCM.
type PCMCompressor interface {
	Compressor
	// CompressPCM encodes src, whole sample frames of layout l, as a
	// complete FLAC block payload.
	CompressPCM(src []byte, l block.PCMLayout) ([]byte, error)
}

// flacCompressor is "flac:level=N:exhaustive" (level 0 to 8, default 5),
// the reference's options. It encodes with libFLAC in cgo builds
// (encode_flac_cgo.go) and with the package's own encoder otherwise.
type flacCompressor struct {
	level      int
	exhaustive bool
	native     bool
	// samples keeps the unpacked samples of a block (32 MiB for a 16 MiB
	// block of 16-bit audio) for the next one; the writer's workers share
	// the compressor.
	samples sync.Pool
}

func newFLACCompressor(so *specOptions, native bool) (Compressor, error) {
	lvl, err := so.int("level", 5, 0, 8)
	if err != nil {
		return nil, err
	}
	return &flacCompressor{level: lvl, exhaustive: so.flag("exhaustive"), native: native && nativeFLAC}, nil
}

func (f *flacCompressor) Compression() block.Compression { return block.CompFLAC }

// Compress fails: FLAC needs the layout of the samples (CompressPCM).
func (f *flacCompressor) Compress(src []byte) ([]byte, error) {
	return nil, fmt.Errorf("flac compresses only PCM audio of a known layout (category pcmaudio): %w", block.ErrUnsupported)
}

// CompressPCM encodes src as a FLAC block. It fails for a layout FLAC
// cannot carry (bits per sample 8 to 32, up to 8 channels, 1 to 4 bytes
// per sample), for data that is not whole sample frames, and for samples
// whose pad bits would not survive (e.g. non-zero low bits under
// LSBPadding): the reference would lose those, so such blocks must be
// compressed with something else.
func (f *flacCompressor) CompressPCM(src []byte, l block.PCMLayout) ([]byte, error) {
	if err := l.ValidateFLAC(); err != nil {
		return nil, fmt.Errorf("flac: %w: %w", err, block.ErrUnsupported)
	}
	if len(src)%l.FrameSize() != 0 {
		return nil, fmt.Errorf("flac: %d bytes are not whole %d-byte sample frames: %w", len(src), l.FrameSize(), block.ErrUnsupported)
	}
	var buf []int32
	if p, ok := f.samples.Get().(*[]int32); ok {
		buf = *p
	}
	samples, err := unpackPCM(buf, src, l)
	if err != nil {
		return nil, fmt.Errorf("flac: %w: %w", err, block.ErrUnsupported)
	}
	// Neither encoder keeps the samples once it has returned.
	defer f.samples.Put(&samples)
	hdr := block.AppendFLACHeader(nil, int64(len(src)), l)
	if f.native {
		return encodeFLACNative(hdr, samples, l, f.level, f.exhaustive)
	}
	return encodeFLACGo(hdr, samples, l, f.level, f.exhaustive)
}

// unpackPCM reads interleaved samples as the reference's PCM transformer
// does, and checks that packing each gives back its bytes and that it
// fits in BitsPerSample bits.
func unpackPCM(buf []int32, src []byte, l block.PCMLayout) ([]int32, error) {
	nb := l.BytesPerSample
	// As the decoder packs them: unsigned samples are offset by
	// 2^(bits-1), low padding is shifted out.
	var offset uint32
	var shift uint
	if !l.Signed {
		offset = 1 << (l.BitsPerSample - 1)
	}
	if l.LSBPadding {
		shift = uint(8*nb - l.BitsPerSample)
	}
	n := len(src) / nb
	if cap(buf) < n {
		buf = make([]int32, n)
	}
	out := buf[:n]
	if l.Signed && l.BitsPerSample == 8*nb && (nb == 2 || nb == 3) {
		// Signed samples that fill their bytes: every value is valid.
		unpackFull(out, src, nb, l.BigEndian)
		return out, nil
	}
	mask := uint32(1<<(8*nb) - 1)
	if nb == 4 {
		mask = 0xffffffff
	}
	lo, hi := int64(-1)<<(l.BitsPerSample-1), int64(1)<<(l.BitsPerSample-1)-1
	for i := range out {
		b := src[i*nb : i*nb+nb]
		var raw uint32
		switch {
		case nb == 1:
			raw = uint32(b[0])
		case nb == 2 && l.BigEndian:
			raw = uint32(binary.BigEndian.Uint16(b))
		case nb == 2:
			raw = uint32(binary.LittleEndian.Uint16(b))
		case nb == 3 && l.BigEndian:
			raw = uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2])
		case nb == 3:
			raw = uint32(b[2])<<16 | uint32(b[1])<<8 | uint32(b[0])
		case l.BigEndian:
			raw = binary.BigEndian.Uint32(b)
		default:
			raw = binary.LittleEndian.Uint32(b)
		}
		v := raw >> shift
		var s int64
		if l.Signed {
			sh := 32 - uint(l.BitsPerSample)
			s = int64(int32(v<<sh) >> sh)
		} else {
			s = int64(v) - int64(offset)
		}
		if s < lo || s > hi || (uint32(s)+offset)<<shift&mask != raw {
			return nil, fmt.Errorf("sample at byte %d (%#x) is not a %d-bit sample of this layout", i*nb, raw, l.BitsPerSample)
		}
		out[i] = int32(s)
	}
	return out, nil
}

// unpackFull reads signed 16- or 24-bit samples that use all their bits,
// one loop per layout.
func unpackFull(out []int32, src []byte, nb int, bigEndian bool) {
	switch {
	case nb == 2 && !bigEndian:
		for i := range out {
			out[i] = int32(int16(binary.LittleEndian.Uint16(src[2*i:])))
		}
	case nb == 2:
		for i := range out {
			out[i] = int32(int16(binary.BigEndian.Uint16(src[2*i:])))
		}
	case !bigEndian:
		for i := range out {
			b := src[3*i : 3*i+3]
			out[i] = int32(uint32(b[0])<<8|uint32(b[1])<<16|uint32(b[2])<<24) >> 8
		}
	default:
		for i := range out {
			b := src[3*i : 3*i+3]
			out[i] = int32(uint32(b[2])<<8|uint32(b[1])<<16|uint32(b[0])<<24) >> 8
		}
	}
}

// encodeFLACGo appends a stream from block/flac's encoder to hdr;
// exhaustive makes it code every LPC order instead of estimating the best.
func encodeFLACGo(hdr []byte, samples []int32, l block.PCMLayout, level int, exhaustive bool) ([]byte, error) {
	o := flac.LevelOptions(level)
	o.Exhaustive = exhaustive
	stream, err := flac.Encode(samples, l.Channels, l.BitsPerSample, o)
	if err != nil {
		return nil, err
	}
	return append(hdr, stream...), nil
}

// ForPCM returns c set up for inputs of layout l: for a PCMCompressor
// (flac) a Compressor whose Compress is c.CompressPCM(src, l), which a
// writer can use like any other; any other compressor is returned as it
// is, since it needs no layout.
func ForPCM(c Compressor, l block.PCMLayout) Compressor {
	if pc, ok := c.(PCMCompressor); ok {
		return pcmBound{pc, l}
	}
	return c
}

type pcmBound struct {
	pc PCMCompressor
	l  block.PCMLayout
}

func (b pcmBound) Compression() block.Compression      { return b.pc.Compression() }
func (b pcmBound) Compress(src []byte) ([]byte, error) { return b.pc.CompressPCM(src, b.l) }

// ForMetadata binds f to the sample layout of a pcmaudio/waveform
// category (its metadata JSON), whose blocks then hold whole sample
// frames (MetadataCompressor).
func (f *flacCompressor) ForMetadata(metadataJSON string) (Compressor, Constraints, error) {
	l, err := block.ParsePCMLayout([]byte(metadataJSON))
	if err != nil {
		return nil, Constraints{}, fmt.Errorf("flac: %w", err)
	}
	if err := l.ValidateFLAC(); err != nil {
		return nil, Constraints{}, fmt.Errorf("flac: %w", err)
	}
	return pcmBound{f, l}, Constraints{Granularity: l.FrameSize()}, nil
}

package block

// FLAC blocks (compression id 6) hold PCM audio. The payload is
//
//	ULEB128   uncompressed size in bytes
//	header    a thrift compact-protocol struct:
//	            field 1, i16:  number of channels
//	            field 2, byte: significant bits per sample
//	            field 3, byte: flags
//	stream    a complete FLAC stream ("fLaC", STREAMINFO, ..., frames)
//
// The flags say how each sample is laid out in the uncompressed bytes:
//
//	0x80  big endian (else little endian)
//	0x40  signed (else unsigned, offset by 2^(bits-1))
//	0x20  the padding bits are the low ones (else the high ones)
//	0x03  bytes per sample minus one
//
// Samples are interleaved by channel. The FLAC stream has the header's
// channel count and bits per sample (its sample rate is always 48000 and
// means nothing). A decoded sample v becomes bytes like this: for unsigned
// data add 2^(bits-1); for low padding shift left by 8*bytes-bits; write
// the low 8*bytes bits in the stated byte order. With high padding the
// pad bits of a signed sample are copies of the sign bit, of an unsigned
// one zeros. The block ends when the declared size has been produced;
// anything after that in the stream is ignored, as the reference does.
// Pad bits never reach the FLAC stream (low padding is shifted out before
// encoding), so FLAC's own "wasted bits" only see what the audio leaves
// unused.
//
// Example: 300 bytes of 16-bit signed little-endian stereo start
// ac 02 | 14 04 | 13 10 | 13 41 | 00 | "fLaC"... (size 300; field 1 = 2
// zigzagged; field 2 = 16; field 3 = 0x41: signed, 2 bytes; stop).
//
// The reference's writer runs libFLAC outside the streamable subset at the
// level's preset, with a nominal 48 kHz rate and the sample count as an
// estimate, feeding 65536 samples per call; libFLAC adds a VORBIS_COMMENT
// block and, at the end, rewrites STREAMINFO with the MD5 and frame sizes.
// It keeps a FLAC payload even where it is larger than the input.

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/godwarfs/godwarfs/block/flac"
)

const (
	flacFlagBigEndian  = 0x80
	flacFlagSigned     = 0x40
	flacFlagLSBPadding = 0x20
	flacBytesMask      = 0x03
)

// PCMLayout describes how PCM audio is stored as bytes: what a FLAC block
// decodes to, and what the FLAC encoder takes.
type PCMLayout struct {
	Channels       int  // interleaved channels, 1 to 8
	BitsPerSample  int  // significant bits, 8 to 32 (the decoder takes 4 up)
	BytesPerSample int  // 1 to 4, at least BitsPerSample/8
	BigEndian      bool // byte order of a sample
	Signed         bool // two's complement, else offset binary
	LSBPadding     bool // pad bits below the significant ones, else above
}

func (l PCMLayout) flags() uint8 {
	f := uint8(l.BytesPerSample-1) & flacBytesMask
	if l.BigEndian {
		f |= flacFlagBigEndian
	}
	if l.Signed {
		f |= flacFlagSigned
	}
	if l.LSBPadding {
		f |= flacFlagLSBPadding
	}
	return f
}

// check reports a layout FLAC cannot carry; minBits is 8 for the
// encoder (as the reference) and 4 (FLAC's minimum) for the decoder.
func (l PCMLayout) check(minBits int) error {
	switch {
	case l.Channels < 1 || l.Channels > flac.MaxChannels:
		return fmt.Errorf("%d channels, FLAC takes 1 to %d", l.Channels, flac.MaxChannels)
	case l.BytesPerSample < 1 || l.BytesPerSample > 4:
		return fmt.Errorf("%d bytes per sample, FLAC takes 1 to 4", l.BytesPerSample)
	case l.BitsPerSample < minBits || l.BitsPerSample > 8*l.BytesPerSample:
		return fmt.Errorf("%d bits per sample in %d bytes (%d to %d allowed)", l.BitsPerSample, l.BytesPerSample, minBits, 8*l.BytesPerSample)
	}
	return nil
}

// ValidateFLAC reports why a FLAC encoder cannot take the layout: FLAC's
// limits, with 8 bits per sample at least, as the reference writes (the
// decoder reads down to 4).
func (l PCMLayout) ValidateFLAC() error { return l.check(8) }

// FrameSize is the number of bytes of one sample of every channel.
func (l PCMLayout) FrameSize() int { return l.Channels * l.BytesPerSample }

// AppendFLACHeader appends what precedes the FLAC stream in a FLAC block
// payload of size uncompressed bytes: the size prefix and the header.
func AppendFLACHeader(dst []byte, size int64, l PCMLayout) []byte {
	dst = binary.AppendUvarint(dst, uint64(size))
	// field 1 (delta 1) i16 (compact type 4), zigzag varint
	dst = append(dst, 0x14)
	dst = binary.AppendUvarint(dst, uint64(l.Channels)<<1)
	dst = append(dst, 0x13, byte(l.BitsPerSample)) // field 2, byte
	dst = append(dst, 0x13, l.flags())             // field 3, byte
	return append(dst, 0)                          // stop
}

// parseFLACHeader reads the size prefix and the header and returns the
// declared size, the layout and the FLAC stream.
func parseFLACHeader(src []byte) (int64, PCMLayout, []byte, error) {
	var l PCMLayout
	n, k, err := readUvarint(src)
	if err != nil {
		return 0, l, nil, err
	}
	var have [4]bool
	var flags uint8
	rest, err := readCompactStruct(src[k:], func(id int16, typ byte, v int64) error {
		var want byte
		switch id {
		case 1:
			want = 4 // i16
		case 2, 3:
			want = 3 // byte
		default:
			return nil // a field added later: skipped
		}
		if typ != want {
			return corruptf("flac header field %d has compact type %d, want %d", id, typ, want)
		}
		have[id] = true
		switch id {
		case 1:
			l.Channels = int(v)
		case 2:
			l.BitsPerSample = int(uint8(v))
		case 3:
			flags = uint8(v)
		}
		return nil
	})
	if err != nil {
		return 0, l, nil, fmt.Errorf("flac header: %w", err)
	}
	for id, name := range [...]string{1: "num_channels", 2: "bits_per_sample", 3: "flags"} {
		if id > 0 && !have[id] {
			return 0, l, nil, corruptf("flac header lacks %s", name)
		}
	}
	if flags&^(flacFlagBigEndian|flacFlagSigned|flacFlagLSBPadding|flacBytesMask) != 0 {
		return 0, l, nil, fmt.Errorf("flac header flags %#02x have unknown bits: %w", flags, ErrUnsupported)
	}
	l.BytesPerSample = int(flags&flacBytesMask) + 1
	l.BigEndian = flags&flacFlagBigEndian != 0
	l.Signed = flags&flacFlagSigned != 0
	l.LSBPadding = flags&flacFlagLSBPadding != 0
	if err := l.check(4); err != nil {
		return 0, l, nil, corruptf("flac header: %v", err)
	}
	if n%int64(l.FrameSize()) != 0 {
		return 0, l, nil, corruptf("flac block of %d bytes is not a whole number of %d-byte sample frames", n, l.FrameSize())
	}
	return n, l, rest, nil
}

// FLACLayout returns the PCM layout a FLAC block payload declares, the
// metadata a recompression needs to encode its data as FLAC again.
func FLACLayout(src []byte) (PCMLayout, error) {
	_, l, _, err := parseFLACHeader(src)
	return l, err
}

// readCompactStruct reads one thrift compact-protocol struct of scalar
// fields, calling fn for each, and returns what follows its stop byte.
// Nested containers never occur in these headers and are refused.
func readCompactStruct(src []byte, fn func(id int16, typ byte, v int64) error) ([]byte, error) {
	var last int16
	for {
		if len(src) == 0 {
			return nil, corruptf("header ends before its stop byte")
		}
		b := src[0]
		src = src[1:]
		if b == 0 {
			return src, nil
		}
		typ := b & 15
		id := last + int16(b>>4)
		if b>>4 == 0 {
			z, k := binary.Uvarint(src)
			if k <= 0 || z > 0xffff {
				return nil, corruptf("bad field id")
			}
			id = int16(z>>1) ^ -int16(z&1)
			src = src[k:]
		}
		last = id
		var v int64
		switch typ {
		case 1, 2: // bool true / false
			v = int64(2 - typ)
		case 3: // byte
			if len(src) == 0 {
				return nil, corruptf("field %d truncated", id)
			}
			v = int64(int8(src[0]))
			src = src[1:]
		case 4, 5, 6: // i16, i32, i64: zigzag varint
			z, k := binary.Uvarint(src)
			if k <= 0 {
				return nil, corruptf("field %d: bad varint", id)
			}
			v = int64(z>>1) ^ -int64(z&1)
			src = src[k:]
			if typ == 4 && (v < -1<<15 || v >= 1<<15) {
				return nil, corruptf("field %d: i16 value %d out of range", id, v)
			}
		default:
			return nil, corruptf("field %d has compact type %d, not a scalar", id, typ)
		}
		if err := fn(id, typ, v); err != nil {
			return nil, err
		}
	}
}

// decompressFLAC decodes a FLAC block into dst's storage if it can hold
// the declared size. The output grows with what the stream really decodes
// to, so a forged size does not make it allocate more than that.
func decompressFLAC(src, dst []byte, limit int64) ([]byte, error) {
	n, l, stream, err := parseFLACHeader(src)
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, tooLarge(n, limit)
	}
	out, err := decodeFLACStream(stream, l, n, dst)
	if err != nil {
		if errors.Is(err, flac.ErrFormat) {
			return nil, fmt.Errorf("flac: %w (%w)", err, ErrCorrupt)
		}
		return nil, fmt.Errorf("flac: %w", err)
	}
	return out, nil
}

func decodeFLACStream(stream []byte, l PCMLayout, n int64, dst []byte) ([]byte, error) {
	d, err := flac.NewDecoder(stream)
	if err != nil {
		return nil, err
	}
	info := d.Info()
	if info.Channels != l.Channels || info.BitsPerSample != l.BitsPerSample {
		return nil, corruptf("stream has %d channels of %d bits, block header says %d of %d",
			info.Channels, info.BitsPerSample, l.Channels, l.BitsPerSample)
	}
	var out []byte
	if int64(cap(dst)) >= n {
		out = dst[:0:n]
	} else {
		out = make([]byte, 0, min(n, max(int64(len(stream))*4, 1<<16)))
	}
	pk := newPCMPacker(l)
	for int64(len(out)) < n {
		// A frame is refused before it is decoded if it would overshoot.
		d.SetMaxBlockSize(int(min((n-int64(len(out)))/int64(l.FrameSize()), flac.MaxBlockSize)))
		f, err := d.Next()
		if err == io.EOF {
			return nil, corruptf("stream ended after %d of %d declared bytes", len(out), n)
		}
		if errors.Is(err, flac.ErrBlockLimit) {
			return nil, corruptf("stream decodes to more than the %d declared bytes (%v)", n, err)
		}
		if err != nil {
			return nil, err
		}
		if len(f.Samples) != l.Channels || f.BitsPerSample != l.BitsPerSample {
			return nil, corruptf("frame at %d has %d channels of %d bits, block header says %d of %d",
				d.Offset(), len(f.Samples), f.BitsPerSample, l.Channels, l.BitsPerSample)
		}
		size := int64(f.BlockSize) * int64(l.FrameSize())
		if int64(len(out))+size > n {
			return nil, corruptf("stream decodes to more than the %d declared bytes", n)
		}
		if int64(len(out))+size > int64(cap(out)) {
			nb := make([]byte, len(out), min(n, max(int64(cap(out))*2, int64(len(out))+size)))
			copy(nb, out)
			out = nb
		}
		end := len(out) + int(size)
		pk.pack(out[len(out):end], f.Samples, f.BlockSize)
		out = out[:end]
	}
	return out, nil
}

// pcmPacker turns decoded samples into the bytes of a PCMLayout.
type pcmPacker struct {
	l      PCMLayout
	offset uint32 // added to every sample: 2^(bits-1) for unsigned data
	shift  uint   // left shift for low padding
}

func newPCMPacker(l PCMLayout) pcmPacker {
	p := pcmPacker{l: l}
	if !l.Signed {
		p.offset = 1 << (l.BitsPerSample - 1)
	}
	if l.LSBPadding {
		p.shift = uint(8*l.BytesPerSample - l.BitsPerSample)
	}
	return p
}

// pack writes blockSize interleaved sample frames into out, which holds
// exactly blockSize*FrameSize bytes. Each layout has its own loop, with no
// decision per sample; 16-bit little-endian stereo, the usual audio CD
// layout, writes both channels of a frame with one store.
func (p pcmPacker) pack(out []byte, chans [][]int64, blockSize int) {
	nb := p.l.BytesPerSample
	off, sh := p.offset, p.shift&31
	if len(chans) == 2 && nb == 2 && !p.l.BigEndian {
		a, b := chans[0][:blockSize], chans[1][:blockSize]
		out = out[:4*len(a)]
		if off == 0 && sh == 0 {
			// signed, no padding: two frames with one 8-byte store
			i := 0
			for ; i+1 < len(a); i += 2 {
				u := uint64(uint16(a[i])) | uint64(uint16(b[i]))<<16 |
					uint64(uint16(a[i+1]))<<32 | uint64(uint16(b[i+1]))<<48
				binary.LittleEndian.PutUint64(out[4*i:], u)
			}
			if i < len(a) {
				binary.LittleEndian.PutUint32(out[4*i:], uint32(uint16(a[i]))|uint32(uint16(b[i]))<<16)
			}
			return
		}
		for i := range a {
			u := uint32(uint16((uint32(a[i])+off)<<sh)) | (uint32(b[i])+off)<<sh<<16
			binary.LittleEndian.PutUint32(out[4*i:], u)
		}
		return
	}
	stride := p.l.FrameSize()
	for c, s := range chans {
		s = s[:blockSize]
		if blockSize == 0 {
			return
		}
		// o[i*stride:] is sample i of channel c; the last one needs nb
		// bytes, which the slice bound below checks once.
		o := out[c*nb : c*nb+(blockSize-1)*stride+nb]
		switch {
		case nb == 1:
			for i, v := range s {
				o[i*stride] = byte((uint32(v) + off) << sh)
			}
		case nb == 2 && p.l.BigEndian:
			for i, v := range s {
				binary.BigEndian.PutUint16(o[i*stride:], uint16((uint32(v)+off)<<sh))
			}
		case nb == 2:
			for i, v := range s {
				binary.LittleEndian.PutUint16(o[i*stride:], uint16((uint32(v)+off)<<sh))
			}
		case nb == 3 && p.l.BigEndian:
			for i, v := range s {
				u := (uint32(v) + off) << sh
				b := o[i*stride : i*stride+3]
				b[0], b[1], b[2] = byte(u>>16), byte(u>>8), byte(u)
			}
		case nb == 3:
			for i, v := range s {
				u := (uint32(v) + off) << sh
				b := o[i*stride : i*stride+3]
				b[0], b[1], b[2] = byte(u), byte(u>>8), byte(u>>16)
			}
		case p.l.BigEndian:
			for i, v := range s {
				binary.BigEndian.PutUint32(o[i*stride:], (uint32(v)+off)<<sh)
			}
		default:
			for i, v := range s {
				binary.LittleEndian.PutUint32(o[i*stride:], (uint32(v)+off)<<sh)
			}
		}
	}
}

// pcmJSON is the category metadata of a pcmaudio/waveform block as the
// reference writes it (nlohmann::json: keys sorted, no spaces).
type pcmJSON struct {
	BitsPerSample  int    `json:"bits_per_sample"`
	BytesPerSample int    `json:"bytes_per_sample"`
	Endianness     string `json:"endianness"`
	Channels       int    `json:"number_of_channels"`
	Padding        string `json:"padding"`
	Signedness     string `json:"signedness"`
}

// MetadataJSON returns the layout as the reference's category metadata
// JSON, e.g. {"bits_per_sample":16,"bytes_per_sample":2,
// "endianness":"little","number_of_channels":2,"padding":"lsb",
// "signedness":"signed"}.
func (l PCMLayout) MetadataJSON() string {
	j := pcmJSON{BitsPerSample: l.BitsPerSample, BytesPerSample: l.BytesPerSample, Channels: l.Channels,
		Endianness: "little", Padding: "msb", Signedness: "unsigned"}
	if l.BigEndian {
		j.Endianness = "big"
	}
	if l.LSBPadding {
		j.Padding = "lsb"
	}
	if l.Signed {
		j.Signedness = "signed"
	}
	b, _ := json.Marshal(j) // cannot fail: plain fields
	return string(b)
}

// ParsePCMLayout reads the reference's category metadata JSON of a
// pcmaudio/waveform block (see MetadataJSON); every key must be present
// and have a known value.
func ParsePCMLayout(metadata []byte) (PCMLayout, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(metadata, &raw); err != nil {
		return PCMLayout{}, fmt.Errorf("pcm layout: %w", err)
	}
	for _, k := range []string{"bits_per_sample", "bytes_per_sample", "endianness", "number_of_channels", "padding", "signedness"} {
		if _, ok := raw[k]; !ok {
			return PCMLayout{}, fmt.Errorf("pcm layout: no %q in %s", k, metadata)
		}
	}
	var j pcmJSON
	if err := json.Unmarshal(metadata, &j); err != nil {
		return PCMLayout{}, fmt.Errorf("pcm layout: %w", err)
	}
	l := PCMLayout{Channels: j.Channels, BitsPerSample: j.BitsPerSample, BytesPerSample: j.BytesPerSample}
	for _, f := range []struct {
		key, val, yes, no string
		dst               *bool
	}{
		{"endianness", j.Endianness, "big", "little", &l.BigEndian},
		{"padding", j.Padding, "lsb", "msb", &l.LSBPadding},
		{"signedness", j.Signedness, "signed", "unsigned", &l.Signed},
	} {
		switch f.val {
		case f.yes:
			*f.dst = true
		case f.no:
		default:
			return PCMLayout{}, fmt.Errorf("pcm layout: %s %q is neither %q nor %q", f.key, f.val, f.yes, f.no)
		}
	}
	return l, nil
}

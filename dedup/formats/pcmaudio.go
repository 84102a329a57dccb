package formats

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// MinPCMAudioSize is the smallest file the pcmaudio detector looks at.
const MinPCMAudioSize = 32

// PCMMeta is the sample layout of a PCM waveform: the category metadata
// of pcmaudio/waveform.
type PCMMeta struct {
	BigEndian      bool
	Unsigned       bool
	PadMSB         bool
	BitsPerSample  uint8
	BytesPerSample uint8
	Channels       uint16
}

// valid says whether the layout is one the reference supports.
func (m PCMMeta) valid() bool {
	if m.Channels == 0 {
		return false
	}
	switch m.BitsPerSample {
	case 8:
		return m.BytesPerSample == 1
	case 16:
		return m.BytesPerSample == 2
	case 20, 24:
		return m.BytesPerSample == 3 || m.BytesPerSample == 4
	case 32:
		return m.BytesPerSample == 4
	}
	return false
}

func (m PCMMeta) String() string {
	e, s, p := "little", "signed", "lsb"
	if m.BigEndian {
		e = "big"
	}
	if m.Unsigned {
		s = "unsigned"
	}
	if m.PadMSB {
		p = "msb"
	}
	return fmt.Sprintf("[%s, %s, %s, bits=%d, bytes=%d, channels=%d]", e, s, p, m.BitsPerSample, m.BytesPerSample, m.Channels)
}

// JSON is the category metadata the reference writes for the layout.
func (m PCMMeta) JSON() string {
	e, s, p := "little", "signed", "lsb"
	if m.BigEndian {
		e = "big"
	}
	if m.Unsigned {
		s = "unsigned"
	}
	if m.PadMSB {
		p = "msb"
	}
	return jsonObject(map[string]any{
		"endianness": e, "signedness": s, "padding": p,
		"bytes_per_sample": m.BytesPerSample, "bits_per_sample": m.BitsPerSample,
		"number_of_channels": m.Channels,
	})
}

// sub is the layout as a subcategory, ordered as the reference compares
// its layouts (endianness, signedness, padding, bits, bytes, channels).
func (m PCMMeta) sub() Sub {
	e := uint64(endianLittle)
	if m.BigEndian {
		e = endianBig
	}
	return Sub{Key: [6]uint64{e, b2u(m.Unsigned), b2u(m.PadMSB), uint64(m.BitsPerSample), uint64(m.BytesPerSample), uint64(m.Channels)}, JSON: m.JSON()}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// iffFormat describes one RIFF-like container's chunk framing.
type iffFormat struct {
	name        string
	hdrSize     int64 // chunk header: id and size
	idSize      int64
	size64      bool
	order       binary.ByteOrder
	align       int64
	sizeWithHdr bool // the chunk size counts the header (WAV64)
	caf         bool // a data chunk of size -1 runs to the end of the file
}

type chunk struct {
	id   string
	pos  int64 // of the header
	size int64 // of the data
}

// iffParser walks the chunks of a RIFF-like file from a position on.
type iffParser struct {
	f   *file
	fmt *iffFormat
	pos int64
}

func (p *iffParser) alignUp(x int64) int64 {
	if a := p.fmt.align; a > 1 && x%a != 0 {
		x += a - x%a
	}
	return x
}

// checkSize reports (verbosely) a size field that does not match the
// file; the reference goes on regardless.
func (p *iffParser) checkSize(which string, actual, expected uint64) {
	if actual != expected && (p.fmt.align == 1 || uint64(p.alignUp(int64(actual&math.MaxInt64))) != expected) {
		p.f.opt.logf(Verbose, "[%s] %s: unexpected %s size: %d (expected %d)", p.fmt.name, p.f.opt.Path, which, actual, expected)
	}
}

// next returns the next chunk, or false at the end of the file or at a
// chunk that does not fit in it.
func (p *iffParser) next() (chunk, bool) {
	f, ff := p.f, p.fmt
	p.pos = p.alignUp(p.pos)
	if p.pos > f.size || ff.hdrSize > f.size-p.pos {
		return chunk{}, false
	}
	h, ok := f.readFull(p.pos, ff.hdrSize)
	if !ok {
		return chunk{}, false
	}
	c := chunk{id: string(h[:ff.idSize]), pos: p.pos}
	var size uint64
	if ff.size64 {
		size = ff.order.Uint64(h[ff.idSize:])
	} else {
		size = uint64(ff.order.Uint32(h[ff.idSize:]))
	}
	if ff.caf && size == math.MaxUint64 && c.id == "data" {
		size = uint64(f.size - (c.pos + ff.hdrSize))
	}
	var end uint64
	if ff.sizeWithHdr {
		if size < uint64(ff.hdrSize) {
			f.opt.logf(Warn, "[%s] %s: invalid chunk size: %d", ff.name, f.opt.Path, size)
			return chunk{}, false
		}
		end = uint64(p.pos) + size
		size -= uint64(ff.hdrSize)
	} else {
		end = uint64(p.pos) + uint64(ff.hdrSize) + size
	}
	// Sizes are at most 2^64-1 and positions below 2^63: an end that
	// wrapped around is smaller than the position.
	if end > uint64(f.size) || end < uint64(p.pos) {
		f.opt.logf(Warn, "[%s] %s: unexpected end of file (pos=%d, hdr.size=%d, end=%d)", ff.name, f.opt.Path, end, size, f.size)
		return chunk{}, false
	}
	p.pos = int64(end)
	c.size = int64(size)
	f.opt.logf(Trace, "[%s] %s: `%s` (len=%d)", ff.name, f.opt.Path, c.id[:4], c.size)
	return c, true
}

// data reads n bytes of c's data (n may exceed the chunk, not the file).
func (p *iffParser) data(c chunk, n int64) ([]byte, bool) {
	b, ok := p.f.readFull(c.pos+p.fmt.hdrSize, n)
	if !ok {
		p.f.opt.logf(Warn, "[%s] %s: unexpected end of file", p.fmt.name, p.f.opt.Path)
	}
	return b, ok
}

func (p *iffParser) expectSize(c chunk, n int64) bool {
	if c.size == n {
		return true
	}
	p.f.opt.logf(Warn, "[%s] %s: unexpected size for `%s` chunk: %d (expected %d)", p.fmt.name, p.f.opt.Path, c.id[:4], c.size, n)
	return false
}

// DetectPCMAudio recognises a PCM audio file (AIFF, CAF, WAV or WAV64, tried in
// that order, as the reference does) of size bytes read from r. It
// returns the parts (metadata before and after the waveform, the
// waveform with its layout as subcategory), or nil.
func DetectPCMAudio(r io.ReaderAt, size int64, opt Options) []Part {
	if size < MinPCMAudioSize {
		return nil
	}
	f := &file{r: r, size: size, opt: &opt}
	for _, check := range []func(*file) []Part{checkAIFF, checkCAF, checkWAV, checkWAV64} {
		if parts := check(f); parts != nil {
			return parts
		}
	}
	return nil
}

// checkMeta applies the reference's checks to a layout.
func (f *file) checkMeta(m PCMMeta, format string) bool {
	if !m.valid() {
		f.opt.logf(Warn, "[%s] %s: metadata check failed: %v", format, f.opt.Path, m)
		return false
	}
	if f.opt.Accept != nil {
		if err := f.opt.Accept(PCMWaveform, m.JSON()); err != nil {
			f.opt.logf(Warn, "[%s] %s: %v", format, f.opt.Path, err)
			return false
		}
	}
	f.opt.logf(Trace, "[%s] %s: meta=%v", format, f.opt.Path, m)
	return true
}

// pcmParts splits the file around a waveform of length bytes at start.
func (f *file) pcmParts(m PCMMeta, start, length int64) []Part {
	parts := []Part{{Category: PCMMetadata, Size: start}, {Category: PCMWaveform, Size: length, HasSub: true, Sub: m.sub()}}
	if end := start + length; end < f.size {
		parts = append(parts, Part{Category: PCMMetadata, Size: f.size - end})
	}
	return parts
}

// pcmData makes the parts for a data chunk whose waveform starts skip
// bytes into it; a length that is not a whole number of frames is cut
// down to one, as the reference does for broken files.
func (p *iffParser) pcmData(c chunk, m PCMMeta, skip int64) []Part {
	f := p.f
	if c.size < skip {
		f.opt.logf(Warn, "[%s] %s: `data` chunk too small: %d", p.fmt.name, f.opt.Path, c.size)
		return nil
	}
	start := c.pos + p.fmt.hdrSize + skip
	length := c.size - skip
	frame := int64(m.Channels) * int64(m.BytesPerSample)
	if pad := length % frame; pad > 0 {
		f.opt.logf(Verbose, "[%s] %s: `data` chunk size includes %d padding byte(s); got %d, expected %d (#chan=%d, bytes_per_sample=%d)",
			p.fmt.name, f.opt.Path, pad, length, length-pad, m.Channels, m.BytesPerSample)
		length -= pad
	}
	return f.pcmParts(m, start, length)
}

var aiffFormat = iffFormat{name: "AIFF", hdrSize: 8, idSize: 4, order: binary.BigEndian, align: 2}

func checkAIFF(f *file) []Part {
	h, ok := f.readFull(0, 12)
	if !ok || string(h[:4]) != "FORM" || string(h[8:12]) != "AIFF" {
		return nil
	}
	p := &iffParser{f: f, fmt: &aiffFormat, pos: 12}
	p.checkSize("file", uint64(be.Uint32(h[4:])), uint64(f.size-8))
	var (
		m      PCMMeta
		valid  bool
		frames uint32
	)
	for {
		c, ok := p.next()
		if !ok {
			return nil
		}
		switch c.id {
		case "COMM":
			if !p.expectSize(c, 18) {
				return nil
			}
			if valid {
				f.opt.logf(Warn, "[AIFF] %s: unexpected second `COMM` chunk", f.opt.Path)
				return nil
			}
			d, ok := p.data(c, 8)
			if !ok {
				return nil
			}
			bits := uint8(be.Uint16(d[6:]))
			m = PCMMeta{BigEndian: true, BitsPerSample: bits, BytesPerSample: uint8((int(bits) + 7) / 8), Channels: be.Uint16(d[0:])}
			frames = be.Uint32(d[2:])
			if valid = f.checkMeta(m, "AIFF"); !valid {
				return nil
			}
		case "SSND":
			if !valid {
				f.opt.logf(Warn, "[AIFF] %s: got `SSND` chunk without `COMM` chunk", f.opt.Path)
				return nil
			}
			d, ok := p.data(c, 8)
			if !ok {
				return nil
			}
			off := int64(be.Uint32(d[0:]))
			start := c.pos + 8 + 8 + off
			length := int64(frames) * int64(m.Channels) * int64(m.BytesPerSample)
			if 8+off+length > c.size {
				f.opt.logf(Warn, "[AIFF] %s: `SSND` invalid chunk size: %d, expected >= %d (offset=%d, pcm_len=%d)",
					f.opt.Path, c.size, 8+off+length, off, length)
				return nil
			}
			return f.pcmParts(m, start, length)
		}
	}
}

var cafFormat = iffFormat{name: "CAF", hdrSize: 12, idSize: 4, size64: true, order: binary.BigEndian, align: 1, caf: true}

func checkCAF(f *file) []Part {
	h, ok := f.readFull(0, 8)
	if !ok || string(h[:4]) != "caff" {
		return nil
	}
	if v, fl := be.Uint16(h[4:]), be.Uint16(h[6:]); v != 1 || fl != 0 {
		f.opt.logf(Warn, "[CAF] %s: unsupported file version/flags: %d/%d", f.opt.Path, v, fl)
		return nil
	}
	p := &iffParser{f: f, fmt: &cafFormat, pos: 8}
	var (
		m     PCMMeta
		valid bool
	)
	for {
		c, ok := p.next()
		if !ok {
			return nil
		}
		switch c.id {
		case "desc":
			if !p.expectSize(c, 32) {
				return nil
			}
			if valid {
				f.opt.logf(Warn, "[CAF] %s: unexpected second `desc` chunk", f.opt.Path)
				return nil
			}
			d, ok := p.data(c, 32)
			if !ok {
				return nil
			}
			if id := string(d[8:12]); id != "lpcm" {
				f.opt.logf(Verbose, "[CAF] %s: unsupported `%s` format", f.opt.Path, id)
				return nil
			}
			flags := be.Uint32(d[12:])
			if flags&1 != 0 {
				f.opt.logf(Verbose, "[CAF] %s: floating point format not supported", f.opt.Path)
				return nil
			}
			if fpp := be.Uint32(d[20:]); fpp != 1 {
				f.opt.logf(Warn, "[CAF] %s: unsupported frames per packet: %d", f.opt.Path, fpp)
				return nil
			}
			bpp := be.Uint32(d[16:])
			m = PCMMeta{BigEndian: flags&2 == 0, BitsPerSample: uint8(be.Uint32(d[28:])), Channels: uint16(be.Uint32(d[24:]))}
			if bpp == 0 {
				f.opt.logf(Warn, "[CAF] %s: bytes per packet must not be zero", f.opt.Path)
				return nil
			}
			if uint64(bpp) > 4*uint64(m.Channels) {
				f.opt.logf(Warn, "[CAF] %s: bytes per packet out of range: %d, expected <= %d", f.opt.Path, bpp, 4*int(m.Channels))
				return nil
			}
			if bpp%uint32(m.Channels) != 0 {
				f.opt.logf(Warn, "[CAF] %s: unsupported packet size: %d (%d channels)", f.opt.Path, bpp, m.Channels)
				return nil
			}
			m.BytesPerSample = uint8(bpp / uint32(m.Channels))
			if valid = f.checkMeta(m, "CAF"); !valid {
				return nil
			}
		case "data":
			if !valid {
				f.opt.logf(Warn, "[CAF] %s: got `data` chunk without `desc` chunk", f.opt.Path)
				return nil
			}
			// The data starts with a 4-byte edit count.
			return p.pcmData(c, m, 4)
		}
	}
}

// The WAV64 container's GUIDs: a FourCC followed by a fixed tail.
const (
	w64RIFF = "riff\x2e\x91\xcf\x11\xa5\xd6\x28\xdb\x04\xc1\x00\x00"
	w64Tail = "\xf3\xac\xd3\x11\x8c\xd1\x00\xc0\x4f\x8e\xdb\x8a"
)

type wavLike struct {
	iffFormat
	fileID, waveID, fmtID, dataID string
	fileHdr                       int64
}

var (
	wavFormat = wavLike{
		iffFormat: iffFormat{name: "WAV", hdrSize: 8, idSize: 4, order: binary.LittleEndian, align: 2},
		fileID:    "RIFF", waveID: "WAVE", fmtID: "fmt ", dataID: "data", fileHdr: 12,
	}
	wav64Format = wavLike{
		iffFormat: iffFormat{name: "WAV64", hdrSize: 24, idSize: 16, size64: true, order: binary.LittleEndian, align: 8, sizeWithHdr: true},
		fileID:    w64RIFF, waveID: "wave" + w64Tail, fmtID: "fmt " + w64Tail, dataID: "data" + w64Tail, fileHdr: 40,
	}
)

func checkWAV(f *file) []Part   { return checkWAVLike(f, &wavFormat) }
func checkWAV64(f *file) []Part { return checkWAVLike(f, &wav64Format) }

// WAVE format codes.
const (
	wavePCM        = 0x0001
	waveFloat      = 0x0003
	waveExtensible = 0xfffe
)

func checkWAVLike(f *file, w *wavLike) []Part {
	id, ok := f.readFull(0, int64(len(w.fileID)))
	if !ok || string(id) != w.fileID {
		return nil
	}
	name := w.name
	p := &iffParser{f: f, fmt: &w.iffFormat, pos: w.fileHdr}
	h, ok := f.readFull(0, w.fileHdr)
	if !ok {
		f.opt.logf(Warn, "[%s] %s: unexpected end of file", name, f.opt.Path)
		return nil
	}
	var size uint64
	if w.size64 {
		size = le.Uint64(h[w.idSize:])
	} else {
		size = uint64(le.Uint32(h[w.idSize:]))
	}
	formOff := w.fileHdr - w.idSize
	if string(h[formOff:]) != w.waveID {
		return nil
	}
	expected := uint64(f.size)
	if !w.sizeWithHdr {
		expected -= uint64(formOff)
	}
	p.checkSize("file", size, expected)
	var (
		m     PCMMeta
		valid bool
	)
	for {
		c, ok := p.next()
		if !ok {
			return nil
		}
		switch c.id {
		case w.fmtID:
			switch c.size {
			case 16, 18, 40:
			case 20:
				if name != "WAV" {
					f.opt.logf(Warn, "[%s] %s: unexpected size for `%s` chunk: %d (expected 16, 18, 40)", name, f.opt.Path, c.id[:4], c.size)
					return nil
				}
				// Many broken files have a 20-byte fmt chunk.
				f.opt.logf(Info, "[%s] %s: accepting legacy 20-byte `fmt ` chunk", name, f.opt.Path)
			default:
				f.opt.logf(Warn, "[%s] %s: unexpected size for `%s` chunk: %d (expected 16, 18, 40)", name, f.opt.Path, c.id[:4], c.size)
				return nil
			}
			if valid {
				f.opt.logf(Warn, "[%s] %s: unexpected second `%s` chunk", name, f.opt.Path, c.id[:4])
				return nil
			}
			d, ok := p.data(c, c.size)
			if !ok {
				return nil
			}
			d = append(d, make([]byte, 40-len(d))...)
			code, chans, bits := le.Uint16(d[0:]), le.Uint16(d[2:]), le.Uint16(d[14:])
			ext := c.size == 40 && code == waveExtensible
			var sub uint16
			if ext {
				sub = le.Uint16(d[24:])
			}
			is := func(want uint16) bool {
				if ext {
					return sub == want
				}
				return code == want
			}
			if !is(wavePCM) {
				if is(waveFloat) {
					f.opt.logf(Info, "[%s] %s: floating point format not supported", name, f.opt.Path)
				} else {
					f.opt.logf(Warn, "[%s] %s: unsupported format: %d/%d", name, f.opt.Path, code, sub)
				}
				return nil
			}
			m = PCMMeta{Unsigned: bits <= 8, BitsPerSample: uint8(bits), Channels: chans}
			m.BytesPerSample = uint8((int(m.BitsPerSample) + 7) / 8)
			if valid = f.checkMeta(m, name); !valid {
				return nil
			}
		case w.dataID:
			if !valid {
				f.opt.logf(Warn, "[%s] %s: got `data` chunk without `fmt ` chunk", name, f.opt.Path)
				return nil
			}
			return p.pcmData(c, m, 0)
		}
	}
}

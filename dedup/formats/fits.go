package formats

import (
	"fmt"
	"io"
	"math/bits"
	"strings"
)

// fitsBlock is the FITS record size: headers and files are multiples of it.
const fitsBlock = 2880

// FITSMeta is the pixel layout of a FITS image: the category metadata of
// fits/image.
type FITSMeta struct {
	BigEndian      bool
	BytesPerSample uint8
	UnusedLSBs     uint8
	Components     uint16
}

func (m FITSMeta) valid() bool {
	// The subset the reference supports.
	return m.Components > 0 && m.BytesPerSample == 2 && m.UnusedLSBs <= 8 && m.BigEndian
}

func (m FITSMeta) String() string {
	e := "little"
	if m.BigEndian {
		e = "big"
	}
	return fmt.Sprintf("[%s-endian, bytes=%d, unused=%d, components=%d]", e, m.BytesPerSample, m.UnusedLSBs, m.Components)
}

// JSON is the category metadata the reference writes for the layout.
func (m FITSMeta) JSON() string {
	e := "little"
	if m.BigEndian {
		e = "big"
	}
	return jsonObject(map[string]any{
		"endianness": e, "bytes_per_sample": m.BytesPerSample,
		"unused_lsb_count": m.UnusedLSBs, "component_count": m.Components,
	})
}

func (m FITSMeta) sub() Sub {
	e := uint64(endianLittle)
	if m.BigEndian {
		e = endianBig
	}
	return Sub{Key: [6]uint64{e, uint64(m.BytesPerSample), uint64(m.UnusedLSBs), uint64(m.Components)}, JSON: m.JSON()}
}

// fitsHeader is what the detector needs from a FITS primary header.
type fitsHeader struct {
	headerSize int64
	imageSize  int64
	components uint16
}

// atoi parses a leading decimal integer (an optional minus sign and
// digits) as C++'s from_chars does; ok is false when there is none or it
// does not fit in an int32.
func atoi(s string) (int64, bool) {
	i, neg := 0, false
	if i < len(s) && s[i] == '-' {
		neg, i = true, 1
	}
	start := i
	var v int64
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		v = v*10 + int64(s[i]-'0')
		if v > 1<<31 {
			return 0, false
		}
	}
	if i == start {
		return 0, false
	}
	if neg {
		v = -v
	}
	if v > 1<<31-1 || v < -(1<<31) {
		return 0, false
	}
	return v, true
}

func printable(s []byte) bool {
	for _, c := range s {
		if c < 32 || c > 126 {
			return false
		}
	}
	return true
}

// parseFITS reads the primary header of a 2-dimensional 16-bit image.
func parseFITS(f *file) (fitsHeader, bool) {
	const col = 80
	h := fitsHeader{components: 1}
	simple := false
	pixelBits, xdim, ydim := int64(-1), int64(-1), int64(-1)
	values := 0
	for pos := int64(0); ; pos += col {
		row, ok := f.readFull(pos, col)
		if !ok || !printable(row) {
			return h, false
		}
		rv := string(row)
		keyword := strings.Trim(rv[:8], " ")
		if keyword == "COMMENT" || keyword == "HISTORY" || keyword == "CONTINUE" {
			continue
		}
		if pos >= 2*fitsBlock && values == 0 {
			// Very unlikely to be a FITS file.
			return h, false
		}
		if keyword == "" {
			continue
		}
		if keyword == "END" {
			if !simple || xdim == -1 || ydim == -1 || pixelBits == -1 {
				return h, false
			}
			// The header ends with the record the END line starts in
			// (the reference rounds the line's start up).
			h.headerSize = (pos + fitsBlock - 1) / fitsBlock * fitsBlock
			if xdim < 0 || ydim < 0 || (xdim > 0 && ydim > f.size/2/xdim) || xdim*ydim*2 > f.size-h.headerSize {
				f.opt.logf(Warn, "%s: image (%dx%d) does not fit in the file", f.opt.Path, xdim, ydim)
				return h, false
			}
			h.imageSize = xdim * ydim * 2
			return h, true
		}
		if rv[8] != '=' || rv[9] != ' ' {
			continue
		}
		value := rv[9:]
		values++
		if i := strings.IndexByte(value, '/'); i >= 0 {
			value = value[:i]
		}
		value = strings.Trim(value, " ")
		switch keyword {
		case "SIMPLE":
			if value != "T" {
				return h, false
			}
			simple = true
		case "BITPIX":
			if v, ok := atoi(value); ok {
				pixelBits = v
			}
			if pixelBits != 16 {
				return h, false
			}
		case "NAXIS":
			if value != "2" {
				return h, false
			}
		case "NAXIS1":
			if v, ok := atoi(value); ok {
				xdim = v
			}
		case "NAXIS2":
			if v, ok := atoi(value); ok {
				ydim = v
			}
		case "BAYERPAT":
			h.components = 2
		}
	}
}

// unusedLSBs counts the low bits that no big-endian 16-bit sample of the
// image sets (16 when all are zero).
func unusedLSBs(f *file, off, size int64) (uint8, bool) {
	var acc uint16
	buf := make([]byte, min(size, 1<<16))
	for size > 0 {
		n := min(size, int64(len(buf)))
		m, err := f.r.ReadAt(buf[:n], off)
		if int64(m) != n && err != nil {
			return 0, false
		}
		for i := 0; i+1 < int(n); i += 2 {
			acc |= uint16(buf[i])<<8 | uint16(buf[i+1])
		}
		if acc&1 != 0 {
			return 0, true
		}
		off += n
		size -= n
	}
	return uint8(bits.TrailingZeros16(acc)), true
}

// DetectFITS recognises a FITS file holding a 16-bit 2-dimensional image
// (the subset the reference handles) and returns its parts: the header
// and anything after the image as fits/metadata, the image as fits/image
// with its layout as subcategory; nil if the file is not one.
func DetectFITS(r io.ReaderAt, size int64, opt Options) []Part {
	if size < 2*fitsBlock || size%fitsBlock != 0 {
		return nil
	}
	f := &file{r: r, size: size, opt: &opt}
	h, ok := parseFITS(f)
	if !ok {
		return nil
	}
	unused, ok := unusedLSBs(f, h.headerSize, h.imageSize)
	if !ok {
		return nil
	}
	m := FITSMeta{BigEndian: true, BytesPerSample: 2, UnusedLSBs: unused, Components: h.components}
	if !m.valid() {
		f.opt.logf(Warn, "%s: metadata check failed: %v", f.opt.Path, m)
		return nil
	}
	if opt.Accept != nil {
		if err := opt.Accept(FITSImage, m.JSON()); err != nil {
			f.opt.logf(Warn, "%s: %v", f.opt.Path, err)
			return nil
		}
	}
	f.opt.logf(Trace, "%s: meta=%v", f.opt.Path, m)
	parts := []Part{{Category: FITSMetadata, Size: h.headerSize}, {Category: FITSImage, Size: h.imageSize, HasSub: true, Sub: m.sub()}}
	if rest := size - h.headerSize - h.imageSize; rest > 0 {
		parts = append(parts, Part{Category: FITSMetadata, Size: rest})
	}
	return parts
}

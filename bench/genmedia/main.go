// genmedia writes PCM audio files for the categorizer benchmarks: WAV,
// WAV64, AIFF and CAF at 8 to 32 bits, 1 to 6 channels and several sample
// rates, with the layouts the pcmaudio categorizer distinguishes (byte
// order, signedness, unused low bits). The signal is two drifting tones
// per channel plus a little noise, so FLAC packs it to roughly half, as it
// does real recordings; the same arguments always give the same bytes.
//
//	genmedia [-seconds S] DIR          the set of files, S seconds each
//	genmedia -wav FILE -size BYTES     one 16-bit stereo WAV of about BYTES
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// layout is how one file stores its samples.
type layout struct {
	name      string
	container string // wav, w64, aiff, caf
	bits      int    // significant bits
	bytes     int    // bytes per sample
	channels  int
	rate      int
	unsigned  bool
	bigEndian bool // caf only: the others have a fixed order
}

var layouts = []layout{
	{"u8-mono-8k.wav", "wav", 8, 1, 1, 8000, true, false},
	{"s16-stereo-44k.wav", "wav", 16, 2, 2, 44100, false, false},
	{"s16-6ch-48k.wav", "wav", 16, 2, 6, 48000, false, false},
	{"s24-stereo-96k.wav", "wav", 24, 3, 2, 96000, false, false},
	{"s32-mono-48k.wav", "wav", 32, 4, 1, 48000, false, false},
	{"s20in24-stereo-48k.wav", "wav", 20, 3, 2, 48000, false, false},
	{"s12in16-mono-16k.wav", "wav", 12, 2, 1, 16000, false, false},
	{"s8-mono-11k.aiff", "aiff", 8, 1, 1, 11025, false, false},
	{"s16-stereo-22k.aiff", "aiff", 16, 2, 2, 22050, false, false},
	{"s24-mono-32k.aiff", "aiff", 24, 3, 1, 32000, false, false},
	{"s32-stereo-44k.aiff", "aiff", 32, 4, 2, 44100, false, false},
	{"s20-stereo-48k.aiff", "aiff", 20, 3, 2, 48000, false, false},
	{"s16-stereo-44k.w64", "w64", 16, 2, 2, 44100, false, false},
	{"s24-6ch-48k.w64", "w64", 24, 3, 6, 48000, false, false},
	{"s16be-stereo-44k.caf", "caf", 16, 2, 2, 44100, false, true},
	{"s24le-stereo-48k.caf", "caf", 24, 3, 2, 48000, false, false},
}

func main() {
	seconds := flag.Float64("seconds", 4, "length of each file of the set")
	wav := flag.String("wav", "", "write one 16-bit stereo WAV to this file instead of the set")
	size := flag.Int64("size", 1<<30, "with -wav: its size in bytes (rounded down to whole frames)")
	flag.Parse()
	var err error
	switch {
	case *wav != "" && flag.NArg() == 0:
		l := layouts[1]
		err = writeFile(*wav, l, *size/int64(l.channels*l.bytes))
	case *wav == "" && flag.NArg() == 1:
		err = writeSet(flag.Arg(0), *seconds)
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "genmedia:", err)
		os.Exit(1)
	}
}

func writeSet(dir string, seconds float64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, l := range layouts {
		if err := writeFile(filepath.Join(dir, l.name), l, int64(seconds*float64(l.rate))); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes frames frames of l to path, through a temporary name.
func writeFile(path string, l layout, frames int64) (err error) {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	data := frames * int64(l.channels*l.bytes)
	if err = header(w, l, frames, data); err != nil {
		return err
	}
	if err = samples(w, l, frames); err != nil {
		return err
	}
	if l.container == "wav" && data%2 == 1 {
		w.WriteByte(0) // chunks are padded to even sizes
	}
	if err = w.Flush(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// header writes everything before the sample data.
func header(w io.Writer, l layout, frames, data int64) error {
	le, be := binary.LittleEndian, binary.BigEndian
	var b []byte
	switch l.container {
	case "wav":
		fmtChunk := le.AppendUint16(nil, 1) // PCM
		if l.bits != 8*l.bytes || l.channels > 2 {
			fmtChunk = le.AppendUint16(nil, 0xfffe) // extensible
		}
		fmtChunk = le.AppendUint16(fmtChunk, uint16(l.channels))
		fmtChunk = le.AppendUint32(fmtChunk, uint32(l.rate))
		fmtChunk = le.AppendUint32(fmtChunk, uint32(l.rate*l.channels*l.bytes))
		fmtChunk = le.AppendUint16(fmtChunk, uint16(l.channels*l.bytes))
		fmtChunk = le.AppendUint16(fmtChunk, uint16(8*l.bytes))
		if fmtChunk[0] == 0xfe {
			fmtChunk = le.AppendUint16(fmtChunk, 22)
			fmtChunk = le.AppendUint16(fmtChunk, uint16(l.bits))
			fmtChunk = le.AppendUint32(fmtChunk, 0)
			fmtChunk = append(fmtChunk, "\x01\x00\x00\x00\x00\x00\x10\x00\x80\x00\x00\xaa\x00\x38\x9b\x71"...)
		}
		if data > math.MaxUint32-64 {
			return errors.New("a WAV file holds less than 4 GiB")
		}
		body := 4 + 8 + len(fmtChunk) + 8 + int(data+data%2)
		b = append(b, "RIFF"...)
		b = le.AppendUint32(b, uint32(body))
		b = append(b, "WAVEfmt "...)
		b = le.AppendUint32(b, uint32(len(fmtChunk)))
		b = append(b, fmtChunk...)
		b = append(b, "data"...)
		b = le.AppendUint32(b, uint32(data))
	case "w64":
		const tail = "\xf3\xac\xd3\x11\x8c\xd1\x00\xc0\x4f\x8e\xdb\x8a"
		fmtChunk := le.AppendUint16(nil, 1)
		fmtChunk = le.AppendUint16(fmtChunk, uint16(l.channels))
		fmtChunk = le.AppendUint32(fmtChunk, uint32(l.rate))
		fmtChunk = le.AppendUint32(fmtChunk, uint32(l.rate*l.channels*l.bytes))
		fmtChunk = le.AppendUint16(fmtChunk, uint16(l.channels*l.bytes))
		fmtChunk = le.AppendUint16(fmtChunk, uint16(8*l.bytes))
		pad := func(n int64) int64 { return (n + 7) &^ 7 }
		total := 40 + 24 + pad(int64(len(fmtChunk))) + 24 + pad(data)
		b = append(b, "riff\x2e\x91\xcf\x11\xa5\xd6\x28\xdb\x04\xc1\x00\x00"...)
		b = le.AppendUint64(b, uint64(total))
		b = append(b, "wave"+tail...)
		b = append(b, "fmt "+tail...)
		b = le.AppendUint64(b, uint64(24+len(fmtChunk)))
		b = append(b, fmtChunk...)
		b = append(b, make([]byte, pad(int64(len(fmtChunk)))-int64(len(fmtChunk)))...)
		b = append(b, "data"+tail...)
		b = le.AppendUint64(b, uint64(24+data))
	case "aiff":
		comm := be.AppendUint16(nil, uint16(l.channels))
		comm = be.AppendUint32(comm, uint32(frames))
		comm = be.AppendUint16(comm, uint16(l.bits))
		comm = append(comm, extended(float64(l.rate))...)
		ssnd := 8 + data
		b = append(b, "FORM"...)
		b = be.AppendUint32(b, uint32(4+8+int64(len(comm))+8+ssnd+ssnd%2))
		b = append(b, "AIFFCOMM"...)
		b = be.AppendUint32(b, uint32(len(comm)))
		b = append(b, comm...)
		b = append(b, "SSND"...)
		b = be.AppendUint32(b, uint32(ssnd))
		b = be.AppendUint32(b, 0) // offset
		b = be.AppendUint32(b, 0) // block size
	case "caf":
		b = append(b, "caff"...)
		b = be.AppendUint16(b, 1)
		b = be.AppendUint16(b, 0)
		b = append(b, "desc"...)
		b = be.AppendUint64(b, 32)
		b = be.AppendUint64(b, math.Float64bits(float64(l.rate)))
		b = append(b, "lpcm"...)
		var flags uint32
		if !l.bigEndian {
			flags |= 2
		}
		b = be.AppendUint32(b, flags)
		b = be.AppendUint32(b, uint32(l.channels*l.bytes)) // bytes per packet
		b = be.AppendUint32(b, 1)                          // frames per packet
		b = be.AppendUint32(b, uint32(l.channels))
		b = be.AppendUint32(b, uint32(l.bits))
		b = append(b, "data"...)
		b = be.AppendUint64(b, uint64(4+data))
		b = be.AppendUint32(b, 0) // edit count
	default:
		return fmt.Errorf("unknown container %q", l.container)
	}
	_, err := w.Write(b)
	return err
}

// extended is the 80-bit IEEE extended float AIFF stores its rate in.
func extended(v float64) []byte {
	exp, mant := 0, uint64(0)
	if v > 0 {
		e := math.Floor(math.Log2(v))
		exp = 16383 + int(e)
		mant = uint64(v * math.Exp2(63-e))
	}
	b := binary.BigEndian.AppendUint16(nil, uint16(exp))
	return binary.BigEndian.AppendUint64(b, mant)
}

// samples writes the frames: per channel two tones that drift slowly in
// pitch, plus noise, at the high bits of each sample.
func samples(w io.Writer, l layout, frames int64) error {
	rng := rand.New(rand.NewPCG(uint64(l.bits)<<32|uint64(l.channels), uint64(l.rate)))
	amp := math.Exp2(float64(l.bits-1)) - 1
	shift := 8*l.bytes - l.bits
	little := l.container == "wav" || l.container == "w64" || (l.container == "caf" && !l.bigEndian)
	phase := make([]float64, 2*l.channels)
	buf := make([]byte, 0, 1<<16)
	for i := int64(0); i < frames; i++ {
		t := float64(i) / float64(l.rate)
		for c := 0; c < l.channels; c++ {
			f1 := 110 * float64(c+2) * (1 + 0.05*math.Sin(0.3*t+float64(c)))
			f2 := 3.01 * f1
			phase[2*c] += 2 * math.Pi * f1 / float64(l.rate)
			phase[2*c+1] += 2 * math.Pi * f2 / float64(l.rate)
			v := 0.45*math.Sin(phase[2*c]) + 0.15*math.Sin(phase[2*c+1]) + 0.004*rng.NormFloat64()
			s := int64(math.Round(max(-1, min(1, v)) * amp))
			u := uint64(s) << shift
			if l.unsigned {
				u += 1 << (8*l.bytes - 1)
			}
			for k := 0; k < l.bytes; k++ {
				sh := 8 * (l.bytes - 1 - k)
				if little {
					sh = 8 * k
				}
				buf = append(buf, byte(u>>sh))
			}
		}
		if len(buf) > cap(buf)-64 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	_, err := w.Write(buf)
	return err
}

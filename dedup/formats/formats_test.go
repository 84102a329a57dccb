package formats

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"testing"
)

// describe renders parts as "category:size" words, with the metadata JSON
// after a waveform or image and the key after a binary part.
func describe(parts []Part) string {
	var w []string
	for _, p := range parts {
		s := fmt.Sprintf("%s:%d", p.Category, p.Size)
		switch {
		case p.Sub.JSON != "":
			s += p.Sub.JSON
		case p.HasSub:
			s += fmt.Sprintf("#%x", p.Sub.Key[0])
		}
		w = append(w, s)
	}
	return strings.Join(w, " ")
}

// detect runs the detectors in the reference's implicit order.
func detect(b []byte, logf func(Level, string)) []Part {
	opt := Options{Path: "f", Log: logf}
	r := bytes.NewReader(b)
	if p := DetectFITS(r, int64(len(b)), opt); p != nil {
		return p
	}
	if p := DetectPCMAudio(r, int64(len(b)), opt); p != nil {
		return p
	}
	return DetectBinary(r, int64(len(b)), opt)
}

const (
	pcm16le = `{"bits_per_sample":16,"bytes_per_sample":2,"endianness":"little","number_of_channels":1,"padding":"lsb","signedness":"signed"}`
	pcm16be = `{"bits_per_sample":16,"bytes_per_sample":2,"endianness":"big","number_of_channels":1,"padding":"lsb","signedness":"signed"}`
	pcm24le = `{"bits_per_sample":24,"bytes_per_sample":3,"endianness":"little","number_of_channels":1,"padding":"lsb","signedness":"signed"}`
	pcm24be = `{"bits_per_sample":24,"bytes_per_sample":3,"endianness":"big","number_of_channels":1,"padding":"lsb","signedness":"signed"}`
	pcm8u   = `{"bits_per_sample":8,"bytes_per_sample":1,"endianness":"little","number_of_channels":1,"padding":"lsb","signedness":"unsigned"}`
	pcm8be  = `{"bits_per_sample":8,"bytes_per_sample":1,"endianness":"big","number_of_channels":1,"padding":"lsb","signedness":"signed"}`
	pcm32le = `{"bits_per_sample":32,"bytes_per_sample":4,"endianness":"little","number_of_channels":1,"padding":"lsb","signedness":"signed"}`
	pcm32be = `{"bits_per_sample":32,"bytes_per_sample":4,"endianness":"big","number_of_channels":1,"padding":"lsb","signedness":"signed"}`
)

// TestReferenceFiles runs the detectors on the reference's own test
// files (testdata/PROVENANCE).
func TestReferenceFiles(t *testing.T) {
	pm, pw := "pcmaudio/metadata:", "pcmaudio/waveform:"
	for _, tc := range []struct{ file, want string }{
		{"pcmaudio/test8.wav", pm + "44 " + pw + "7" + pcm8u + " " + pm + "1"},
		{"pcmaudio/test12.wav", pm + "44 " + pw + "14" + pcm16le},
		{"pcmaudio/test16.wav", pm + "44 " + pw + "14" + pcm16le},
		{"pcmaudio/test20.wav", pm + "80 " + pw + "21" + pcm24le + " " + pm + "1"},
		{"pcmaudio/test24.wav", pm + "80 " + pw + "21" + pcm24le + " " + pm + "1"},
		{"pcmaudio/test32.wav", pm + "80 " + pw + "28" + pcm32le},
		{"pcmaudio/test8.w64", pm + "104 " + pw + "7" + pcm8u},
		{"pcmaudio/test16.w64", pm + "104 " + pw + "14" + pcm16le},
		{"pcmaudio/test24.w64", pm + "104 " + pw + "21" + pcm24le},
		{"pcmaudio/test32.w64", pm + "104 " + pw + "28" + pcm32le},
		{"pcmaudio/test8.aiff", pm + "88 " + pw + "7" + pcm8be + " " + pm + "1"},
		{"pcmaudio/test16.aiff", pm + "88 " + pw + "14" + pcm16be},
		{"pcmaudio/test24.aiff", pm + "88 " + pw + "21" + pcm24be},
		{"pcmaudio/test32.aiff", pm + "88 " + pw + "28" + pcm32be},
		{"pcmaudio/test8.caf", pm + "4096 " + pw + "7" + pcm8be + " " + pm + "1"},
		{"pcmaudio/test16.caf", pm + "4096 " + pw + "14" + pcm16be},
		{"pcmaudio/test20.caf", pm + "4096 " + pw + "21" + pcm24be + " " + pm + "1"},
		{"pcmaudio/test32.caf", pm + "4096 " + pw + "28" + pcm32be},
		{"fits/dark.fits", `fits/metadata:2880 fits/image:5406{"bytes_per_sample":2,"component_count":1,"endianness":"big","unused_lsb_count":4} fits/metadata:354`},
		{"fits/test.fits", `fits/metadata:5760 fits/image:6144{"bytes_per_sample":2,"component_count":2,"endianness":"big","unused_lsb_count":2} fits/metadata:2496`},
		{"binary/elf-x86_64", "binary/elf:1024#20103000002003e"},
		{"binary/elf-i386", "binary/elf:1024#101030000020003"},
		{"binary/elf-ppc64", "binary/elf:1024#202030000030015"},
		{"binary/pe-amd64", "binary/pe:1024#20b00228664"},
		{"binary/macho-arm64", "binary/macho-section:16840#400002000000000c"},
		{"binary/macho-x86_64", "binary/macho-section:4272#4000020000300007"},
		{"binary/macho-arm64-x86_64", "binary/macho-header:4096 binary/macho-section:4272#4000020000300007 binary/macho-header:8016 binary/macho-section:16840#400002000000000c"},
		{"binary/macho-fat64-arm64-x86_64", "binary/macho-header:4096 binary/macho-section:4272#4000020000300007 binary/macho-header:8016 binary/macho-section:16840#400002000000000c"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile("testdata/ref/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(detect(b, nil)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// chunkW builds little-endian RIFF chunks; chunkB big-endian IFF ones.
func chunkW(id string, data []byte) []byte {
	b := append([]byte(id), binary.LittleEndian.AppendUint32(nil, uint32(len(data)))...)
	b = append(b, data...)
	if len(data)%2 == 1 {
		b = append(b, 0)
	}
	return b
}

func chunkB(id string, data []byte) []byte {
	b := append([]byte(id), binary.BigEndian.AppendUint32(nil, uint32(len(data)))...)
	b = append(b, data...)
	if len(data)%2 == 1 {
		b = append(b, 0)
	}
	return b
}

func fmtChunk(code, chans, bits uint16) []byte {
	le := binary.LittleEndian
	b := le.AppendUint16(nil, code)
	b = le.AppendUint16(b, chans)
	b = le.AppendUint32(b, 44100)
	b = le.AppendUint32(b, 44100*uint32(chans)*uint32(bits/8))
	b = le.AppendUint16(b, chans*((bits+7)/8))
	return le.AppendUint16(b, bits)
}

func wav(chunks ...[]byte) []byte {
	body := []byte("WAVE")
	for _, c := range chunks {
		body = append(body, c...)
	}
	return append(append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(len(body)))...), body...)
}

func aiff(chans uint16, frames uint32, bits uint16, pcm []byte, extra ...[]byte) []byte {
	be := binary.BigEndian
	comm := be.AppendUint16(nil, chans)
	comm = be.AppendUint32(comm, frames)
	comm = be.AppendUint16(comm, bits)
	comm = append(comm, 0x40, 0x0e, 0xac, 0x44, 0, 0, 0, 0, 0, 0) // 44100 as 80-bit float
	body := append([]byte("AIFF"), chunkB("COMM", comm)...)
	for _, e := range extra {
		body = append(body, e...)
	}
	body = append(body, chunkB("SSND", append(make([]byte, 8), pcm...))...)
	return append(append([]byte("FORM"), be.AppendUint32(nil, uint32(len(body)))...), body...)
}

func caf(flags, bpp, chans, bits uint32, dataSize uint64, pcm []byte) []byte {
	be := binary.BigEndian
	b := append([]byte("caff"), 0, 1, 0, 0)
	desc := be.AppendUint64(nil, 0x40e5888000000000)
	desc = append(desc, "lpcm"...)
	for _, v := range []uint32{flags, bpp, 1, chans, bits} {
		desc = be.AppendUint32(desc, v)
	}
	b = append(append(append(b, "desc"...), be.AppendUint64(nil, 32)...), desc...)
	b = append(append(b, "data"...), be.AppendUint64(nil, dataSize)...)
	return append(append(b, 0, 0, 0, 0), pcm...)
}

func w64(chans, bits uint16, pcm []byte) []byte {
	le := binary.LittleEndian
	ch := func(id string, data []byte) []byte {
		b := append([]byte(id+w64Tail), le.AppendUint64(nil, uint64(24+len(data)))...)
		b = append(b, data...)
		for len(b)%8 != 0 {
			b = append(b, 0)
		}
		return b
	}
	body := append(ch("fmt ", fmtChunk(1, chans, bits)), ch("data", pcm)...)
	b := append([]byte(w64RIFF), le.AppendUint64(nil, uint64(40+len(body)))...)
	return append(append(b, "wave"+w64Tail...), body...)
}

func TestPCMAudio(t *testing.T) {
	pm, pw := "pcmaudio/metadata:", "pcmaudio/waveform:"
	stereo16 := `{"bits_per_sample":16,"bytes_per_sample":2,"endianness":"little","number_of_channels":2,"padding":"lsb","signedness":"signed"}`
	ext := func(bits uint16, sub uint16) []byte {
		f := fmtChunk(0xfffe, 1, bits)
		f = binary.LittleEndian.AppendUint16(f, 22)
		f = binary.LittleEndian.AppendUint16(f, bits)
		f = binary.LittleEndian.AppendUint32(f, 4)
		f = binary.LittleEndian.AppendUint16(f, sub)
		return append(f, make([]byte, 14)...)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
		log  string // a message that must be logged
	}{
		{"wav8", wav(chunkW("fmt ", fmtChunk(1, 1, 8)), chunkW("data", make([]byte, 100))), pm + "44 " + pw + "100" + pcm8u, ""},
		{"wav16 stereo", wav(chunkW("fmt ", fmtChunk(1, 2, 16)), chunkW("data", make([]byte, 400))), pm + "44 " + pw + "400" + stereo16, ""},
		{"wav24", wav(chunkW("fmt ", fmtChunk(1, 1, 24)), chunkW("data", make([]byte, 300))), pm + "44 " + pw + "300" + pcm24le, ""},
		{"wav32", wav(chunkW("fmt ", fmtChunk(1, 1, 32)), chunkW("data", make([]byte, 400))), pm + "44 " + pw + "400" + pcm32le, ""},
		{"wav extensible", wav(chunkW("fmt ", ext(24, 1)), chunkW("data", make([]byte, 30))), pm + "68 " + pw + "30" + pcm24le, ""},
		{"wav trailing chunk", wav(chunkW("fmt ", fmtChunk(1, 1, 16)), chunkW("data", make([]byte, 40)), chunkW("LIST", make([]byte, 10))), pm + "44 " + pw + "40" + pcm16le + " " + pm + "18", ""},
		{"wav padded data", wav(chunkW("fmt ", fmtChunk(1, 2, 16)), chunkW("data", make([]byte, 42))), pm + "44 " + pw + "40" + stereo16 + " " + pm + "2", "padding byte"},
		{"wav legacy fmt", wav(chunkW("fmt ", append(fmtChunk(1, 1, 16), 0, 0, 0, 0)), chunkW("data", make([]byte, 40))), pm + "48 " + pw + "40" + pcm16le, "legacy 20-byte"},
		{"wav float", wav(chunkW("fmt ", fmtChunk(3, 1, 32)), chunkW("data", make([]byte, 40))), "", "floating point"},
		{"wav extensible float", wav(chunkW("fmt ", ext(32, 3)), chunkW("data", make([]byte, 40))), "", "floating point"},
		{"wav alaw", wav(chunkW("fmt ", fmtChunk(6, 1, 8)), chunkW("data", make([]byte, 40))), "", "unsupported format: 6/0"},
		{"wav 12 bits", wav(chunkW("fmt ", fmtChunk(1, 1, 12)), chunkW("data", make([]byte, 40))), "", "metadata check failed"},
		{"wav no channels", wav(chunkW("fmt ", fmtChunk(1, 0, 16)), chunkW("data", make([]byte, 40))), "", "metadata check failed"},
		{"wav data first", wav(chunkW("data", make([]byte, 40)), chunkW("fmt ", fmtChunk(1, 1, 16))), "", "got `data` chunk without `fmt ` chunk"},
		{"wav two fmt", wav(chunkW("fmt ", fmtChunk(1, 1, 16)), chunkW("fmt ", fmtChunk(1, 1, 16)), chunkW("data", make([]byte, 40))), "", "unexpected second"},
		{"wav bad fmt size", wav(chunkW("fmt ", fmtChunk(1, 1, 16)[:14]), chunkW("data", make([]byte, 40))), "", "unexpected size for `fmt ` chunk: 14"},
		{"wav truncated", wav(chunkW("fmt ", fmtChunk(1, 1, 16)), chunkW("data", make([]byte, 40)))[:70], "", "unexpected end of file"},
		{"wav too small", wav(chunkW("fmt ", fmtChunk(1, 1, 16)))[:31], "", ""},
		{"w64 16", w64(1, 16, make([]byte, 64)), pm + "104 " + pw + "64" + pcm16le, ""},
		{"aiff 16", aiff(1, 20, 16, make([]byte, 40)), pm + "54 " + pw + "40" + pcm16be, ""},
		{"aiff 24 comment", aiff(1, 10, 24, make([]byte, 30), chunkB("COMT", make([]byte, 5))), pm + "68 " + pw + "30" + pcm24be, ""},
		{"aiff short ssnd", aiff(1, 30, 16, make([]byte, 40)), "", "`SSND` invalid chunk size"},
		// Containers the reference does not handle: AIFF-C and RF64.
		{"aifc", func() []byte { b := aiff(1, 20, 16, make([]byte, 40)); copy(b[8:], "AIFC"); return b }(), "", ""},
		{"rf64", func() []byte {
			b := wav(chunkW("fmt ", fmtChunk(1, 1, 16)), chunkW("data", make([]byte, 40)))
			copy(b, "RF64")
			return b
		}(), "", ""},
		{"caf 16", caf(0, 2, 1, 16, 4+40, make([]byte, 40)), pm + "68 " + pw + "40" + pcm16be, ""},
		{"caf le to end", caf(2, 2, 1, 16, 1<<64-1, make([]byte, 40)), pm + "68 " + pw + "40" + pcm16le, ""},
		{"caf float", caf(1, 4, 1, 32, 44, make([]byte, 40)), "", "floating point"},
		{"caf packet too big", caf(0, 10, 2, 16, 44, make([]byte, 40)), "", "bytes per packet out of range"},
		{"caf zero packet", caf(0, 0, 1, 16, 44, make([]byte, 40)), "", "must not be zero"},
		{"caf empty data", caf(0, 2, 1, 16, 2, make([]byte, 40)), "", "too small"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs []string
			got := describe(detect(tc.data, func(_ Level, m string) { logs = append(logs, m) }))
			if got != tc.want {
				t.Errorf("got  %s\nwant %s\nlog: %q", got, tc.want, logs)
			}
			if tc.log != "" && !strings.Contains(strings.Join(logs, "\n"), tc.log) {
				t.Errorf("no log message with %q: %q", tc.log, logs)
			}
		})
	}
}

// fits builds a FITS file: header cards, padded to 2880, the image and
// padding to 2880.
func fits(cards []string, image []byte) []byte {
	var b []byte
	for _, c := range append(cards, "END") {
		b = append(b, fmt.Sprintf("%-80s", c)...)
	}
	for len(b)%2880 != 0 {
		b = append(b, ' ')
	}
	b = append(b, image...)
	for len(b)%2880 != 0 {
		b = append(b, 0)
	}
	return b
}

func card(k, v string) string { return fmt.Sprintf("%-8s= %20s / comment", k, v) }

func TestFITS(t *testing.T) {
	img := func(n int, v uint16) []byte {
		b := make([]byte, 2*n)
		for i := 0; i < n; i++ {
			binary.BigEndian.PutUint16(b[2*i:], v*uint16(i%7+1))
		}
		return b
	}
	hdr := func(bitpix string, extra ...string) []string {
		return append([]string{card("SIMPLE", "T"), card("BITPIX", bitpix), card("NAXIS", "2"), card("NAXIS1", "100"), card("NAXIS2", "30")}, extra...)
	}
	meta := func(unused, comps int) string {
		return fmt.Sprintf(`{"bytes_per_sample":2,"component_count":%d,"endianness":"big","unused_lsb_count":%d}`, comps, unused)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"16 bit", fits(hdr("16"), img(3000, 1<<4)), "fits/metadata:2880 fits/image:6000" + meta(4, 1) + " fits/metadata:2640"},
		{"16 bit bayer", fits(hdr("16", card("BAYERPAT", "'RGGB'"), "COMMENT hello"), img(3000, 1)), "fits/metadata:2880 fits/image:6000" + meta(0, 2) + " fits/metadata:2640"},
		{"8 bit", fits(hdr("8"), make([]byte, 3000)), ""},
		{"32 bit", fits(hdr("32"), make([]byte, 12000)), ""},
		{"-32 bit", fits(hdr("-32"), make([]byte, 12000)), ""},
		{"3 axes", fits([]string{card("SIMPLE", "T"), card("BITPIX", "16"), card("NAXIS", "3")}, make([]byte, 6000)), ""},
		{"not simple", fits([]string{card("SIMPLE", "F"), card("BITPIX", "16"), card("NAXIS", "2"), card("NAXIS1", "100"), card("NAXIS2", "30")}, img(3000, 1)), ""},
		{"all zero", fits(hdr("16"), make([]byte, 6000)), ""},
		{"image beyond file", fits([]string{card("SIMPLE", "T"), card("BITPIX", "16"), card("NAXIS", "2"), card("NAXIS1", "100000"), card("NAXIS2", "30")}, img(3000, 1)), ""},
		{"no END", fits(hdr("16"), img(3000, 1))[:2880*2], ""},
		{"too small", fits(hdr("16"), img(10, 1)), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs []string
			got := describe(detect(tc.data, func(_ Level, m string) { logs = append(logs, m) }))
			if got != tc.want {
				t.Errorf("got  %s\nwant %s\nlog: %q", got, tc.want, logs)
			}
		})
	}
}

func TestBinary(t *testing.T) {
	elf := func(class, data byte, typ, machine uint16) []byte {
		b := make([]byte, 128)
		copy(b, "\x7fELF")
		b[4], b[5], b[6], b[7] = class, data, 1, 3
		var o binary.ByteOrder = binary.LittleEndian
		if data == 2 {
			o = binary.BigEndian
		}
		o.PutUint16(b[16:], typ)
		o.PutUint16(b[18:], machine)
		return b
	}
	pe := func(lfanew uint32, size int) []byte {
		b := make([]byte, size)
		copy(b, "MZ")
		binary.LittleEndian.PutUint32(b[60:], lfanew)
		if int(lfanew)+26 <= size {
			copy(b[lfanew:], "PE\x00\x00")
			binary.LittleEndian.PutUint16(b[lfanew+4:], 0x8664)
			binary.LittleEndian.PutUint16(b[lfanew+22:], 0x22)
			binary.LittleEndian.PutUint16(b[lfanew+24:], 0x20b)
		}
		return b
	}
	thin := func(magic uint32, cpu uint32, size int) []byte {
		b := make([]byte, size)
		binary.BigEndian.PutUint32(b, magic)
		binary.LittleEndian.PutUint32(b[4:], cpu)
		binary.LittleEndian.PutUint32(b[8:], 3)
		binary.LittleEndian.PutUint32(b[12:], 2)
		return b
	}
	fat := func(archs ...[2]uint32) []byte {
		b := binary.BigEndian.AppendUint32(nil, fatMagic)
		b = binary.BigEndian.AppendUint32(b, uint32(len(archs)))
		end := 0
		for _, a := range archs {
			b = binary.BigEndian.AppendUint32(b, 7)
			b = binary.BigEndian.AppendUint32(b, 3)
			b = binary.BigEndian.AppendUint32(b, a[0])
			b = binary.BigEndian.AppendUint32(b, a[1])
			b = binary.BigEndian.AppendUint32(b, 12)
			end = max(end, int(a[0]+a[1]))
		}
		b = append(b, make([]byte, max(end+16, 64)-len(b))...)
		for _, a := range archs {
			copy(b[a[0]:], thin(mhCigam64, 7, 16))
		}
		return b
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"elf64 le", elf(2, 1, 3, 62), "binary/elf:128#20103000003003e"},
		{"elf32 be", elf(1, 2, 2, 8), "binary/elf:128#102030000020008"},
		{"elf bad version", func() []byte { b := elf(2, 1, 3, 62); b[6] = 2; return b }(), ""},
		{"elf too small", elf(2, 1, 3, 62)[:63], ""},
		{"pe", pe(64, 200), "binary/pe:200#20b00228664"},
		{"pe header beyond end", pe(190, 200), ""},
		{"mz only", pe(1000, 200), ""},
		{"macho64 le", thin(mhCigam64, 0x01000007, 100), "binary/macho-section:100#4000020000300007"},
		{"macho32 be", thin(mhMagic, 0x07000000, 100), "binary/macho-section:100#8000000000000007"},
		{"fat", fat([2]uint32{4096, 100}, [2]uint32{8192, 200}), "binary/macho-header:4096 binary/macho-section:100#4000020000300007 binary/macho-header:3996 binary/macho-section:200#4000020000300007 binary/macho-header:16"},
		{"fat unsorted", fat([2]uint32{8192, 200}, [2]uint32{4096, 100}), "binary/macho-header:4096 binary/macho-section:100#4000020000300007 binary/macho-header:3996 binary/macho-section:200#4000020000300007 binary/macho-header:16"},
		{"fat overlap", fat([2]uint32{4096, 5000}, [2]uint32{8192, 200}), ""},
		{"fat no archs", fat(), "binary/macho-header:64"},
		{"fat huge count", func() []byte { b := fat(); binary.BigEndian.PutUint32(b[4:], 1<<31); return b }(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := describe(detect(tc.data, nil)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestAccept checks that a compressor's requirements reject a file.
func TestAccept(t *testing.T) {
	b := wav(chunkW("fmt ", fmtChunk(1, 1, 16)), chunkW("data", make([]byte, 40)))
	var logs []string
	opt := Options{Path: "x.wav", Log: func(_ Level, m string) { logs = append(logs, m) },
		Accept: func(cat, js string) error {
			if cat != PCMWaveform || js != pcm16le {
				t.Errorf("asked about %s %s", cat, js)
			}
			return fmt.Errorf("16 bits not supported")
		}}
	if p := DetectPCMAudio(bytes.NewReader(b), int64(len(b)), opt); p != nil {
		t.Errorf("accepted: %v", describe(p))
	}
	if len(logs) == 0 || !strings.Contains(logs[len(logs)-1], "[WAV] x.wav: 16 bits not supported") {
		t.Errorf("log: %q", logs)
	}
}

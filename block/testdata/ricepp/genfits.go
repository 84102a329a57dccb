//go:build ignore

// genfits writes the small FITS files the RICEPP reference images were
// built from: 16-bit two-axis images (the only kind mkdwarfs puts into
// fits/image) with and without unused low bits, a Bayer image (two
// components), one with flat and saturated areas, and 8-bit, 32-bit,
// one-axis and three-axis files that must stay out of that category.
//
//	go run genfits.go [-big] DIR
//
// -big adds two 3000×2000 images (12 MB each, with 0 and 2 unused bits)
// for checks beyond the committed fixtures.
package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
)

const block = 2880 // FITS record size

func card(b *bytes.Buffer, key, value string) {
	var c string
	if value == "" {
		c = key
	} else {
		c = fmt.Sprintf("%-8s= %20s", key, value)
	}
	b.WriteString(fmt.Sprintf("%-80s", c))
}

func pad(b *bytes.Buffer, fill byte) {
	for b.Len()%block != 0 {
		b.WriteByte(fill)
	}
}

type spec struct {
	name   string
	bitpix int
	dims   []int
	lsb    int    // unused low bits (16-bit only)
	bayer  bool   // adds BAYERPAT: two components
	kind   string // "sky", "flat"
}

func (s spec) write(dir string) error {
	var b bytes.Buffer
	card(&b, "SIMPLE", "T")
	card(&b, "BITPIX", fmt.Sprint(s.bitpix))
	card(&b, "NAXIS", fmt.Sprint(len(s.dims)))
	n := 1
	for i, d := range s.dims {
		card(&b, fmt.Sprintf("NAXIS%d", i+1), fmt.Sprint(d))
		n *= d
	}
	if s.bayer {
		card(&b, "BAYERPAT", "'RGGB'")
	}
	card(&b, "COMMENT", "")
	card(&b, "END", "")
	pad(&b, ' ')
	r := rand.New(rand.NewPCG(uint64(len(s.name)), uint64(s.bitpix)))
	width := s.dims[0]
	for i := range n {
		x, y := float64(i%width), float64(i/width)
		v := 2000 + 800*math.Sin(x/13)*math.Cos(y/9) + r.NormFloat64()*25
		if s.bayer && i%2 == 1 {
			v *= 1.7
		}
		if s.kind == "flat" {
			switch {
			case int(y)%16 < 6:
				v = 1234
			case int(y)%16 < 9:
				v = float64(r.IntN(60000))
			}
		}
		if i%211 == 0 {
			v += 9000 // a star
		}
		switch s.bitpix {
		case 8:
			b.WriteByte(byte(int(v) >> 6))
		case 16:
			top := float64(int(1)<<(16-s.lsb) - 1)
			u := uint16(max(0, min(v, top))) << s.lsb
			b.Write(binary.BigEndian.AppendUint16(nil, u))
		case 32:
			b.Write(binary.BigEndian.AppendUint32(nil, uint32(int32(v*1000))))
		}
	}
	pad(&b, 0)
	return os.WriteFile(filepath.Join(dir, s.name), b.Bytes(), 0o644)
}

func main() {
	big := flag.Bool("big", false, "also write two large images")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: go run genfits.go [-big] DIR")
		os.Exit(2)
	}
	specs := []spec{
		{name: "sky16.fits", bitpix: 16, dims: []int{100, 60}, kind: "sky"},
		{name: "sky16-lsb3.fits", bitpix: 16, dims: []int{80, 50}, lsb: 3, kind: "sky"},
		{name: "bayer16-lsb2.fits", bitpix: 16, dims: []int{64, 40}, lsb: 2, bayer: true, kind: "sky"},
		{name: "flat16.fits", bitpix: 16, dims: []int{64, 64}, kind: "flat"},
		{name: "odd16.fits", bitpix: 16, dims: []int{37, 29}, kind: "sky"},
		{name: "sky8.fits", bitpix: 8, dims: []int{64, 40}, kind: "sky"},
		{name: "sky32.fits", bitpix: 32, dims: []int{40, 30}, kind: "sky"},
		{name: "line16.fits", bitpix: 16, dims: []int{1500}, kind: "sky"},
		{name: "cube16.fits", bitpix: 16, dims: []int{30, 20, 3}, kind: "sky"},
	}
	if *big {
		specs = append(specs,
			spec{name: "big16.fits", bitpix: 16, dims: []int{3000, 2000}, kind: "sky"},
			spec{name: "big16-lsb2.fits", bitpix: 16, dims: []int{3000, 2000}, lsb: 2, kind: "flat"})
	}
	for _, s := range specs {
		if err := s.write(flag.Arg(0)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

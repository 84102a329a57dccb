package metadata

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/godwarfs/godwarfs/internal/fixtures"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// fixtureImage holds the decompressed metadata-related sections of a test
// image, read with a small private section walker so these tests do not
// depend on the block package.
type fixtureImage struct {
	name    string
	minor   int
	schema  []byte
	data    []byte
	history [][]byte
}

func fixturePaths(t testing.TB) []string {
	t.Helper()
	paths := append(fixtures.Glob(t, "reference/images/*.dwarfs"), fixtures.Glob(t, "upstream/*.dwarfs")...)
	sort.Strings(paths)
	return paths
}

const dwarfsMagic = "DWARFS\x02"

// loadFixture finds the image start (after an optional prefix), walks the
// sections and decompresses schema, metadata and history.
func loadFixture(path string) (*fixtureImage, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	fi := &fixtureImage{name: filepath.Base(path)}
	for start := 0; ; start++ {
		i := bytes.Index(b[start:], []byte(dwarfsMagic))
		if i < 0 {
			return nil, fmt.Errorf("%s: no image found", path)
		}
		start += i
		if err := fi.walk(b[start:]); err == nil {
			return fi, nil
		}
	}
}

func (fi *fixtureImage) walk(img []byte) error {
	if len(img) < 8 {
		return io.ErrUnexpectedEOF
	}
	fi.minor = int(img[7])
	fi.schema, fi.data, fi.history = nil, nil, nil
	type sec struct {
		typ, comp int
		payload   []byte
	}
	var secs []sec
	if fi.minor < 2 {
		for p := 8; p < len(img); {
			if p+8 > len(img) {
				return io.ErrUnexpectedEOF
			}
			n := int(binary.LittleEndian.Uint32(img[p+4:]))
			if p+8+n > len(img) {
				return io.ErrUnexpectedEOF
			}
			secs = append(secs, sec{int(binary.LittleEndian.Uint16(img[p:])), int(img[p+2]), img[p+8 : p+8+n]})
			p += 8 + n
		}
	} else {
		for p, num := 0, 0; p < len(img); num++ {
			if p+64 > len(img) || string(img[p:p+7]) != dwarfsMagic {
				return fmt.Errorf("bad header at %d", p)
			}
			if int(binary.LittleEndian.Uint32(img[p+0x30:])) != num {
				return fmt.Errorf("bad section number at %d", p)
			}
			n := int(binary.LittleEndian.Uint64(img[p+0x38:]))
			if n < 0 || p+64+n > len(img) {
				return io.ErrUnexpectedEOF
			}
			secs = append(secs, sec{int(binary.LittleEndian.Uint16(img[p+0x34:])), int(binary.LittleEndian.Uint16(img[p+0x36:])), img[p+64 : p+64+n]})
			p += 64 + n
		}
	}
	for _, s := range secs {
		if s.typ != 7 && s.typ != 8 && s.typ != 10 {
			continue
		}
		d, err := decompressFixture(s.comp, s.payload)
		if err != nil {
			return err
		}
		switch s.typ {
		case 7:
			fi.schema = d
		case 8:
			fi.data = d
		case 10:
			fi.history = append(fi.history, d)
		}
	}
	if fi.schema == nil || fi.data == nil {
		return fmt.Errorf("no metadata sections")
	}
	return nil
}

func decompressFixture(comp int, p []byte) ([]byte, error) {
	switch comp {
	case 0:
		return p, nil
	case 1:
		r, err := xz.NewReader(bytes.NewReader(p))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(r)
	case 2:
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return d.DecodeAll(p, nil)
	}
	return nil, fmt.Errorf("compression %d not supported by the test helper", comp)
}

// forEachFixture runs fn on every fixture image whose metadata sections the
// helper can read; images it cannot read are skipped with the reason.
func forEachFixture(t *testing.T, fn func(t *testing.T, fi *fixtureImage)) {
	forEachFixtureWhere(t, nil, fn)
}

// forEachFixtureWhere is forEachFixture for the fixtures a test applies
// to: those for which leaveOut returns "" (nil keeps all). The others get
// no subtest of their own; the parent logs which and why.
func forEachFixtureWhere(t *testing.T, leaveOut func(fi *fixtureImage) string, fn func(t *testing.T, fi *fixtureImage)) {
	for _, p := range fixturePaths(t) {
		fi, err := loadFixture(p)
		if err != nil {
			t.Logf("skipping %s: %v", filepath.Base(p), err)
			continue
		}
		if leaveOut != nil {
			if why := leaveOut(fi); why != "" {
				t.Logf("not for %s: %s", fi.name, why)
				continue
			}
		}
		t.Run(fi.name, func(t *testing.T) { fn(t, fi) })
	}
}

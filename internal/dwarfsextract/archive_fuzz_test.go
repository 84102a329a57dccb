//go:build unix

package dwarfsextract

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs/metadata"
)

// arMember is an archive member as read back: its exact name, its type
// as in a manifest ('-', 'd', 'l', 'h' for a hard link, 'c', 'b', 'p'),
// a file's content or a link's target, and a device's numbers.
type arMember struct {
	name         string
	typ          byte
	data         string
	major, minor uint32
}

func (m arMember) String() string {
	return fmt.Sprintf("%c %q (%d bytes %.40q) %d:%d", m.typ, m.name, len(m.data), m.data, m.major, m.minor)
}

// readBack lists the members of an archive of format (pax, gnutar,
// ustar, zip, newc) in their order, with the standard library's readers
// and a strict newc parser.
func readBack(format string, b []byte) ([]arMember, error) {
	var out []arMember
	switch format {
	case "zip":
		zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
			return nil, err
		}
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				return nil, fmt.Errorf("%q: %w", f.Name, err)
			}
			data, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				return nil, fmt.Errorf("%q: %w", f.Name, err)
			}
			m := arMember{name: f.Name, data: string(data)}
			switch mode := f.Mode(); {
			case mode.IsDir():
				m.typ = 'd'
			case mode&fs.ModeSymlink != 0:
				m.typ = 'l'
			case mode.IsRegular():
				m.typ = '-'
			default:
				return nil, fmt.Errorf("%q: mode %v", f.Name, mode)
			}
			out = append(out, m)
		}
	case "newc":
		for pos := 0; ; {
			if pos+110 > len(b) {
				return nil, fmt.Errorf("truncated header at %d", pos)
			}
			h := b[pos : pos+110]
			if string(h[:6]) != "070701" {
				return nil, fmt.Errorf("bad magic at %d", pos)
			}
			var f [13]uint64
			for i := range f {
				v, err := strconv.ParseUint(string(h[6+8*i:14+8*i]), 16, 32)
				if err != nil {
					return nil, fmt.Errorf("field %d at %d: %w", i, pos, err)
				}
				f[i] = v
			}
			mode, size, namesize := f[1], int(f[6]), int(f[11])
			pos += 110
			if namesize < 1 || pos+namesize > len(b) || b[pos+namesize-1] != 0 {
				return nil, fmt.Errorf("bad name size %d at %d", namesize, pos)
			}
			name := string(b[pos : pos+namesize-1])
			if i := strings.IndexByte(name, 0); i >= 0 {
				name = name[:i] // as readers do
			}
			pos = (pos + namesize + 3) &^ 3
			if pos+size > len(b) {
				return nil, fmt.Errorf("%q: truncated body", name)
			}
			body := string(b[pos : pos+size])
			pos = (pos + size + 3) &^ 3
			if name == cpioTrailer {
				if pos != len(b) {
					return nil, fmt.Errorf("%d bytes after the trailer", len(b)-pos)
				}
				return out, nil
			}
			m := arMember{name: name, data: body}
			switch mode & metadata.ModeType {
			case metadata.ModeDir:
				m.typ = 'd'
			case metadata.ModeRegular, metadata.ModeSocket:
				m.typ = '-'
			case metadata.ModeSymlink:
				m.typ = 'l'
			case metadata.ModeChar, metadata.ModeBlock:
				m.typ, m.major, m.minor = 'c', uint32(f[9]), uint32(f[10])
				if mode&metadata.ModeType == metadata.ModeBlock {
					m.typ = 'b'
				}
			case metadata.ModeFIFO:
				m.typ = 'p'
			default:
				return nil, fmt.Errorf("%q: mode %o", name, mode)
			}
			out = append(out, m)
		}
	default:
		tr := tar.NewReader(bytes.NewReader(b))
		for {
			h, err := tr.Next()
			if err == io.EOF {
				return out, nil
			}
			if err != nil {
				return nil, err
			}
			m := arMember{name: h.Name}
			switch h.Typeflag {
			case tar.TypeDir:
				m.typ = 'd'
			case tar.TypeReg:
				data, err := io.ReadAll(tr)
				if err != nil {
					return nil, fmt.Errorf("%q: %w", h.Name, err)
				}
				m.typ, m.data = '-', string(data)
			case tar.TypeLink:
				m.typ, m.data = 'h', h.Linkname
			case tar.TypeSymlink:
				m.typ, m.data = 'l', h.Linkname
			case tar.TypeChar, tar.TypeBlock:
				m.typ, m.major, m.minor = 'c', uint32(h.Devmajor), uint32(h.Devminor)
				if h.Typeflag == tar.TypeBlock {
					m.typ = 'b'
				}
			case tar.TypeFifo:
				m.typ = 'p'
			default:
				return nil, fmt.Errorf("%q: type %q", h.Name, h.Typeflag)
			}
			out = append(out, m)
		}
	}
	return out, nil
}

var fuzzFormats = []string{"pax", "gnutar", "ustar", "zip", "newc"}

var fuzzTypes = []uint32{metadata.ModeRegular, metadata.ModeDir, metadata.ModeSymlink, metadata.ModeChar, metadata.ModeBlock, metadata.ModeFIFO, metadata.ModeSocket, 0 /* hard link */}

// expected is what reading back must give for e, added with content
// data and hard link name linkTo, in format.
func expected(format string, e entry, data, linkTo string) (arMember, bool) {
	m := arMember{name: e.path}
	switch e.in.Mode & metadata.ModeType {
	case metadata.ModeDir:
		m.typ = 'd'
		if format != "newc" {
			m.name += "/"
		}
	case metadata.ModeRegular:
		m.typ, m.data = '-', data
		if linkTo != "" && format != "zip" && format != "newc" {
			m.typ, m.data = 'h', linkTo
		}
	case metadata.ModeSymlink:
		m.typ, m.data = 'l', data
	case metadata.ModeChar, metadata.ModeBlock:
		if format == "zip" {
			return m, false
		}
		m.typ, m.major, m.minor = 'c', unix.Major(e.in.Rdev), unix.Minor(e.in.Rdev)
		if e.in.Mode&metadata.ModeType == metadata.ModeBlock {
			m.typ = 'b'
		}
	case metadata.ModeFIFO:
		if format == "zip" {
			return m, false
		}
		m.typ = 'p'
	case metadata.ModeSocket:
		if format == "zip" {
			return m, false
		}
		m.typ = '-' // stored as an empty file
	}
	return m, true
}

// FuzzArchiveNames writes one member (or a file and a hard link to it)
// with an arbitrary name, link target, size and times in every archive
// format, followed by a plain member. Each member must either be
// refused with an error, or read back with the standard readers under
// exactly its name with its content; a body shorter than announced must
// fail the member. When a member is refused the archive either goes on
// (and then holds everything else) or cannot be finished at all.
func FuzzArchiveNames(f *testing.F) {
	long := strings.Repeat("d/", 60) + "file"
	for _, s := range []struct {
		format, typ  uint8
		name, target string
		size         uint16
		short        bool
		mtime        int64
	}{
		{0, 0, "a/hello.txt", "", 6, false, 1700000000},
		{1, 1, "a/b", "", 0, false, 0},
		{2, 2, "link", "../target", 9, false, -1},
		{3, 3, "dev/null", "", 0, false, 1 << 40},
		{4, 7, "second", "first", 5, false, 5},
		{0, 7, long, long + "2", 3, false, 0},
		{1, 2, long, long, uint16(len(long)), false, 0},
		{2, 0, long, "", 1, false, 0},
		{2, 0, "héllo", "", 1, false, 0},
		{4, 0, "TRAILER!!!", "", 1, false, 0},
		{4, 0, "nul\x00name", "", 1, false, 0},
		{0, 0, "nul\x00name", "", 1, false, 0},
		{3, 0, "dir/", "", 2, false, 0},
		{3, 0, "short", "", 100, true, 0},
		{4, 2, "sym", "target", 6, true, 0},
		{0, 6, "sock", "", 0, false, 0},
		{3, 5, "fifo", "", 0, false, 0},
	} {
		f.Add(s.format, s.typ, s.name, s.target, s.size, s.short, s.mtime, uint32(0o644), uint64(0x0801))
	}
	f.Fuzz(func(t *testing.T, format, typ uint8, name, target string, size uint16, short bool, mtime int64, perm uint32, rdev uint64) {
		spec := archiveSpec{format: fuzzFormats[int(format)%len(fuzzFormats)]}
		kind := fuzzTypes[int(typ)%len(fuzzTypes)]
		in := metadata.Inode{Mode: perm & 0o7777, Uid: perm >> 16, Gid: perm >> 20, Mtime: metadata.Time{Sec: mtime}, Atime: metadata.Time{Sec: mtime / 2}, Rdev: rdev}
		content := strings.Repeat("0123456789abcdef", int(size)/16+1)[:size]
		type add struct {
			e      entry
			size   int64
			data   string // what the reader yields
			linkTo string
		}
		var adds []add
		switch kind {
		case 0: // target, then name as a hard link to it
			in.Mode |= metadata.ModeRegular
			adds = append(adds, add{entry{target, 7, in}, int64(size), content, ""}, add{entry{name, 7, in}, int64(size), content, target})
		case metadata.ModeSymlink:
			in.Mode |= kind
			adds = append(adds, add{entry{name, 1, in}, int64(len(target)), target, ""})
		case metadata.ModeRegular:
			in.Mode |= kind
			adds = append(adds, add{entry{name, 1, in}, int64(size), content, ""})
		default:
			in.Mode |= kind
			adds = append(adds, add{entry{name, 1, in}, 0, "", ""})
		}
		if short {
			a := &adds[len(adds)-1]
			a.data = a.data[:len(a.data)/2]
		}
		end := entry{"zz-end", 99, metadata.Inode{Mode: metadata.ModeRegular | 0o600}}
		adds = append(adds, add{end, 3, "end", ""})
		ents := &tree{}
		for _, a := range adds {
			ents.nodes = append(ents.nodes, node{name: a.e.path, parent: -1, ino: a.e.ino, mode: a.e.in.Mode})
		}
		var buf bytes.Buffer
		w, err := newEntryWriter(&buf, spec, ents, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		isTar := spec.format != "zip" && spec.format != "newc"
		// In newc the data of a file goes with its last name the writer
		// can store.
		lastLink := -1
		for i, a := range adds {
			if a.e.ino == 7 && cpioNameErr(a.e.path) == nil {
				lastLink = i
			}
		}
		var want []arMember
		refused, firstOK := false, false
		for i, a := range adds {
			var data io.Reader
			if kind := a.e.in.Mode & metadata.ModeType; kind == metadata.ModeRegular || kind == metadata.ModeSymlink {
				data = strings.NewReader(a.data)
			}
			if a.linkTo != "" && !firstOK {
				a.linkTo = "" // as archiveEntry: only a stored name is linked to
			}
			if err := w.add(a.e, a.size, data, a.linkTo); err != nil {
				refused = true
				continue
			}
			if a.e.ino == 7 && a.linkTo == "" {
				firstOK = true
			}
			if int64(len(a.data)) < a.size && !(isTar && a.linkTo != "") && !(spec.format == "newc" && a.e.ino == 7 && i != lastLink) {
				t.Fatalf("%s: %d-byte body of %d accepted for %q", spec.format, len(a.data), a.size, a.e.path)
			}
			m, ok := expected(spec.format, a.e, a.data, a.linkTo)
			if !ok {
				continue
			}
			if spec.format == "newc" && a.e.ino == 7 && i != lastLink {
				m.data = ""
			}
			want = append(want, m)
		}
		if err := w.close(); err != nil {
			return // the archive is not finished, and writeArchive removes it
		}
		got, err := readBack(spec.format, buf.Bytes())
		if err != nil {
			t.Fatalf("%s: a finished archive does not read back: %v", spec.format, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s (refused some: %v):\n got  %v\n want %v", spec.format, refused, got, want)
		}
	})
}

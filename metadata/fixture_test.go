package metadata

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/internal/fixtures"

	"github.com/godwarfs/godwarfs/block"
)

// imageSections holds the decompressed metadata sections of one image.
type imageSections struct {
	schema, data []byte
	history      [][]byte
}

func decLoadSections(path string) (*imageSections, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	im, err := block.OpenImage(fh, st.Size(), block.Options{ImageOffset: -1, Name: path})
	if err != nil {
		return nil, err
	}
	one := func(t block.SectionType) ([]byte, error) {
		ss := im.Find(t)
		if len(ss) != 1 {
			return nil, fmt.Errorf("%d sections of type %v", len(ss), t)
		}
		return im.ReadDecompressed(ss[0])
	}
	out := &imageSections{}
	if out.schema, err = one(block.SectionMetadataSchema); err != nil {
		return nil, err
	}
	if out.data, err = one(block.SectionMetadata); err != nil {
		return nil, err
	}
	for _, s := range im.Find(block.SectionHistory) {
		h, err := im.ReadDecompressed(s)
		if err != nil {
			return nil, err
		}
		out.history = append(out.history, h)
	}
	return out, nil
}

func decGlobFixtures(t testing.TB, pattern string) []string {
	t.Helper()
	return fixtures.Glob(t, pattern)
}

type manifestRow struct {
	path    string
	symMode string
	uid     uint32
	gid     uint32
	size    int64
	sec     int64
	nsec    uint32
	nlink   uint32
	extra   string
}

func readManifest(path string) ([]manifestRow, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var rows []manifestRow
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		p, rest, ok := strings.Cut(line, "\t")
		if !ok {
			return nil, fmt.Errorf("bad manifest line %q", line)
		}
		fields := strings.SplitN(rest, " ", 8)
		if len(fields) < 7 {
			return nil, fmt.Errorf("bad manifest line %q", line)
		}
		r := manifestRow{path: p, symMode: fields[0]}
		u, _ := strconv.ParseUint(fields[2], 10, 32)
		g, _ := strconv.ParseUint(fields[3], 10, 32)
		r.uid, r.gid = uint32(u), uint32(g)
		r.size, _ = strconv.ParseInt(fields[4], 10, 64)
		secs, nsecs, _ := strings.Cut(fields[5], ".")
		r.sec, _ = strconv.ParseInt(secs, 10, 64)
		ns, _ := strconv.ParseUint(nsecs, 10, 32)
		r.nsec = uint32(ns)
		nl, _ := strconv.ParseUint(fields[6], 10, 32)
		r.nlink = uint32(nl)
		if len(fields) == 8 {
			r.extra = fields[7]
		}
		rows = append(rows, r)
	}
	return rows, sc.Err()
}

// symbolicMode renders st_mode like ls -l (with setuid/setgid/sticky).
func symbolicMode(m uint32) string {
	var b [10]byte
	switch m & ModeType {
	case ModeDir:
		b[0] = 'd'
	case ModeSymlink:
		b[0] = 'l'
	case ModeRegular:
		b[0] = '-'
	case ModeBlock:
		b[0] = 'b'
	case ModeChar:
		b[0] = 'c'
	case ModeFIFO:
		b[0] = 'p'
	case ModeSocket:
		b[0] = 's'
	default:
		b[0] = '?'
	}
	const rwx = "rwxrwxrwx"
	for i := range 9 {
		if m&(1<<(8-i)) != 0 {
			b[1+i] = rwx[i]
		} else {
			b[1+i] = '-'
		}
	}
	special := func(bit uint32, idx int, set, unsetExec byte) {
		if m&bit != 0 {
			if b[idx] == 'x' {
				b[idx] = set
			} else {
				b[idx] = unsetExec
			}
		}
	}
	special(0o4000, 3, 's', 'S')
	special(0o2000, 6, 's', 'S')
	special(0o1000, 9, 't', 'T')
	return string(b[:])
}

func linuxMajorMinor(dev uint64) (uint64, uint64) {
	major := (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor := dev&0xff | (dev>>12)&^0xff
	return major, minor
}

// checkAgainstManifest compares the FS view with an expected manifest.
func checkAgainstManifest(t *testing.T, f *FS, rows []manifestRow) {
	t.Helper()
	got := map[string]Inode{}
	gotIno := map[string]uint32{}
	err := f.Walk(func(p string, ino uint32, in Inode) error {
		if p == "" {
			return nil
		}
		if _, dup := got[p]; dup {
			return fmt.Errorf("duplicate path %q", p)
		}
		got[p], gotIno[p] = in, ino
		return nil
	})
	if err != nil {
		t.Fatalf("Walk: %v", err)
	}
	if len(got) != len(rows) {
		t.Errorf("walk found %d paths, manifest has %d", len(got), len(rows))
	}
	sec, _ := f.TimeResolution()
	for _, r := range rows {
		in, ok := got[r.path]
		if !ok {
			t.Errorf("%s: missing", r.path)
			continue
		}
		ino := gotIno[r.path]
		if lp, err := f.LookupPath(r.path); err != nil || lp != ino {
			t.Errorf("%s: LookupPath = %d, %v; want %d", r.path, lp, err, ino)
		}
		s := symbolicMode(in.Mode)
		switch {
		case s[0] == 'l':
			// Extracted symlinks always show 0777 on Linux.
			s = s[:1] + r.symMode[1:]
		case s[0] == 's' && r.symMode[0] == '-':
			// Extraction cannot create sockets and writes regular files.
			s = "-" + s[1:]
		}
		if s != r.symMode {
			t.Errorf("%s: mode %s, want %s", r.path, s, r.symMode)
		}
		if in.Uid != r.uid || in.Gid != r.gid {
			t.Errorf("%s: uid/gid %d/%d, want %d/%d", r.path, in.Uid, in.Gid, r.uid, r.gid)
		}
		if (in.Mtime.Sec != r.sec || in.Mtime.Nsec != r.nsec) && !legacyLinkTime(f, ino, r) {
			t.Errorf("%s: mtime %d.%09d, want %d.%09d (resolution %d s)", r.path, in.Mtime.Sec, in.Mtime.Nsec, r.sec, r.nsec, sec)
		}
		switch in.Mode & ModeType {
		case ModeRegular:
			if in.Size != r.size {
				t.Errorf("%s: size %d, want %d", r.path, in.Size, r.size)
			}
			if in.Nlink != r.nlink {
				t.Errorf("%s: nlink %d, want %d", r.path, in.Nlink, r.nlink)
			}
			chunks, err := f.FileChunks(ino)
			if err != nil {
				t.Errorf("%s: FileChunks: %v", r.path, err)
			}
			var sum uint64
			for _, c := range chunks {
				sum += c.Size
			}
			if int64(sum) != in.Size {
				t.Errorf("%s: chunks sum to %d, size %d", r.path, sum, in.Size)
			}
			if in.AllocatedSize > in.Size {
				t.Errorf("%s: allocated %d > size %d", r.path, in.AllocatedSize, in.Size)
			}
		case ModeSymlink:
			target, err := f.Readlink(ino)
			if err != nil || "-> "+target != r.extra {
				t.Errorf("%s: readlink %q, %v; want %q", r.path, target, err, r.extra)
			}
			if in.Size != r.size {
				t.Errorf("%s: symlink size %d, want %d", r.path, in.Size, r.size)
			}
		case ModeDir:
			ents, err := f.ReadDir(ino)
			if err != nil || int64(len(ents)) != in.Size {
				t.Errorf("%s: ReadDir %d entries, %v; size %d", r.path, len(ents), err, in.Size)
			}
			if in.Nlink != 1 {
				t.Errorf("%s: dir nlink %d", r.path, in.Nlink)
			}
		case ModeChar, ModeBlock:
			ma, mi := linuxMajorMinor(in.Rdev)
			if want := fmt.Sprintf("rdev=%d:%d", ma, mi); want != r.extra {
				t.Errorf("%s: %s, want %s", r.path, want, r.extra)
			}
		}
	}
}

func expectedManifest(img string) string {
	dir, base := filepath.Split(img)
	if filepath.Base(dir) == "images" {
		dir = filepath.Join(dir, "..") // reference/images -> reference/expected
	}
	return filepath.Join(dir, "expected", strings.TrimSuffix(base, ".dwarfs")+".manifest.tsv")
}

func TestFixtures(t *testing.T) {
	imgs := append(decGlobFixtures(t, "upstream/*.dwarfs"), decGlobFixtures(t, "reference/images/*.dwarfs")...)
	for _, img := range imgs {
		name := strings.TrimSuffix(filepath.Base(img), ".dwarfs")
		t.Run(name, func(t *testing.T) {
			secs, err := decLoadSections(img)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			md, err := Decode(secs.schema, secs.data)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			for i, h := range secs.history {
				if _, err := DecodeHistory(h); err != nil {
					t.Errorf("history %d: %v", i, err)
				}
			}
			f, err := NewFS(md)
			if name == "future-features" {
				if err == nil || !strings.Contains(err.Error(), "this-feature-will-never-exist") {
					t.Fatalf("NewFS = %v, want refusal naming the feature", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewFS: %v", err)
			}
			if err := f.Check(); err != nil {
				t.Errorf("Check: %v", err)
			}
			rows, err := readManifest(expectedManifest(img))
			if errors.Is(err, os.ErrNotExist) {
				t.Fatalf("no expected manifest for %s", name)
			}
			if err != nil {
				t.Fatal(err)
			}
			checkAgainstManifest(t, f, rows)
		})
	}
}

// legacyLinkTime reports whether, in a <= 2.2 image, some entry of the
// hard-link group of ino carries the expected mtime. Such images store
// attributes per entry; Inode reports the entry_table_v2_2 representative
// (as upstream's getattr does) while extraction tools may apply another
// entry's attributes last.
func legacyLinkTime(f *FS, ino uint32, r manifestRow) bool {
	md := f.Metadata()
	if md.HasDirEntries {
		return false
	}
	sec, _ := f.TimeResolution()
	for _, e := range md.Inodes {
		if e.InodeV22 == ino && int64(sec)*int64(md.TimestampBase+e.MtimeOffset) == r.sec {
			return true
		}
	}
	return false
}

package metadata

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/manifest"

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
func checkAgainstManifest(t *testing.T, f *FS, rows []manifest.Entry) {
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
		in, ok := got[r.Path]
		if !ok {
			t.Errorf("%s: missing", r.Path)
			continue
		}
		ino := gotIno[r.Path]
		if lp, err := f.LookupPath(r.Path); err != nil || lp != ino {
			t.Errorf("%s: LookupPath = %d, %v; want %d", r.Path, lp, err, ino)
		}
		s := symbolicMode(in.Mode)
		switch {
		case s[0] == 'l':
			// Extracted symlinks always show 0777 on Linux.
			s = s[:1] + r.Symbolic[1:]
		case s[0] == 's' && r.Symbolic[0] == '-':
			// Extraction cannot create sockets and writes regular files.
			s = "-" + s[1:]
		}
		if s != r.Symbolic {
			t.Errorf("%s: mode %s, want %s", r.Path, s, r.Symbolic)
		}
		if in.Uid != r.Uid || in.Gid != r.Gid {
			t.Errorf("%s: uid/gid %d/%d, want %d/%d", r.Path, in.Uid, in.Gid, r.Uid, r.Gid)
		}
		if (in.Mtime.Sec != r.Sec || int64(in.Mtime.Nsec) != r.Nsec) && !legacyLinkTime(f, ino, r) {
			t.Errorf("%s: mtime %d.%09d, want %d.%09d (resolution %d s)", r.Path, in.Mtime.Sec, in.Mtime.Nsec, r.Sec, r.Nsec, sec)
		}
		switch in.Mode & ModeType {
		case ModeRegular:
			if in.Size != r.Size {
				t.Errorf("%s: size %d, want %d", r.Path, in.Size, r.Size)
			}
			if int(in.Nlink) != r.Nlink {
				t.Errorf("%s: nlink %d, want %d", r.Path, in.Nlink, r.Nlink)
			}
			chunks, err := f.FileChunks(ino)
			if err != nil {
				t.Errorf("%s: FileChunks: %v", r.Path, err)
			}
			var sum uint64
			for _, c := range chunks {
				sum += c.Size
			}
			if int64(sum) != in.Size {
				t.Errorf("%s: chunks sum to %d, size %d", r.Path, sum, in.Size)
			}
			if in.AllocatedSize > in.Size {
				t.Errorf("%s: allocated %d > size %d", r.Path, in.AllocatedSize, in.Size)
			}
		case ModeSymlink:
			target, err := f.Readlink(ino)
			if err != nil || target != r.Target {
				t.Errorf("%s: readlink %q, %v; want %q", r.Path, target, err, r.Target)
			}
			if in.Size != r.Size {
				t.Errorf("%s: symlink size %d, want %d", r.Path, in.Size, r.Size)
			}
		case ModeDir:
			ents, err := f.ReadDir(ino)
			if err != nil || int64(len(ents)) != in.Size {
				t.Errorf("%s: ReadDir %d entries, %v; size %d", r.Path, len(ents), err, in.Size)
			}
			if in.Nlink != 1 {
				t.Errorf("%s: dir nlink %d", r.Path, in.Nlink)
			}
		case ModeChar, ModeBlock:
			ma, mi := linuxMajorMinor(in.Rdev)
			if !r.HasRdev || ma != uint64(r.Major) || mi != uint64(r.Minor) {
				t.Errorf("%s: rdev %d:%d, want %d:%d", r.Path, ma, mi, r.Major, r.Minor)
			}
		}
	}
}

func TestFixtures(t *testing.T) {
	for _, img := range fixtures.Good(t) {
		t.Run(img.Name, func(t *testing.T) {
			secs, err := decLoadSections(img.Path)
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
			if err != nil {
				t.Fatalf("NewFS: %v", err)
			}
			if err := f.Check(); err != nil {
				t.Errorf("Check: %v", err)
			}
			if img.Manifest == "" {
				t.Fatalf("no expected manifest for %s", img.Name)
			}
			rows, err := manifest.ParseFile(img.Manifest)
			if err != nil {
				t.Fatal(err)
			}
			checkAgainstManifest(t, f, rows)

			// The same through DecodeLazy, which leaves the inodes packed.
			lazy, err := DecodeLazy(secs.schema, secs.data)
			if err != nil {
				t.Fatalf("DecodeLazy: %v", err)
			}
			if err := sameInodes(md, lazy); err != nil {
				t.Error(err)
			}
			lf, err := NewFS(lazy)
			if err != nil {
				t.Fatalf("NewFS (lazy): %v", err)
			}
			if err := lf.Check(); err != nil {
				t.Errorf("Check (lazy): %v", err)
			}
			checkAgainstManifest(t, lf, rows)
			// Inode reads only some fields of a packed inode: every
			// attribute must still match the thawed table's.
			for ino := range uint32(f.InodeCount()) {
				want, werr := f.Inode(ino)
				got, gerr := lf.Inode(ino)
				if got != want || (werr == nil) != (gerr == nil) {
					t.Fatalf("Inode(%d) lazy = %+v, %v; want %+v, %v", ino, got, gerr, want, werr)
				}
			}
			if got := lf.Metadata().Inodes; len(got) != len(md.Inodes) {
				t.Errorf("Metadata() of lazy FS has %d inodes, want %d", len(got), len(md.Inodes))
			}
		})
	}
}

// sameInodes checks that lazy (from DecodeLazy) reads the inodes table of
// full (from Decode) element for element.
func sameInodes(full, lazy *Metadata) error {
	if n := lazy.InodeCount(); n != len(full.Inodes) {
		return fmt.Errorf("lazy decode: %d inodes, want %d", n, len(full.Inodes))
	}
	if lazy.HasDirEntries && len(full.Inodes) > 0 && !lazy.Lazy() {
		return fmt.Errorf("lazy decode of a 2.3+ image thawed the inodes")
	}
	for i, want := range full.Inodes {
		if got := lazy.InodeAt(i); got != want {
			return fmt.Errorf("lazy decode: inodes[%d] = %+v, want %+v", i, got, want)
		}
	}
	th := lazy.Thawed()
	if len(th.Inodes) != len(full.Inodes) || (len(full.Inodes) > 0 && th.Inodes[len(th.Inodes)-1] != full.Inodes[len(full.Inodes)-1]) {
		return fmt.Errorf("Thawed: %d inodes, want %d", len(th.Inodes), len(full.Inodes))
	}
	// The other tables DecodeLazy leaves packed.
	if n := lazy.ChunkCount(); n != len(full.Chunks) {
		return fmt.Errorf("lazy decode: %d chunks, want %d", n, len(full.Chunks))
	}
	for i, want := range full.Chunks {
		if got := lazy.ChunkAt(i); got != want {
			return fmt.Errorf("lazy decode: chunks[%d] = %+v, want %+v", i, got, want)
		}
	}
	if n := lazy.DirEntryCount(); n != len(full.DirEntries) || lazy.HasDirEntries != full.HasDirEntries {
		return fmt.Errorf("lazy decode: %d dir_entries (set %v), want %d (%v)", n, lazy.HasDirEntries, len(full.DirEntries), full.HasDirEntries)
	}
	for i, want := range full.DirEntries {
		if got := lazy.DirEntryAt(i); got != want {
			return fmt.Errorf("lazy decode: dir_entries[%d] = %+v, want %+v", i, got, want)
		}
	}
	if n := lazy.chunkTableLen(); n != len(full.ChunkTable) {
		return fmt.Errorf("lazy decode: %d chunk_table entries, want %d", n, len(full.ChunkTable))
	}
	for i, want := range full.ChunkTable {
		if got := lazy.chunkTableAt(i); got != want {
			return fmt.Errorf("lazy decode: chunk_table[%d] = %d, want %d", i, got, want)
		}
	}
	if !slices.Equal(th.Chunks, full.Chunks) || !slices.Equal(th.DirEntries, full.DirEntries) || !slices.Equal(th.ChunkTable, full.ChunkTable) {
		return fmt.Errorf("Thawed: chunks, dir_entries or chunk_table differ from Decode's")
	}
	if n := lazy.SharedFilesTable; n == nil && lazy.sharedTbl != nil {
		if lazy.sharedTbl.n != len(full.SharedFilesTable) {
			return fmt.Errorf("lazy decode: %d shared_files_table entries, want %d", lazy.sharedTbl.n, len(full.SharedFilesTable))
		}
		for i, want := range full.SharedFilesTable {
			if got := uint32(lazy.sharedTbl.get(i, 0)); got != want {
				return fmt.Errorf("lazy decode: shared_files_table[%d] = %d, want %d", i, got, want)
			}
		}
	} else if lazy.HasDirEntries && len(full.SharedFilesTable) > 0 {
		return fmt.Errorf("lazy decode: shared_files_table thawed")
	}
	if !slices.Equal(th.SharedFilesTable, full.SharedFilesTable) || th.HasSharedFilesTable != full.HasSharedFilesTable {
		return fmt.Errorf("Thawed: shared_files_table differs from Decode's")
	}
	for _, st := range []struct {
		name             string
		full, lazy, thaw *StringTable
	}{
		{"compact_names", full.CompactNames, lazy.CompactNames, th.CompactNames},
		{"compact_symlinks", full.CompactSymlinks, lazy.CompactSymlinks, th.CompactSymlinks},
	} {
		if (st.full == nil) != (st.lazy == nil) {
			return fmt.Errorf("lazy decode: %s set %v, want %v", st.name, st.lazy != nil, st.full != nil)
		}
		if st.full == nil {
			continue
		}
		if n := st.lazy.indexLen(); n != len(st.full.Index) {
			return fmt.Errorf("lazy decode: %s index of %d, want %d", st.name, n, len(st.full.Index))
		}
		if lazy.HasDirEntries && len(st.full.Index) > 0 && !st.lazy.packed() {
			return fmt.Errorf("lazy decode: %s index thawed", st.name)
		}
		for i, want := range st.full.Index {
			if got := st.lazy.indexAt(i); got != want {
				return fmt.Errorf("lazy decode: %s index[%d] = %d, want %d", st.name, i, got, want)
			}
		}
		if !slices.Equal(st.thaw.Index, st.full.Index) || st.thaw.packed() || !bytes.Equal(st.thaw.Buffer, st.full.Buffer) {
			return fmt.Errorf("Thawed: %s differs from Decode's", st.name)
		}
	}
	return nil
}

// TestFutureFeatures checks that an image using a feature this reader does
// not know is refused with the feature's name.
func TestFutureFeatures(t *testing.T) {
	secs, err := decLoadSections(fixtures.File(t, "upstream", "future-features.dwarfs"))
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	md, err := Decode(secs.schema, secs.data)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if _, err := NewFS(md); err == nil || !strings.Contains(err.Error(), "this-feature-will-never-exist") {
		t.Fatalf("NewFS = %v, want refusal naming the feature", err)
	}
}

// legacyLinkTime reports whether, in a <= 2.2 image, some entry of the
// hard-link group of ino carries the expected mtime. Such images store
// attributes per entry; Inode reports the entry_table_v2_2 representative
// (as upstream's getattr does) while extraction tools may apply another
// entry's attributes last.
func legacyLinkTime(f *FS, ino uint32, r manifest.Entry) bool {
	md := f.Metadata()
	if md.HasDirEntries {
		return false
	}
	sec, _ := f.TimeResolution()
	for _, e := range md.Inodes {
		if e.InodeV22 == ino && int64(sec)*int64(md.TimestampBase+e.MtimeOffset) == r.Sec {
			return true
		}
	}
	return false
}

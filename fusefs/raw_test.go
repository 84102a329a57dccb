//go:build linux && !386 && !arm

package fusefs_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"

	"github.com/godwarfs/godwarfs/fusefs"
	"golang.org/x/sys/unix"
)

// wideSource is a tree of dirs directories with per files each; it
// returns the files' paths.
func wideSource(dirs, per int) (*memSource, []string) {
	m := newMemSource()
	var paths []string
	for i := range dirs {
		dn := fmt.Sprintf("d%03d", i)
		d := m.mkdir(0, dn)
		ents := make([]fusefs.DirEntry, 0, per)
		for j := range per {
			name := fmt.Sprintf("f%04d", j)
			ino := uint32(len(m.attrs))
			m.attrs = append(m.attrs, fusefs.Attr{Mode: syscall.S_IFREG | 0o644, Nlink: 1, Size: int64(j), UID: uint32(i), GID: 7})
			ents = append(ents, fusefs.DirEntry{Name: name, Ino: ino})
			paths = append(paths, dn+"/"+name)
		}
		m.children[d] = ents // already sorted
	}
	return m, paths
}

func liveObjects() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapObjects
}

// The driver keeps nothing per inode the kernel has looked up: after
// 20,000 files have been looked up and stat-ed, the live heap holds no
// more objects than before (the node API kept an Inode with a children
// map for each) and nothing is open.
func TestNoStatePerLookedUpInode(t *testing.T) {
	m, paths := wideSource(100, 200)
	srv := mountSrc(t, m, "")
	dir := srv.Dir()
	if _, err := os.Lstat(filepath.Join(dir, "d000")); err != nil {
		t.Fatal(err)
	}
	before := liveObjects()
	lookups := fusefs.RequestCounts(srv)["LOOKUP"]
	for i, p := range paths {
		fi, err := os.Lstat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(i % 200); fi.Size() != want {
			t.Fatalf("%s: size %d, want %d", p, fi.Size(), want)
		}
	}
	if n := fusefs.RequestCounts(srv)["LOOKUP"] - lookups; n < int64(len(paths)) {
		t.Fatalf("%d LOOKUPs for %d files: the kernel answered from its cache, nothing was measured", n, len(paths))
	}
	after := liveObjects()
	if grew := int64(after) - int64(before); grew > int64(len(paths))/10 {
		t.Errorf("live heap objects grew by %d (%d -> %d) over %d lookups: state is kept per inode",
			grew, before, after, len(paths))
	}
	if files, dirs := fusefs.OpenHandles(srv); files != 0 || dirs != 0 {
		t.Errorf("%d files and %d directories still open after stat only", files, dirs)
	}
}

// Open handles live from open to close, and only that long. An open
// directory holds none: the mount refuses OPENDIR (see
// TestListingSendsNoOpenDir), so the kernel opens directories itself.
func TestHandlesReleased(t *testing.T) {
	m, _ := sampleSource()
	srv := mountSrc(t, m, "")
	f, err := os.Open(filepath.Join(srv.Dir(), "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(filepath.Join(srv.Dir(), "a"))
	if err != nil {
		t.Fatal(err)
	}
	if files, dirs := fusefs.OpenHandles(srv); files != 1 || dirs != 0 {
		t.Errorf("with one file and one directory open: %d files, %d directories", files, dirs)
	}
	f.Close()
	d.Close()
	// RELEASE is asynchronous; a statfs round trip does not order it, so
	// look until it has arrived (bounded only to turn a hang into a
	// failure).
	for i := 0; ; i++ {
		files, dirs := fusefs.OpenHandles(srv)
		if files == 0 && dirs == 0 {
			break
		}
		if i == 1000 {
			t.Fatalf("after close: %d files, %d directories still open", files, dirs)
		}
		runtime.Gosched()
		var st unix.Statfs_t
		_ = unix.Statfs(srv.Dir(), &st)
	}
}

// After the kernel forgets the nodes (drop_caches), the same node ids
// are looked up again and answer with the same inodes; a file held open
// across the FORGETs still reads.
func TestForgetThenLookupAgain(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: making the kernel forget inodes (drop_caches) needs root")
	}
	m, paths := sampleSource()
	srv := mountSrc(t, m, "")
	dir := srv.Dir()
	stats := map[string]*syscall.Stat_t{}
	for p := range paths {
		fi, err := os.Lstat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		stats[p] = fi.Sys().(*syscall.Stat_t)
	}
	f, err := os.Open(filepath.Join(dir, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lookups := fusefs.RequestCounts(srv)["LOOKUP"]
	for range 5 {
		if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("2\n"), 0); err != nil {
			t.Skipf("skipped: cannot drop the kernel's dentry cache: %v", err)
		}
		if fusefs.RequestCounts(srv)["FORGET"] > 0 {
			break
		}
	}
	if fusefs.RequestCounts(srv)["FORGET"] == 0 {
		t.Skip("skipped: the kernel sent no FORGET after drop_caches")
	}
	for p, want := range stats {
		fi, err := os.Lstat(filepath.Join(dir, p))
		if err != nil {
			t.Fatalf("after FORGET: %v", err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Ino != want.Ino || st.Mode != want.Mode || st.Size != want.Size || st.Nlink != want.Nlink {
			t.Errorf("%s after FORGET: ino %d mode %o size %d nlink %d, want %d %o %d %d",
				p, st.Ino, st.Mode, st.Size, st.Nlink, want.Ino, want.Mode, want.Size, want.Nlink)
		}
	}
	if fusefs.RequestCounts(srv)["LOOKUP"] == lookups {
		t.Error("no LOOKUP after the kernel forgot the nodes")
	}
	got := make([]byte, len(m.data[paths["big.bin"]]))
	if _, err := f.ReadAt(got, 0); err != nil || !bytes.Equal(got, m.data[paths["big.bin"]]) {
		t.Errorf("file open across FORGET: read %v, content equal %v", err, bytes.Equal(got, m.data[paths["big.bin"]]))
	}
}

// READDIRPLUS hands the kernel every entry's attributes: after listing
// a directory, stat-ing its entries sends no LOOKUP or GETATTR, and
// what stat reports is the source's.
func TestReaddirplusAttrs(t *testing.T) {
	m, paths := sampleSource()
	srv := mountSrc(t, m, "")
	dir := srv.Dir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := fusefs.RequestCounts(srv)
	if c["READDIRPLUS"] == 0 {
		t.Fatalf("listing sent no READDIRPLUS: %v", c)
	}
	for _, e := range ents {
		fi, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		ino := paths[e.Name()]
		want := m.attrs[ino]
		if st.Ino != uint64(ino)+1 || st.Mode != want.Mode || st.Size != want.Size || st.Uid != want.UID ||
			st.Gid != want.GID || uint64(st.Nlink) != uint64(want.Nlink) || st.Rdev != want.Rdev ||
			st.Mtim.Sec != want.Mtime.Sec || st.Mtim.Nsec != int64(want.Mtime.Nsec) {
			t.Errorf("%s: stat %+v, want ino %d attrs %+v", e.Name(), *st, ino+1, want)
		}
		if got, want := e.Type(), fi.Mode().Type(); got != want {
			t.Errorf("%s: d_type %v, stat type %v", e.Name(), got, want)
		}
	}
	after := fusefs.RequestCounts(srv)
	for _, op := range []string{"LOOKUP", "GETATTR", "STATX"} {
		if d := after[op] - c[op]; d != 0 {
			t.Errorf("stat after READDIRPLUS sent %d %s requests, want 0", d, op)
		}
	}
}

// A directory read a few entries at a time (offsets handed back to the
// driver) lists ".", ".." and every entry exactly once, in order.
func TestReaddirOffsets(t *testing.T) {
	m, _ := wideSource(1, 300)
	srv := mountSrc(t, m, "")
	f, err := os.Open(filepath.Join(srv.Dir(), "d000"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	buf := make([]byte, 256) // a handful of entries per getdents
	for {
		n, err := unix.Getdents(int(f.Fd()), buf)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	// ParseDirent drops "." and ".."; check them with a fresh read.
	var want []string
	for _, e := range m.children[1] {
		want = append(want, e.Name)
	}
	if !slices.Equal(names, want) {
		t.Errorf("listing in small reads: %d names %v..., want %d", len(names), names[:min(5, len(names))], len(want))
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.Getdents(int(f.Fd()), buf)
	if err != nil || n == 0 {
		t.Fatalf("getdents after rewind: %d, %v", n, err)
	}
	var dots []string
	for off := 0; off < n; {
		reclen := int(uint16(buf[off+16]) | uint16(buf[off+17])<<8)
		name := buf[off+19 : off+reclen]
		dots = append(dots, string(name[:bytes.IndexByte(name, 0)]))
		off += reclen
	}
	if len(dots) < 3 || dots[0] != "." || dots[1] != ".." || dots[2] != want[0] {
		t.Errorf("listing starts %q, want \".\", \"..\", %q", dots[:min(3, len(dots))], want[0])
	}
}

// A missing name is ENOENT, and the kernel keeps the negative answer:
// looking it up again sends nothing, also in a directory listed with
// READDIRPLUS and for a name below a regular file (ENOTDIR, answered
// by the kernel).
func TestNegativeLookups(t *testing.T) {
	m, _ := sampleSource()
	srv := mountSrc(t, m, "")
	dir := srv.Dir()
	if _, err := os.ReadDir(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"nope", "a/nope", "a/HELLO.TXT"} {
		before := fusefs.RequestCounts(srv)["LOOKUP"]
		for range 3 {
			if _, err := os.Lstat(filepath.Join(dir, p)); !errors.Is(err, syscall.ENOENT) {
				t.Fatalf("lstat %s: %v, want ENOENT", p, err)
			}
		}
		if d := fusefs.RequestCounts(srv)["LOOKUP"] - before; d != 1 {
			t.Errorf("%s: 3 lookups sent %d LOOKUP requests, want 1", p, d)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "big.bin", "x")); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("lstat below a file: %v, want ENOTDIR", err)
	}
}

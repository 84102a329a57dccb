//go:build linux && !386 && !arm

package fusefs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/godwarfs/godwarfs/fusefs"
)

// TestReaddirPlusFollowsCaller: directory listings carry the attributes
// of only their first entries (fusefs.PlusHead) and of directories until
// a caller stats a file it listed; from then on every entry's, so ls -l
// sends no LOOKUPs; a later probe listing that nobody stats (find) turns
// them off again.
func TestReaddirPlusFollowsCaller(t *testing.T) {
	const n = 40
	head, probe := fusefs.PlusHead, fusefs.PlusProbe
	m := newMemSource()
	subs := m.mkdir(0, "subs")
	for j := range n {
		m.mkdir(subs, fmt.Sprintf("s%02d", j))
	}
	ndirs := probe + 3
	for i := range ndirs {
		d := m.mkdir(0, fmt.Sprintf("d%03d", i))
		for j := range n {
			m.file(d, fmt.Sprintf("f%02d", j), []byte(fmt.Sprintf("file %02d of %03d", j, i)))
		}
	}
	srv := mountSrc(t, m, "")
	lookups := func() int64 { return fusefs.RequestCounts(srv)["LOOKUP"] }
	// list lists dir (looked up beforehand, so only the entries'
	// lookups count), checks names and types and, with stat, lstats
	// every entry; it returns the LOOKUPs sent meanwhile.
	list := func(name string, wantType uint32, stat bool) int64 {
		t.Helper()
		p := filepath.Join(srv.Dir(), name)
		if _, err := os.Lstat(p); err != nil {
			t.Fatal(err)
		}
		before := lookups()
		ents, err := os.ReadDir(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) != n {
			t.Fatalf("%s: %d entries, want %d", name, len(ents), n)
		}
		for _, e := range ents {
			isDir := wantType == syscall.S_IFDIR
			if e.IsDir() != isDir || !isDir && !e.Type().IsRegular() {
				t.Fatalf("%s/%s: type %v, want mode %o", name, e.Name(), e.Type(), wantType)
			}
			if !stat {
				continue
			}
			fi, err := os.Lstat(filepath.Join(p, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if st := fi.Sys().(*syscall.Stat_t); st.Mode&syscall.S_IFMT != wantType {
				t.Fatalf("%s/%s: mode %o, want type %o", name, e.Name(), st.Mode, wantType)
			}
			if !isDir && fi.Size() != int64(len("file 00 of 000")) {
				t.Fatalf("%s/%s: size %d", name, e.Name(), fi.Size())
			}
		}
		return lookups() - before
	}
	dir := func(i int) string { return fmt.Sprintf("d%03d", i) }

	// Descending into directories: they come with their attributes,
	// so the walk sends no LOOKUPs, and attributes stay off for files.
	if got := list("subs", syscall.S_IFDIR, true); got != 0 {
		t.Errorf("stat of %d listed directories sent %d LOOKUPs, want 0", n, got)
	}
	// ls -l: the first listing costs lookups past the head and turns
	// attributes on, so the next costs none.
	if got := list(dir(0), syscall.S_IFREG, true); got != int64(n-head) {
		t.Errorf("first ls -l: %d LOOKUPs, want %d", got, n-head)
	}
	if got := list(dir(1), syscall.S_IFREG, true); got != 0 {
		t.Errorf("second ls -l: %d LOOKUPs, want 0", got)
	}
	// find: listings without stats; the probe among them turns
	// attributes off, so stats after it cost lookups again.
	for i := 2; i < ndirs-1; i++ {
		list(dir(i), syscall.S_IFREG, false)
	}
	if got := list(dir(ndirs-1), syscall.S_IFREG, true); got != int64(n-head) {
		t.Errorf("ls -l after %d listings without stats: %d LOOKUPs, want %d", ndirs-3, got, n-head)
	}
}

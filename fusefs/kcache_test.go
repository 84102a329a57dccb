//go:build linux && !386 && !arm

package fusefs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/godwarfs/godwarfs/fusefs"
	"golang.org/x/sys/unix"
)

// lsLR does what ls -lR does to every entry: list directories, lstat
// every entry, ask for its security label and ACL, read symlinks.
func lsLR(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		n++
		if _, err := os.Lstat(p); err != nil {
			return err
		}
		for _, name := range []string{"security.selinux", "system.posix_acl_access"} {
			// Only user.* attributes are supported (the kernel itself
			// refuses ACLs on symlinks the same way).
			_, err := unix.Lgetxattr(p, name, make([]byte, 256))
			if !errors.Is(err, unix.EOPNOTSUPP) {
				t.Errorf("lgetxattr %s %s: %v, want EOPNOTSUPP", p, name, err)
			}
		}
		if d.Type()&fs.ModeSymlink != 0 {
			if _, err := os.Readlink(p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The image never changes, so once listed and stat-ed everything is
// served by the kernel: a second walk sends no LOOKUP, GETATTR, READDIR
// or READLINK, and a missing name is looked up once.
func TestKernelCachesListings(t *testing.T) {
	m, paths := sampleSource()
	srv := mountSrc(t, m, "")
	dir := srv.Dir()

	if n := lsLR(t, dir); n != len(paths)+1 {
		t.Fatalf("walk saw %d entries, want %d", n, len(paths)+1)
	}
	cold := fusefs.RequestCounts(srv)
	if cold["READDIRPLUS"]+cold["READDIR"] == 0 || cold["OPENDIR"] == 0 {
		t.Fatalf("cold walk: no directory reads counted: %v", cold)
	}
	lsLR(t, dir)
	warm := fusefs.RequestCounts(srv)
	for _, op := range []string{"LOOKUP", "GETATTR", "STATX", "READDIR", "READDIRPLUS", "READLINK"} {
		if d := warm[op] - cold[op]; d != 0 {
			t.Errorf("warm walk sent %d %s requests, want 0 (cold %v, warm %v)", d, op, cold, warm)
		}
	}

	missing := filepath.Join(dir, "a", "no-such-file")
	before := fusefs.RequestCounts(srv)["LOOKUP"]
	for range 3 {
		if _, err := os.Lstat(missing); !errors.Is(err, syscall.ENOENT) {
			t.Fatalf("lstat %s: %v, want ENOENT", missing, err)
		}
	}
	if d := fusefs.RequestCounts(srv)["LOOKUP"] - before; d != 1 {
		t.Errorf("3 lookups of a missing name sent %d LOOKUP requests, want 1", d)
	}
}

// A read-only file has nothing to flush: the first FLUSH is refused with
// ENOSYS, which the kernel takes as "never again", and close() still
// succeeds. Opening and closing files many times sends at most one FLUSH.
func TestCloseSendsNoFlush(t *testing.T) {
	m, _ := sampleSource()
	srv := mountSrc(t, m, "")
	p := filepath.Join(srv.Dir(), "a", "hello.txt")
	before := fusefs.RequestCounts(srv)
	for range 10 {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 16)
		if n, err := f.Read(b); err != nil || string(b[:n]) != "hello\n" {
			t.Fatalf("read %s: %q, %v", p, b[:n], err)
		}
		if err := f.Close(); err != nil {
			t.Fatalf("close %s: %v", p, err)
		}
	}
	after := fusefs.RequestCounts(srv)
	if d := after["OPEN"] - before["OPEN"]; d != 10 {
		t.Errorf("10 opens sent %d OPEN requests", d)
	}
	if d := after["FLUSH"] - before["FLUSH"]; d > 1 {
		t.Errorf("10 closes sent %d FLUSH requests, want at most 1", d)
	}
}

// A mount of one image refuses the first OPENDIR with ENOSYS, after which
// the kernel sends no OPENDIR or RELEASEDIR and keeps every listing; a
// directory too large for one READDIR is still listed whole and in order,
// and the driver keeps no listing once each was read through.
func TestListingSendsNoOpenDir(t *testing.T) {
	m, paths := sampleSource()
	big := m.mkdir(0, "big")
	var want []string
	for i := range 3000 {
		name := fmt.Sprintf("entry-with-a-long-name-%05d", i)
		m.file(big, name, nil)
		want = append(want, name)
	}
	srv := mountSrc(t, m, "")
	dir := srv.Dir()
	for range 2 {
		if n := lsLR(t, dir); n != len(paths)+1+1+len(want) {
			t.Fatalf("walk saw %d entries, want %d", n, len(paths)+2+len(want))
		}
		ents, err := os.ReadDir(filepath.Join(dir, "big"))
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) != len(want) {
			t.Fatalf("big: %d entries, want %d", len(ents), len(want))
		}
		for i, e := range ents {
			if e.Name() != want[i] {
				t.Fatalf("big entry %d: %q, want %q", i, e.Name(), want[i])
			}
		}
	}
	c := fusefs.RequestCounts(srv)
	if c["OPENDIR"] > 1 || c["RELEASEDIR"] != 0 {
		t.Errorf("OPENDIR=%d RELEASEDIR=%d, want at most 1 and 0", c["OPENDIR"], c["RELEASEDIR"])
	}
	if c["READDIR"]+c["READDIRPLUS"] < 4 {
		t.Errorf("big directory read in %d requests, want several (the test needs more entries)", c["READDIR"]+c["READDIRPLUS"])
	}
	// Every directory was read to its end: the kernel holds the
	// listings now, the driver none.
	if n := fusefs.ListingsHeld(srv); n != 0 {
		t.Errorf("driver still holds %d listings after every directory was read through", n)
	}
}

// With no_xattr the first refusal (ENOSYS) makes the kernel stop asking:
// a walk that asks for two attributes of every entry sends at most one
// GETXATTR and one LISTXATTR in all, and every call fails with EOPNOTSUPP.
func TestNoXattrStopsRequests(t *testing.T) {
	m, paths := sampleSource()
	srv := mountSrc(t, m, "no_xattr")
	dir := srv.Dir()
	before := fusefs.RequestCounts(srv)
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		n++
		for _, name := range []string{"security.selinux", "system.posix_acl_access", fusefs.XattrInodeInfo} {
			_, err := unix.Lgetxattr(p, name, make([]byte, 256))
			// The kernel reports no ACL, and no user.* attributes on
			// special files, without asking; the rest are refused.
			want := unix.EOPNOTSUPP
			symlink := d.Type()&fs.ModeSymlink != 0
			if (name == "system.posix_acl_access" && !symlink) || (name == fusefs.XattrInodeInfo && !d.IsDir() && !d.Type().IsRegular()) {
				want = unix.ENODATA
			}
			if !errors.Is(err, want) {
				t.Errorf("lgetxattr %s %s: %v, want %v", p, name, err, want)
			}
		}
		if _, err := unix.Llistxattr(p, make([]byte, 256)); !errors.Is(err, unix.EOPNOTSUPP) {
			t.Errorf("llistxattr %s: %v, want EOPNOTSUPP", p, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(paths)+1 {
		t.Fatalf("walk saw %d entries, want %d", n, len(paths)+1)
	}
	after := fusefs.RequestCounts(srv)
	for _, op := range []string{"GETXATTR", "LISTXATTR"} {
		if d := after[op] - before[op]; d > 1 {
			t.Errorf("%d %s requests reached the driver for %d entries, want at most 1", d, op, n)
		}
	}
}

// Without no_xattr every lookup of an attribute reaches the driver,
// which is what no_xattr saves. Names outside user.* are refused as
// unsupported, the others answered or reported missing.
func TestXattrRequestsReachDriver(t *testing.T) {
	m, _ := sampleSource()
	srv := mountSrc(t, m, "")
	p := filepath.Join(srv.Dir(), "a")
	tests := []struct {
		name string
		want error
	}{
		{"security.selinux", unix.EOPNOTSUPP},
		{"security.capability", unix.EOPNOTSUPP},
		{"system.posix_acl_access", unix.EOPNOTSUPP},
		{"system.posix_acl_default", unix.EOPNOTSUPP},
		{"trusted.overlay.opaque", unix.EOPNOTSUPP},
		{"user.no-such-attribute", unix.ENODATA},
		{fusefs.XattrInodeInfo, nil},
	}
	for _, tc := range tests {
		before := fusefs.RequestCounts(srv)["GETXATTR"]
		for range 3 {
			n, err := unix.Lgetxattr(p, tc.name, make([]byte, 4096))
			if tc.want == nil {
				if err != nil || n == 0 {
					t.Fatalf("lgetxattr %s %s: %d bytes, %v; want a value", p, tc.name, n, err)
				}
			} else if !errors.Is(err, tc.want) {
				t.Fatalf("lgetxattr %s %s: %v, want %v", p, tc.name, err, tc.want)
			}
		}
		// The kernel itself may ask twice (security.capability).
		if d := fusefs.RequestCounts(srv)["GETXATTR"] - before; d < 3 {
			t.Errorf("3 getxattr calls of %s sent %d GETXATTR requests, want at least 3", tc.name, d)
		}
	}
}

// ls -l asks for the security label and the ACL of every entry unless
// the device has refused one as unsupported; then it stops asking. So a
// listing of the whole tree sends a handful of GETXATTR requests, not
// two per entry, and a warm listing is served by the kernel.
func TestLsStopsAskingForLabels(t *testing.T) {
	ls, err := exec.LookPath("ls")
	if err != nil {
		t.Skipf("skipped: no ls to run: %v", err)
	}
	m, _ := sampleSource()
	for d := range 3 {
		dir := m.mkdir(0, fmt.Sprintf("dir%d", d))
		for f := range 20 {
			m.file(dir, fmt.Sprintf("f%02d", f), []byte("x"))
		}
	}
	paths := m.paths()
	srv := mountSrc(t, m, "")
	before := fusefs.RequestCounts(srv)
	for range 2 {
		out, err := exec.Command(ls, "-lR", srv.Dir()).CombinedOutput()
		if err != nil {
			t.Fatalf("ls -lR: %v\n%s", err, out)
		}
		// No entry may be shown with an ACL (+) or a label (.).
		for _, line := range strings.Split(string(out), "\n") {
			if len(line) > 10 && strings.ContainsRune("-dlcbps", rune(line[0])) && line[10] != ' ' {
				t.Errorf("ls shows an ACL or label: %q", line)
			}
		}
	}
	after := fusefs.RequestCounts(srv)
	entries := len(paths) + 1
	if entries < 20 {
		t.Fatalf("sample has %d entries, too few to tell", entries)
	}
	if d := after["GETXATTR"] - before["GETXATTR"]; d > 8 {
		t.Errorf("two ls -lR of %d entries sent %d GETXATTR requests, want at most 8", entries, d)
	}
	// Versions of ls that list a file's attributes before asking for
	// them send a LISTXATTR per entry instead, which no answer avoids.
	t.Logf("LISTXATTR requests: %d", after["LISTXATTR"]-before["LISTXATTR"])
}

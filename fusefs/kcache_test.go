package fusefs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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
			// The kernel itself refuses ACLs on symlinks.
			_, err := unix.Lgetxattr(p, name, make([]byte, 256))
			if !errors.Is(err, unix.ENODATA) && !(errors.Is(err, unix.EOPNOTSUPP) && d.Type()&fs.ModeSymlink != 0) {
				t.Errorf("lgetxattr %s %s: %v, want ENODATA", p, name, err)
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
// which is what no_xattr saves.
func TestXattrRequestsReachDriver(t *testing.T) {
	m, _ := sampleSource()
	srv := mountSrc(t, m, "")
	p := filepath.Join(srv.Dir(), "a")
	before := fusefs.RequestCounts(srv)["GETXATTR"]
	for range 3 {
		if _, err := unix.Lgetxattr(p, "security.selinux", make([]byte, 256)); !errors.Is(err, unix.ENODATA) {
			t.Fatalf("lgetxattr %s: %v, want ENODATA", p, err)
		}
	}
	if d := fusefs.RequestCounts(srv)["GETXATTR"] - before; d != 3 {
		t.Errorf("3 getxattr calls sent %d GETXATTR requests, want 3", d)
	}
}

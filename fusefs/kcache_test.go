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

//go:build linux && !386 && !arm

package fusefs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/mountopts"
	"golang.org/x/sys/unix"
)

func sampleSource() (*memSource, map[string]uint32) {
	m := newMemSource()
	a := m.mkdir(0, "a")
	big := bytes.Repeat([]byte("0123456789abcdef"), 40000)
	hello := m.file(a, "hello.txt", []byte("hello\n"))
	m.attrs[hello].Nlink = 2
	m.link(0, "hardlink", hello)
	m.file(0, "big.bin", big)
	sp := m.file(0, "sparse.bin", make([]byte, 3<<20))
	copy(m.data[sp][1<<20:], "data in the middle")
	m.holes[sp] = [][2]int64{{0, 1 << 20}, {2 << 20, 3 << 20}}
	m.attrs[sp].Sparse, m.attrs[sp].AllocatedSize = true, 1<<20
	ln := m.add(a, "link", fusefs.Attr{Mode: syscall.S_IFLNK | 0o777, Nlink: 1, Size: 9})
	m.links[ln] = "hello.txt"
	m.add(0, "chardev", fusefs.Attr{Mode: syscall.S_IFCHR | 0o644, Nlink: 1, Rdev: unix.Mkdev(1, 3)})
	m.add(0, "blockdev", fusefs.Attr{Mode: syscall.S_IFBLK | 0o644, Nlink: 1, Rdev: unix.Mkdev(259, 300)})
	m.add(0, "fifo", fusefs.Attr{Mode: syscall.S_IFIFO | 0o644, Nlink: 1})
	return m, m.paths()
}

func TestMemTree(t *testing.T) {
	m, paths := sampleSource()
	srv := mountSrc(t, m, "")
	dir := srv.Dir()

	for p, ino := range paths {
		fp := filepath.Join(dir, p)
		fi, err := os.Lstat(fp)
		if err != nil {
			t.Fatalf("lstat %s: %v", p, err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		want := m.attrs[ino]
		if st.Mode != want.Mode || st.Uid != want.UID || st.Gid != want.GID || uint64(st.Nlink) != uint64(want.Nlink) {
			t.Errorf("%s: mode %o uid %d gid %d nlink %d, want %o %d %d %d", p, st.Mode, st.Uid, st.Gid, st.Nlink, want.Mode, want.UID, want.GID, want.Nlink)
		}
		if st.Ino != uint64(ino)+1 {
			t.Errorf("%s: st_ino %d, want %d", p, st.Ino, ino+1)
		}
		if st.Mtim.Sec != want.Mtime.Sec || st.Mtim.Nsec != int64(want.Mtime.Nsec) {
			t.Errorf("%s: mtime %v, want %v", p, st.Mtim, want.Mtime)
		}
		switch want.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			b, err := os.ReadFile(fp)
			if err != nil {
				t.Fatalf("read %s: %v", p, err)
			}
			if !bytes.Equal(b, m.data[ino]) {
				t.Errorf("%s: content differs", p)
			}
		case syscall.S_IFLNK:
			s, err := os.Readlink(fp)
			if err != nil || s != m.links[ino] {
				t.Errorf("%s: readlink %q %v", p, s, err)
			}
		case syscall.S_IFCHR, syscall.S_IFBLK:
			if st.Rdev != want.Rdev {
				t.Errorf("%s: rdev %x, want %x", p, st.Rdev, want.Rdev)
			}
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, ","); got != "a,big.bin,blockdev,chardev,fifo,hardlink,sparse.bin" {
		t.Errorf("readdir: %s", got)
	}
	if fi, _ := os.Stat(dir); fi.Sys().(*syscall.Stat_t).Ino != 1 {
		t.Errorf("root ino %d", fi.Sys().(*syscall.Stat_t).Ino)
	}
	if _, err := os.Lstat(filepath.Join(dir, "nope")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestMemSeekHole(t *testing.T) {
	m, _ := sampleSource()
	srv := mountSrc(t, m, "")
	f, err := os.Open(filepath.Join(srv.Dir(), "sparse.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	for _, c := range []struct {
		off    int64
		whence int
		want   int64
		err    error
	}{
		{0, unix.SEEK_DATA, 1 << 20, nil},
		{0, unix.SEEK_HOLE, 0, nil},
		{1 << 20, unix.SEEK_HOLE, 2 << 20, nil},
		{(2 << 20) + 5, unix.SEEK_DATA, 0, syscall.ENXIO},
		{3 << 20, unix.SEEK_HOLE, 0, syscall.ENXIO},
	} {
		got, err := unix.Seek(fd, c.off, c.whence)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("seek(%d,%d): %d %v, want %v", c.off, c.whence, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("seek(%d,%d) = %d %v, want %d", c.off, c.whence, got, err, c.want)
		}
	}
}

func TestMemReadOnly(t *testing.T) {
	m, _ := sampleSource()
	srv := mountSrc(t, m, "")
	dir := srv.Dir()
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: %v, want EROFS", what, err)
		}
	}
	_, err := os.OpenFile(filepath.Join(dir, "big.bin"), os.O_WRONLY, 0)
	check("open for write", err)
	_, err = os.Create(filepath.Join(dir, "new"))
	check("create", err)
	check("mkdir", os.Mkdir(filepath.Join(dir, "d"), 0o755))
	check("remove", os.Remove(filepath.Join(dir, "big.bin")))
	check("rename", os.Rename(filepath.Join(dir, "big.bin"), filepath.Join(dir, "x")))
	check("chmod", os.Chmod(filepath.Join(dir, "big.bin"), 0o600))
	check("symlink", os.Symlink("x", filepath.Join(dir, "sl")))
	check("setxattr", unix.Setxattr(filepath.Join(dir, "big.bin"), "user.x", []byte("1"), 0))
}

func getxattr(t *testing.T, p, name string) string {
	t.Helper()
	sz, err := unix.Getxattr(p, name, nil)
	if err != nil {
		t.Fatalf("getxattr %s %s: %v", p, name, err)
	}
	buf := make([]byte, sz)
	sz, err = unix.Getxattr(p, name, buf)
	if err != nil {
		t.Fatalf("getxattr %s %s: %v", p, name, err)
	}
	return string(buf[:sz])
}

func TestMemXattr(t *testing.T) {
	m, _ := sampleSource()
	srv := mountSrc(t, m, "")
	dir := srv.Dir()
	if got := getxattr(t, dir, fusefs.XattrPid); got != strconv.Itoa(os.Getpid()) {
		t.Errorf("pid xattr %q", got)
	}
	if _, err := os.ReadFile(filepath.Join(dir, "big.bin")); err != nil {
		t.Fatal(err)
	}
	pm := getxattr(t, dir, fusefs.XattrPerfmon)
	if !strings.Contains(pm, "fuse.read:") || !strings.Contains(pm, "block cache") {
		t.Errorf("perfmon xattr: %q", pm)
	}
	var info map[string]any
	if err := json.Unmarshal([]byte(getxattr(t, filepath.Join(dir, "a", "hello.txt"), fusefs.XattrInodeInfo)), &info); err != nil {
		t.Fatal(err)
	}
	if info["uid"] != float64(1234) {
		t.Errorf("inodeinfo %v", info)
	}
	buf := make([]byte, 256)
	n, err := unix.Listxattr(dir, buf)
	if err != nil || !strings.Contains(string(buf[:n]), fusefs.XattrPerfmon) {
		t.Errorf("listxattr root: %q %v", buf[:n], err)
	}
	n, err = unix.Listxattr(filepath.Join(dir, "big.bin"), buf)
	if err != nil || string(buf[:n]) != fusefs.XattrInodeInfo+"\x00" {
		t.Errorf("listxattr file: %q %v", buf[:n], err)
	}
	if _, err := unix.Getxattr(filepath.Join(dir, "big.bin"), fusefs.XattrPid, buf); !errors.Is(err, unix.ENODATA) {
		t.Errorf("pid xattr on file: %v", err)
	}
}

func TestMemStatfs(t *testing.T) {
	m, _ := sampleSource()
	srv := mountSrc(t, m, "")
	var st unix.Statfs_t
	if err := unix.Statfs(srv.Dir(), &st); err != nil {
		t.Fatal(err)
	}
	if st.Blocks*uint64(st.Frsize) != 12345 || st.Files != uint64(len(m.attrs)) {
		t.Errorf("statfs %+v", st)
	}
	if st.Flags&unix.ST_RDONLY == 0 {
		t.Errorf("statfs: not read-only (flags %x)", st.Flags)
	}
}

func TestMemSequentialPrefetch(t *testing.T) {
	m, _ := sampleSource()
	srv := mountSrc(t, m, "seq_detector=2,no_cache_files")
	f, err := os.Open(filepath.Join(srv.Dir(), "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for range 10 {
		if _, err := f.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	m.mu.Lock()
	n := m.prefetches
	m.mu.Unlock()
	if n == 0 {
		t.Errorf("no prefetch after sequential reads; perfmon:\n%s", srv.Perfmon())
	}
}

// TestMemReadsUseOpenHandle checks that reads and lseeks go through the
// file opened at open(2) instead of opening the file again per request.
func TestMemReadsUseOpenHandle(t *testing.T) {
	m, _ := sampleSource()
	srv := mountSrc(t, m, "no_cache_files")
	f, err := os.Open(filepath.Join(srv.Dir(), "sparse.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for _, off := range []int64{0, 1 << 20, 2<<20 + 5, 4096} {
		if _, err := f.ReadAt(buf, off); err != nil {
			t.Fatal(err)
		}
	}
	if d, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_DATA); err != nil || d != 1<<20 {
		t.Fatalf("SEEK_DATA = %d, %v", d, err)
	}
	m.mu.Lock()
	opens := m.opens
	m.mu.Unlock()
	if opens != 1 {
		t.Errorf("source opened the file %d times for one open(2), want 1", opens)
	}
}

// TestMemReadInterrupted checks that the FUSE request context reaches the
// source: killing a process blocked in read(2) ends the driver's wait.
func TestMemReadInterrupted(t *testing.T) {
	m, _ := sampleSource()
	ino := m.file(0, "stalls.bin", make([]byte, 1<<16))
	m.stall[ino] = true
	srv := mountSrc(t, m, "no_cache_files")
	cmd := exec.Command("cat", filepath.Join(srv.Dir(), "stalls.bin"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill once the read waits in the source, then wait for the source to
	// see the interruption. The bound only turns a hang into a failure.
	select {
	case <-m.stalled:
		cmd.Process.Kill()
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("read never reached the source")
	}
	select {
	case err := <-m.interrupted:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("interrupted read saw %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("read was not interrupted")
	}
	cmd.Wait()
}

func TestMemOwnerOverrideAndTidy(t *testing.T) {
	m, _ := sampleSource()
	srv := mountSrc(t, m, "uid=4242,gid=4343,tidy_strategy=time,tidy_interval=10ms,tidy_max_age=1s")
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(srv.Dir(), "a/hello.txt"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != 4242 || st.Gid != 4343 {
		t.Errorf("owner %d:%d, want 4242:4343", st.Uid, st.Gid)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		m.mu.Lock()
		n := m.tidies
		m.mu.Unlock()
		if n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tidy ran %d times", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestMemExternalUnmount(t *testing.T) {
	m, _ := sampleSource()
	srv := mountSrcNoCleanup(t, m, "")
	if err := unix.Unmount(srv.Dir(), 0); err != nil {
		if err := exec.Command("fusermount3", "-u", srv.Dir()).Run(); err != nil {
			t.Skipf("cannot unmount externally: %v", err)
		}
	}
	select {
	case <-srv.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("server did not notice the external unmount")
	}
	if err := srv.Unmount(); err != nil {
		t.Errorf("Unmount after external unmount: %v", err)
	}
}

// TestMemAllowRoot checks allow_root/allow_other by reading the mount as
// an unprivileged user.
func TestMemAllowRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to act as another user")
	}
	requireFuse(t)
	for _, c := range []struct {
		opt  string
		deny bool
	}{{"allow_root", true}, {"allow_other", false}} {
		t.Run(c.opt, func(t *testing.T) {
			base, err := os.MkdirTemp("", "dwarfs-allow")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(base)
			if err := os.Chmod(base, 0o755); err != nil {
				t.Fatal(err)
			}
			o := mountopts.Defaults()
			if err := o.ParseString(c.opt); err != nil {
				t.Fatal(err)
			}
			m, _ := sampleSource()
			srv, err := fusefs.Mount(base, m, fusefs.Config{Options: o.MountOptions})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Unmount()
			cmd := exec.Command("/bin/cat", filepath.Join(base, "a/hello.txt"))
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			out, err := cmd.CombinedOutput()
			if c.deny && (err == nil || !strings.Contains(string(out), "ermission denied")) {
				t.Errorf("other user could read with %s: %v %s", c.opt, err, out)
			}
			if !c.deny && (err != nil || string(out) != "hello\n") {
				t.Errorf("other user could not read with %s: %v %s", c.opt, err, out)
			}
			if b, err := os.ReadFile(filepath.Join(base, "a/hello.txt")); err != nil || string(b) != "hello\n" {
				t.Errorf("root read with %s: %q %v", c.opt, b, err)
			}
		})
	}
}

func TestMemStatxBtime(t *testing.T) {
	m, _ := sampleSource()
	ino := m.file(0, "born.txt", []byte("x"))
	m.attrs[ino].HasBtime = true
	m.attrs[ino].Btime = fusefs.Timespec{Sec: 1234567890, Nsec: 42}
	srv := mountSrc(t, m, "")
	var sx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, filepath.Join(srv.Dir(), "born.txt"), 0, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &sx); err != nil {
		t.Fatal(err)
	}
	if sx.Mask&unix.STATX_BTIME == 0 {
		t.Skipf("kernel did not pass statx btime through FUSE (mask %x)", sx.Mask)
	}
	if sx.Btime.Sec != 1234567890 || sx.Btime.Nsec != 42 || sx.Size != 1 {
		t.Errorf("statx: btime %v size %d", sx.Btime, sx.Size)
	}
	if err := unix.Statx(unix.AT_FDCWD, filepath.Join(srv.Dir(), "big.bin"), 0, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &sx); err != nil {
		t.Fatal(err)
	}
	if sx.Mask&unix.STATX_BTIME != 0 {
		t.Errorf("btime reported for a file without one")
	}
}

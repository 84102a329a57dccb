//go:build linux && !386 && !arm

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/imagetest"
	"github.com/godwarfs/godwarfs/internal/remotetest"
)

// testImage is an image built for the tests and the tree it holds.
type testImage struct{ path, tree string }

// buildImages builds n images of different trees in dir, named
// img0.dwarfs, img1.dwarfs, ...
func buildImages(t *testing.T, dir string, n int) []testImage {
	t.Helper()
	var out []testImage
	for i := range n {
		tree := imagetest.Tree(t, uint64(100+i), 8)
		p := filepath.Join(dir, fmt.Sprintf("img%d.dwarfs", i))
		imagetest.Build(t, tree, p, 16)
		out = append(out, testImage{p, tree})
	}
	return out
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// runDwarfs runs the built dwarfs with args and returns its output.
func runDwarfs(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(buildBinary(t, "dwarfs"), args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	done := make(chan error, 1)
	go func() { done <- cmd.Run() }()
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("dwarfs %q did not return", args)
	}
	return o.String(), e.String(), err
}

// mustDwarfs runs dwarfs and fails the test unless it succeeds.
func mustDwarfs(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := runDwarfs(t, args...)
	if err != nil {
		if strings.Contains(errOut, "fusermount") || strings.Contains(errOut, "permission denied") && args[0] == "multi" {
			fixtures.FUSEUnusable(t, errOut)
		}
		t.Fatalf("dwarfs %q: %v\n%s%s", args, err, out, errOut)
	}
	return out
}

// driverPid reads the pid of the driver serving dir.
func driverPid(t *testing.T, dir string) int {
	t.Helper()
	buf := make([]byte, 64)
	n, err := unix.Getxattr(dir, "user.dwarfs.driver.pid", buf)
	if err != nil {
		t.Fatalf("pid of the driver of %s: %v", dir, err)
	}
	pid, err := strconv.Atoi(string(buf[:n]))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// waitGone waits for the driver process to end.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !processGone(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("driver %d still running after its mounts ended", pid)
		}
	}
}

// TestMultiCommand drives dwarfs multi and its control commands: a mount
// of images under names, add, remove, config (cachesize changed live),
// errors for a taken or unknown name, and a second mount point attached
// to the same driver.
func TestMultiCommand(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		fixtures.FUSEUnusable(t, err.Error())
	}
	base := t.TempDir()
	imgs := buildImages(t, base, 3)
	mnt, mnt2 := filepath.Join(base, "mnt"), filepath.Join(base, "mnt2")
	for _, d := range []string{mnt, mnt2} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Relative paths work: the client makes them absolute.
	t.Chdir(base)
	mustDwarfs(t, "multi", "img0.dwarfs", "second:"+imgs[1].path, "mnt", "-o", "cachesize=256k")
	mounted := []string{mnt}
	t.Cleanup(func() {
		for _, d := range mounted {
			unmount(d)
		}
	})
	pid := driverPid(t, mnt)
	if got := names(t, mnt); !slices.Equal(got, []string{"img0", "second"}) {
		t.Errorf("mount lists %q", got)
	}
	imagetest.SameTree(t, imgs[0].tree, filepath.Join(mnt, "img0"))
	imagetest.SameTree(t, imgs[1].tree, filepath.Join(mnt, "second"))

	if out := mustDwarfs(t, "add", mnt, imgs[2].path); out != "added img2: "+imgs[2].path+"\n" {
		t.Errorf("add said %q", out)
	}
	imagetest.SameTree(t, imgs[2].tree, filepath.Join(mnt, "img2"))
	_, errOut, err := runDwarfs(t, "add", mnt, "second:"+imgs[0].path)
	if err == nil || !strings.Contains(errOut, `image name "second" is already in use`) {
		t.Errorf("add of a taken name: %v %s", err, errOut)
	}
	out := mustDwarfs(t, "config", mnt)
	for _, want := range []string{"cachesize: 262144 ", "workers: 2\n", "mount " + mnt + ":\n", "  second: " + imgs[1].path + " ("} {
		if !strings.Contains(out, want) {
			t.Errorf("config lacks %q:\n%s", want, out)
		}
	}
	if out := mustDwarfs(t, "config", mnt, "cachesize=1m"); !strings.Contains(out, "cachesize: 1048576 ") {
		t.Errorf("config cachesize=1m:\n%s", out)
	}
	if _, errOut, err := runDwarfs(t, "config", mnt, "readahead=1m"); err == nil || !strings.Contains(errOut, "readahead cannot be changed while mounted") {
		t.Errorf("config of a fixed option: %v %s", err, errOut)
	}
	if out := mustDwarfs(t, "remove", mnt, "second"); out != "removed second\n" {
		t.Errorf("remove said %q", out)
	}
	if got := names(t, mnt); !slices.Equal(got, []string{"img0", "img2"}) {
		t.Errorf("mount lists %q after remove", got)
	}
	if _, errOut, err := runDwarfs(t, "remove", mnt, "second"); err == nil || !strings.Contains(errOut, `no image named "second"`) {
		t.Errorf("remove of an unknown name: %v %s", err, errOut)
	}
	if _, errOut, err := runDwarfs(t, "add", base, imgs[0].path); err == nil || !strings.Contains(errOut, "is not served by a dwarfs multi driver") {
		t.Errorf("add to a directory that is no mount: %v %s", err, errOut)
	}

	// A second mount point, served by the same driver on its cache.
	out = mustDwarfs(t, "multi", "x:"+imgs[1].path, mnt2, "-o", "attach="+mnt)
	mounted = append(mounted, mnt2)
	if !strings.Contains(out, "mounted 1 images at "+mnt2) {
		t.Errorf("attach said %q", out)
	}
	if p := driverPid(t, mnt2); p != pid {
		t.Errorf("attached mount served by pid %d, want %d", p, pid)
	}
	imagetest.SameTree(t, imgs[1].tree, filepath.Join(mnt2, "x"))
	mustDwarfs(t, "add", mnt2, imgs[0].path)
	if got := names(t, mnt2); !slices.Equal(got, []string{"img0", "x"}) {
		t.Errorf("attached mount lists %q", got)
	}
	if out := mustDwarfs(t, "config", mnt2); !strings.Contains(out, "mount "+mnt+":\n") || !strings.Contains(out, "mount "+mnt2+":\n") || !strings.Contains(out, "cachesize: 1048576 ") {
		t.Errorf("config of the attached mount:\n%s", out)
	}
	if _, errOut, err := runDwarfs(t, "multi", "y:"+imgs[1].path, mnt2, "-o", "attach="+mnt+",cachesize=1g"); err == nil || !strings.Contains(errOut, "cachesize is the driver's") {
		t.Errorf("attach with a cache size: %v %s", err, errOut)
	}
	// The driver ends with its last mount.
	if err := unmount(mnt2); err != nil {
		t.Fatal(err)
	}
	if got := names(t, mnt); !slices.Equal(got, []string{"img0", "img2"}) {
		t.Errorf("first mount lists %q after the second ended", got)
	}
	if err := unmount(mnt); err != nil {
		t.Fatal(err)
	}
	mounted = nil
	waitGone(t, pid)
}

// TestMultiCommandErrors: bad command lines fail before mounting.
func TestMultiCommandErrors(t *testing.T) {
	base := t.TempDir()
	img := filepath.Join(base, "a.dwarfs")
	os.WriteFile(img, nil, 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"multi", base}, "needs at least one image and a mount point"},
		{[]string{"multi", img, "a:" + img, base}, `image name "a" is given twice`},
		{[]string{"multi", "..:" + img, base}, `image name ".." is not allowed`},
		{[]string{"multi", "./no:such.dwarfs", base}, "no:such.dwarfs: no such file"},
		{[]string{"multi", img, base, "-o", "analysis_file=/x"}, "applies to one image"},
		{[]string{"add", base}, "no image given"},
		{[]string{"remove", base}, "no image name given"},
		{[]string{"add", base, img, "-o", "ro"}, "takes no options"},
		{[]string{img, base, "-o", "attach=" + base}, "is an option of dwarfs multi"},
	} {
		_, errOut, err := runDwarfs(t, c.args...)
		if err == nil || !strings.Contains(errOut, c.want) {
			t.Errorf("dwarfs %q: %v, stderr %q, want %q", c.args, err, errOut, c.want)
		}
	}
}

// TestMultiOtherUser: another user can neither reach the control socket
// nor change the mount. (The driver's peer credential check behind the
// directory and socket permissions is tested in package control.)
func TestMultiOtherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to act as another user")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		fixtures.FUSEUnusable(t, err.Error())
	}
	base, err := os.MkdirTemp("", "dwarfs-multi-user")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	imgs := buildImages(t, base, 2)
	mnt := filepath.Join(base, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{base, binDir, imgs[1].path} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// allow_other lets the other user see the mount point, so the only
	// thing keeping it out is the control socket.
	mustDwarfs(t, "multi", imgs[0].path, mnt, "-o", "allow_other")
	defer unmount(mnt)
	buf := make([]byte, 4096)
	n, err := unix.Getxattr(mnt, "user.dwarfs.driver.control", buf)
	if err != nil {
		t.Fatal(err)
	}
	sock := string(buf[:n])
	var st syscall.Stat_t
	if err := syscall.Stat(sock, &st); err != nil || st.Mode&0o777 != 0o600 || st.Uid != 0 {
		t.Errorf("control socket %s: mode %o uid %d %v", sock, st.Mode&0o777, st.Uid, err)
	}
	if err := syscall.Stat(filepath.Dir(sock), &st); err != nil || st.Mode&0o777 != 0o700 || st.Uid != 0 {
		t.Errorf("control socket directory: mode %o uid %d %v", st.Mode&0o777, st.Uid, err)
	}
	for _, args := range [][]string{
		{"add", mnt, imgs[1].path},
		{"remove", mnt, "img0"},
		{"config", mnt, "cachesize=1g"},
	} {
		cmd := exec.Command(buildBinary(t, "dwarfs"), args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		cmd.Env = append(os.Environ(), "HOME=/", "XDG_RUNTIME_DIR=")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "is not served by a dwarfs multi driver of this user") {
			t.Errorf("dwarfs %q as another user: %v %s", args, err, out)
		}
	}
	if got := names(t, mnt); !slices.Equal(got, []string{"img0"}) {
		t.Errorf("mount lists %q after the other user's attempts", got)
	}
	if out := mustDwarfs(t, "config", mnt); !strings.Contains(out, "cachesize: 536870912 ") {
		t.Errorf("cache size changed by another user:\n%s", out)
	}
}

// TestMultiRemote mounts an image over HTTP (nginx) and one from S3
// (SeaweedFS) beside a local one, in one mount.
func TestMultiRemote(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		fixtures.FUSEUnusable(t, err.Error())
	}
	base := t.TempDir()
	served := filepath.Join(base, "www")
	if err := os.Mkdir(served, 0o755); err != nil {
		t.Fatal(err)
	}
	imgs := buildImages(t, served, 3)
	ng := remotetest.Nginx(t, served)
	w := remotetest.SeaweedFS(t)
	w.Bucket(t, "multi")
	w.Upload(t, "multi", "dir/img1.dwarfs", imgs[1].path)
	w.Env(t)
	mnt := filepath.Join(base, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	mustDwarfs(t, "multi", ng.URL+"/img0.dwarfs", "s3://multi/dir/img1.dwarfs", "local:"+imgs[2].path, mnt, "-o", "cachesize=256k")
	defer unmount(mnt)
	if got := names(t, mnt); !slices.Equal(got, []string{"img0", "img1", "local"}) {
		t.Errorf("mount lists %q", got)
	}
	imagetest.SameTree(t, imgs[0].tree, filepath.Join(mnt, "img0"))
	imagetest.SameTree(t, imgs[1].tree, filepath.Join(mnt, "img1"))
	imagetest.SameTree(t, imgs[2].tree, filepath.Join(mnt, "local"))
	// Added at run time, over HTTP.
	mustDwarfs(t, "add", mnt, "web2:"+ng.URL+"/img2.dwarfs")
	imagetest.SameTree(t, imgs[2].tree, filepath.Join(mnt, "web2"))
	buf := make([]byte, 4096)
	n, err := unix.Getxattr(filepath.Join(mnt, "img1"), "user.dwarfs.driver.remote", buf)
	if err != nil || !strings.Contains(string(buf[:n]), `"requests"`) {
		t.Errorf("remote counters of the S3 image: %q %v", buf[:n], err)
	}

	// Images of every source added and removed while 8 readers read
	// and check the files of the local one: no reader sees an error, and each
	// change shows in the listing at once.
	stop := imagetest.StartReaders(imagetest.TreeFiles(t, imgs[2].tree, filepath.Join(mnt, "local")), 8)
	for _, c := range []struct{ name, src string }{
		{"s3b", "s3://multi/dir/img1.dwarfs"},
		{"web3", ng.URL + "/img0.dwarfs"},
		{"local2", imgs[2].path},
	} {
		mustDwarfs(t, "add", mnt, c.name+":"+c.src)
		if !slices.Contains(names(t, mnt), c.name) {
			t.Errorf("%s (%s) not listed after add", c.name, c.src)
		}
	}
	imagetest.SameTree(t, imgs[1].tree, filepath.Join(mnt, "s3b"))
	imagetest.SameTree(t, imgs[0].tree, filepath.Join(mnt, "web3"))
	for _, name := range []string{"img0", "img1", "web2", "s3b", "web3", "local2"} {
		mustDwarfs(t, "remove", mnt, name)
	}
	if got := names(t, mnt); !slices.Equal(got, []string{"local"}) {
		t.Errorf("after the removals the mount lists %q", got)
	}
	if reads, err := stop(); err != nil || reads == 0 {
		t.Errorf("readers: %d reads, %v", reads, err)
	}
}

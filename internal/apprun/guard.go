//go:build linux && !386 && !arm

package apprun

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// guardArg0 is the argv[0] with which the runtime, started by itself,
// becomes the guard of a mount point (see startGuard).
const guardArg0 = "dwarfs-run:guard"

// guard is the process that unmounts the runtime's mount, and removes
// its mount point, if the runtime ends without doing so itself (killed
// by SIGKILL). fusermount3's auto_unmount alone does not do it reliably:
// once the runtime's end of its socket closes, it unmounts only if the
// mount no longer answers, and the kernel may not yet have released the
// runtime's FUSE device then, so the mount answers and stays. The guard
// waits on a pipe instead, whose end in the runtime closes only when the
// runtime is gone, and then unmounts unconditionally.
type guard struct {
	w      *os.File // the runtime's end; a byte on it says "done"
	exited chan struct{}
}

// startGuard starts the guard of dir; fusermount is fusermount3's path,
// with which a user other than root unmounts.
func startGuard(dir, fusermount string) (*guard, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		w.Close()
		return nil, err
	}
	defer devnull.Close()
	// Out of the runtime's session, so that the terminal's signals and
	// hangup, which end the runtime, do not end the guard; holding none
	// of the runtime's streams, so that whoever reads them is not kept
	// waiting; and not in the mount.
	cmd := &exec.Cmd{
		Path:        selfPath,
		Args:        []string{guardArg0, dir, fusermount},
		Dir:         "/",
		Stdin:       devnull,
		Stdout:      devnull,
		Stderr:      devnull,
		ExtraFiles:  []*os.File{r},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, err
	}
	g := &guard{w: w, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(g.exited)
	}()
	return g, nil
}

// release ends the guard. done says the mount is gone and its mount
// point removed; otherwise the guard unmounts and removes it. Waiting
// for the guard keeps it from staying a zombie where init does not reap.
func (g *guard) release(done bool) {
	if done {
		_, _ = g.w.Write([]byte{1})
	}
	g.w.Close()
	select {
	case <-g.exited:
	case <-time.After(5 * time.Second):
	}
}

// guardMain is the guard process: its fd 3 is the pipe from the runtime.
func guardMain(dir, fusermount string) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	p := os.NewFile(3, "runtime pipe")
	var b [1]byte
	for {
		n, err := p.Read(b[:])
		if n > 0 {
			return 0 // the runtime cleaned up itself
		}
		if err != nil && !errors.Is(err, syscall.EINTR) {
			break // the runtime is gone
		}
	}
	unmountLazily(dir, fusermount)
	_ = os.Remove(dir)
	return 0
}

// unmountLazily detaches the mount on dir, whether or not its FUSE
// connection still answers; programs the entry left behind keep their
// open files.
func unmountLazily(dir, fusermount string) {
	if err := unix.Unmount(dir, unix.MNT_DETACH); err == nil || !errors.Is(err, unix.EPERM) {
		return
	}
	cmd := exec.Command(fusermount, "-u", "-z", "-q", dir)
	_ = cmd.Run()
}

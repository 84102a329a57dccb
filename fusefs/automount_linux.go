//go:build !386 && !arm

package fusefs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/godwarfs/godwarfs/internal/gofuse/fuse"
	"golang.org/x/sys/unix"
)

// autoUnmountHelper is the fusermount3 process of an auto_unmount mount
// and our end of the socket it waits on. fusermount3 passes the
// /dev/fuse descriptor over the socket and then waits for the socket to
// close, which happens when this process exits for whatever reason, and
// unmounts. go-fuse waits for fusermount3 to exit, so such mounts are
// made here and the descriptor handed to go-fuse as /dev/fd/N.
type autoUnmountHelper struct {
	sock   *os.File
	exited chan struct{} // closed once fusermount3 has been reaped
}

// close releases the helper: it lazily unmounts (a no-op once the mount
// is gone) and exits. Waiting for that keeps it from outliving us as a
// zombie where init does not reap.
func (h *autoUnmountHelper) close() {
	_ = h.sock.Close()
	select {
	case <-h.exited:
	case <-time.After(5 * time.Second):
	}
}

// fusermountOptions is the -o list go-fuse would give fusermount3.
func fusermountOptions(mo *fuse.MountOptions) string {
	opts := append([]string(nil), mo.Options...)
	if mo.AllowOther {
		opts = append(opts, "allow_other")
	}
	if mo.FsName != "" {
		opts = append(opts, "fsname="+mo.FsName)
	}
	if mo.Name != "" {
		opts = append(opts, "subtype="+mo.Name)
	}
	opts = append(opts, fmt.Sprintf("max_read=%d", mo.MaxWrite), "auto_unmount")
	esc := strings.NewReplacer(`\`, `\\`, `,`, `\,`)
	for i, o := range opts {
		opts[i] = esc.Replace(o)
	}
	return strings.Join(opts, ",")
}

// mountAutoUnmount mounts dir with fusermount3 -o ...,auto_unmount and
// returns the FUSE device descriptor and the helper.
func mountAutoUnmount(dir string, mo *fuse.MountOptions) (int, *autoUnmountHelper, error) {
	bin, err := exec.LookPath("fusermount3")
	if err != nil {
		return -1, nil, fmt.Errorf("auto_unmount needs fusermount3: %w", err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, nil, fmt.Errorf("socketpair: %w", err)
	}
	local := os.NewFile(uintptr(fds[0]), "fusermount3 socket")
	remote := os.NewFile(uintptr(fds[1]), "fusermount3 socket")
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		local.Close()
		remote.Close()
		return -1, nil, err
	}
	defer devnull.Close()
	// fusermount3 outlives the mount call; it must hold none of our
	// standard streams (a daemon's parent waits for them to close).
	// Its error messages come through a pipe read only if it fails.
	errR, errW, err := os.Pipe()
	if err != nil {
		local.Close()
		remote.Close()
		return -1, nil, err
	}
	defer errR.Close()
	cmd := exec.Command(bin, dir, "-o", fusermountOptions(mo))
	cmd.Env = []string{"_FUSE_COMMFD=3"}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, errW
	cmd.ExtraFiles = []*os.File{remote}
	err = cmd.Start()
	errW.Close()
	remote.Close()
	if err != nil {
		local.Close()
		return -1, nil, fmt.Errorf("fusermount3: %w", err)
	}
	fd, rerr := receiveFD(local)
	if rerr != nil {
		// fusermount3 exited (closing its end) without a descriptor.
		local.Close()
		var msg bytes.Buffer
		_, _ = msg.ReadFrom(errR)
		werr := cmd.Wait()
		return -1, nil, fmt.Errorf("fusermount3: %v: %s", errors.Join(werr, rerr), strings.TrimSpace(msg.String()))
	}
	h := &autoUnmountHelper{sock: local, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(h.exited)
	}()
	return fd, h, nil
}

// receiveFD reads the one descriptor fusermount3 sends.
func receiveFD(sock *os.File) (int, error) {
	var data [4]byte
	oob := make([]byte, unix.CmsgSpace(4))
	var fd = -1
	var rerr error
	rc, err := sock.SyscallConn()
	if err != nil {
		return -1, err
	}
	err = rc.Read(func(s uintptr) bool {
		n, oobn, _, _, err := unix.Recvmsg(int(s), data[:], oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EAGAIN {
			return false
		}
		if err != nil {
			rerr = err
			return true
		}
		if n == 0 && oobn == 0 {
			rerr = errors.New("no descriptor received")
			return true
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 {
			rerr = fmt.Errorf("bad control message: %v", err)
			return true
		}
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil || len(fds) != 1 {
			rerr = fmt.Errorf("bad descriptor message: %v", err)
			return true
		}
		fd = fds[0]
		return true
	})
	if err != nil {
		return -1, err
	}
	return fd, rerr
}

// unmountDir unmounts dir the ordinary way (go-fuse cannot unmount a
// mount it got as /dev/fd/N).
func unmountDir(dir string) error {
	if os.Geteuid() == 0 {
		if err := unix.Unmount(dir, 0); err == nil || !errors.Is(err, syscall.EPERM) {
			return err
		}
	}
	return fusermount("-u", dir)
}

// pollProbeName is the name go-fuse answers for itself (outside the file
// system) so that a poll on it can be refused.
const pollProbeName = ".go-fuse-epoll-hack"

// probePoll makes the kernel learn that the mount does not support poll,
// as go-fuse's WaitMount does for mounts it made itself. Until the kernel
// learns it, the Go runtime's registration of any file opened on the mount
// with its poller sends a POLL request; made from the serving process,
// that request waits for a reply while the registering thread counts as
// running, so a garbage collection that stops the world waits for it and
// the request is never served.
func probePoll(dir string) error {
	fd, err := unix.Open(filepath.Join(dir, pollProbeName), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("poll probe: %w", err)
	}
	defer unix.Close(fd)
	// Only the request matters: go-fuse refuses it with ENOSYS and the
	// kernel stops asking.
	_, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
	return nil
}

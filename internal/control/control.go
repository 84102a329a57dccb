//go:build unix

// Package control is the control socket of a dwarfs driver that serves
// several images (dwarfs multi): the add, remove, config and attach
// commands send it one request each.
//
// The socket belongs to the user who mounted: it lives in a directory
// only that user may enter (mode 0700, checked to be owned by the user
// and closed to others), is itself mode 0600, and the driver checks
// every connection's peer credentials (SO_PEERCRED on Linux,
// LOCAL_PEERCRED on the BSDs), refusing any user but its own. The
// directory is /run/godwarfs for root, and otherwise
// $XDG_RUNTIME_DIR/godwarfs, else /run/user/UID/godwarfs, else
// godwarfs-UID in the temporary directory. A mount's socket is named
// after the device number of the mounted file system (st_dev of the
// mount point), which the client finds by stat(2) of the mount point,
// so any path of the mount point (or a path in the mount) reaches it.
package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Request is one command for the driver.
type Request struct {
	Op string `json:"op"` // add, remove, config or attach
	// Images are [NAME:]IMAGE arguments (add, attach), with local paths
	// made absolute by the client.
	Images []string `json:"images,omitempty"`
	// Names are the images to remove.
	Names []string `json:"names,omitempty"`
	// Settings are KEY=VALUE changes (config).
	Settings []string `json:"settings,omitempty"`
	// MountPoint is where attach mounts (absolute).
	MountPoint string `json:"mountpoint,omitempty"`
	// Options are the -o options of attach.
	Options []string `json:"options,omitempty"`
}

// Response is the driver's answer: what to print, and the error if the
// request (or part of it) failed.
type Response struct {
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Handler answers a request.
type Handler func(Request) (output string, err error)

// maxMessage bounds a request or response.
const maxMessage = 1 << 20

// Dir is the directory of the current user's control sockets.
func Dir(getenv func(string) string) string {
	uid := os.Geteuid()
	if uid == 0 {
		return "/run/godwarfs"
	}
	if x := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) && ownedBy(x, uid) {
		return filepath.Join(x, "godwarfs")
	}
	if run := fmt.Sprintf("/run/user/%d", uid); ownedBy(run, uid) {
		return filepath.Join(run, "godwarfs")
	}
	return filepath.Join(os.TempDir(), "godwarfs-"+strconv.Itoa(uid))
}

// ownedBy reports whether dir is a directory of uid.
func ownedBy(dir string, uid int) bool {
	var st unix.Stat_t
	return unix.Stat(dir, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && int(st.Uid) == uid
}

// ensureDir creates dir (mode 0700) if it is missing and checks that it
// belongs to this user and is closed to everyone else.
func ensureDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("control socket directory: %w", err)
	}
	return checkDir(dir)
}

// checkDir checks that dir is a directory of this user closed to others:
// the driver listens only there, and the client talks only to a socket
// there, so that no other user can stand in for the driver (and learn,
// say, an image URL with credentials).
func checkDir(dir string) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("control socket directory: %w", err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("control socket directory %s is not a directory", dir)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("control socket directory %s belongs to uid %d, not %d", dir, st.Uid, os.Geteuid())
	case st.Mode&0o077 != 0:
		return fmt.Errorf("control socket directory %s has mode %o: others may enter it (want 0700)", dir, st.Mode&0o777)
	}
	return nil
}

// SocketPath is the control socket of the mount at mountPoint in dir:
// named after the mounted file system's device number.
func SocketPath(dir, mountPoint string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(mountPoint, &st); err != nil {
		return "", fmt.Errorf("mount point: %w", err)
	}
	return filepath.Join(dir, fmt.Sprintf("dev-%d.sock", uint64(st.Dev))), nil
}

// Server answers requests on a control socket.
type Server struct {
	ln      *net.UnixListener
	path    string
	handler Handler
	owner   int
	wg      sync.WaitGroup
	once    sync.Once
	mu      sync.Mutex // requests are answered one at a time
}

// Listen creates the control socket at path (in a directory made or
// checked by ensureDir) and answers requests from this user with
// handler, one at a time. A socket left at path by a driver that is
// gone is replaced; one that answers is an error.
func Listen(path string, handler Handler) (*Server, error) {
	if err := ensureDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("control socket %s: another driver answers on it", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	// The directory keeps others out already; the mode says so too.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	s := &Server{ln: ln, path: path, handler: handler, owner: os.Geteuid()}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

// Close stops answering and removes the socket.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		err = s.ln.Close()
		s.wg.Wait()
	})
	return err
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			s.answer(c)
		}()
	}
}

// answer reads one request from c and writes the response.
func (s *Server) answer(c *net.UnixConn) {
	reply := func(r Response) {
		b, _ := json.Marshal(r)
		_, _ = c.Write(append(b, '\n'))
	}
	uid, err := peerUID(c)
	if err != nil {
		reply(Response{Error: fmt.Sprintf("control socket: cannot identify the caller: %v", err)})
		return
	}
	if uid != s.owner {
		reply(Response{Error: fmt.Sprintf("control socket: permission denied: uid %d may not control a mount of uid %d", uid, s.owner)})
		return
	}
	var req Request
	if err := json.NewDecoder(io.LimitReader(c, maxMessage)).Decode(&req); err != nil {
		reply(Response{Error: fmt.Sprintf("control socket: bad request: %v", err)})
		return
	}
	s.mu.Lock()
	out, err := s.handler(req)
	s.mu.Unlock()
	r := Response{Output: out}
	if err != nil {
		r.Error = err.Error()
	}
	reply(r)
}

// peerUID is the effective uid of the process at the other end of c.
func peerUID(c *net.UnixConn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var uid int
	var perr error
	if err := rc.Control(func(fd uintptr) { uid, perr = peerUIDOf(int(fd)) }); err != nil {
		return 0, err
	}
	return uid, perr
}

// Call sends req to the driver of the mount at mountPoint and returns
// its response.
func Call(getenv func(string) string, mountPoint string, req Request) (Response, error) {
	dir := Dir(getenv)
	path, err := SocketPath(dir, mountPoint)
	if err != nil {
		return Response{}, err
	}
	if err := checkDir(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Response{}, fmt.Errorf("%s is not served by a dwarfs multi driver of this user (no control socket directory %s)", mountPoint, dir)
		}
		return Response{}, err
	}
	return CallPath(path, mountPoint, req)
}

// CallPath is Call for a known socket path.
func CallPath(path, mountPoint string, req Request) (Response, error) {
	c, err := net.Dial("unix", path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
			return Response{}, fmt.Errorf("%s is not served by a dwarfs multi driver of this user (no control socket %s)", mountPoint, path)
		}
		return Response{}, fmt.Errorf("control socket of %s: %w", mountPoint, err)
	}
	defer c.Close()
	b, err := json.Marshal(req)
	if err != nil {
		return Response{}, err
	}
	_, werr := c.Write(append(b, '\n'))
	// A driver that refuses the caller answers without reading the
	// request, so the answer may be there even if writing failed.
	var r Response
	if err := json.NewDecoder(io.LimitReader(c, maxMessage)).Decode(&r); err != nil {
		if werr != nil {
			return Response{}, fmt.Errorf("control socket of %s: %w", mountPoint, werr)
		}
		return Response{}, fmt.Errorf("control socket of %s: reading the answer: %w", mountPoint, err)
	}
	return r, nil
}

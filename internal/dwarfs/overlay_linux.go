//go:build linux && !386 && !arm

package dwarfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// errNoOverlay is wrapped by the error for a writable mount (upper=) the
// process may not make.
var errNoOverlay = errors.New("a writable mount needs root, or a user namespace where the kernel allows overlay mounts (unshare -rm dwarfs ...)")

// overlay is a writable mount: the image on a private lower mount, a
// kernel overlayfs at the mount point.
type overlay struct {
	mnt, upper, work, lower string
	userns                  bool
}

// newOverlay checks that an overlay can be mounted at mnt with upper and
// work (default: .NAME.work beside upper) and makes the directory the
// image is mounted on first.
func newOverlay(mnt, upper, work string) (*overlay, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("upper=%s: %w", upper, errNoOverlay)
	}
	o := &overlay{mnt: mnt, upper: upper, work: work, userns: inUserNamespace()}
	if o.work == "" {
		o.work = filepath.Join(filepath.Dir(upper), "."+filepath.Base(upper)+".work")
	}
	for _, d := range []string{o.upper, o.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("upper: %w", err)
		}
	}
	for _, d := range []*string{&o.upper, &o.work} {
		abs, err := filepath.Abs(*d)
		if err != nil {
			return nil, err
		}
		*d = abs
	}
	lower, err := os.MkdirTemp("", "dwarfs-lower-")
	if err != nil {
		return nil, fmt.Errorf("upper: the image's lower mount point: %w", err)
	}
	o.lower = lower
	return o, nil
}

// inUserNamespace reports whether the process runs in a user namespace
// other than the initial one (whose uid_map maps all ids to themselves).
func inUserNamespace() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return !(len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295")
}

// mount mounts the overlay once the image is mounted on o.lower, then
// detaches the lower mount: only the overlay refers to it, so the image
// is unmounted with the overlay.
func (o *overlay) mount() error {
	// Redirects and metacopy files would leave an upper directory that
	// mkdwarfs --apply-upper cannot apply.
	data := "lowerdir=" + o.lower + ",upperdir=" + o.upper + ",workdir=" + o.work + ",redirect_dir=off,metacopy=off,index=off"
	if o.userns {
		data += ",userxattr"
	}
	if err := unix.Mount("overlay", o.mnt, "overlay", 0, data); err != nil {
		if errors.Is(err, unix.EPERM) {
			err = fmt.Errorf("%w: %w", err, errNoOverlay)
		}
		return fmt.Errorf("mounting overlayfs at %s (upper %s, work %s): %w", o.mnt, o.upper, o.work, err)
	}
	if err := unix.Unmount(o.lower, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the image's lower mount %s: %w", o.lower, err)
	}
	_ = os.Remove(o.lower)
	return nil
}

// unmount unmounts the overlay (and with it the image).
func (o *overlay) unmount() error {
	return unix.Unmount(o.mnt, 0)
}

// cleanup removes the lower mount point after a failed mount.
func (o *overlay) cleanup() {
	_ = os.Remove(o.lower)
}

//go:build darwin || freebsd

package control

import "golang.org/x/sys/unix"

// peerUIDOf reads the peer's credentials with LOCAL_PEERCRED.
func peerUIDOf(fd int) (int, error) {
	x, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return 0, err
	}
	return int(x.Uid), nil
}

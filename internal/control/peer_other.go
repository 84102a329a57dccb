//go:build unix && !linux && !darwin && !freebsd

package control

import "errors"

// peerUIDOf has no way to learn the peer here: refuse.
func peerUIDOf(fd int) (int, error) {
	return 0, errors.New("peer credentials are not available on this system")
}

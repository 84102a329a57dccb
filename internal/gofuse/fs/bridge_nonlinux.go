//go:build !linux

package fs

import "github.com/godwarfs/godwarfs/internal/gofuse/fuse"

func (b *rawBridge) Statx(cancel <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	return fuse.ENOSYS
}

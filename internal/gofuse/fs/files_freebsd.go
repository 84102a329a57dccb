package fs

import "github.com/godwarfs/godwarfs/internal/gofuse/fuse"

func setBlocks(out *fuse.Attr) {
}

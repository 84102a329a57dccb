//go:build tools

package godwarfs

import (
	_ "github.com/andybalholm/brotli"
	_ "github.com/cespare/xxhash/v2"
	_ "github.com/hanwen/go-fuse/v2/fs"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/pierrec/lz4/v4"
	_ "github.com/ulikunitz/xz"
	_ "github.com/zeebo/xxh3"
	_ "golang.org/x/sync/errgroup"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/term"
)

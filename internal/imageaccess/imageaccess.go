// Package imageaccess hands the project's tools the parts of an open
// *godwarfs.Image that the public API keeps to itself: the section
// container, the block cache and the decoded metadata. dwarfsck needs them
// to report on an image and the FUSE driver to preload and trim the cache;
// library users have no use for them.
package imageaccess

import (
	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/metadata"
)

// Parts are the internals of one open image. They stay valid until the
// image is closed.
type Parts struct {
	Blocks          *block.Image       // section container
	Cache           *block.Cache       // decompressed blocks
	Metadata        *metadata.Metadata // as decoded
	FS              *metadata.FS       // inode-level view of Metadata
	MetadataSection block.Section      // the METADATA_V2 section
	MetadataSize    int64              // its decompressed size
	MetadataMapped  bool               // mapped from the file, not read (Options.MapMetadata)
}

// partsOf is installed by package godwarfs from its init function, which
// runs before any image can exist; it is never changed afterwards.
// (godwarfs imports this package, so this package cannot import godwarfs.)
var partsOf func(image any) *Parts

// Register installs the accessor. Only package godwarfs calls it.
func Register(f func(image any) *Parts) {
	if partsOf != nil {
		panic("imageaccess: Register called twice")
	}
	partsOf = f
}

// Of returns the parts of image, which must be a *godwarfs.Image.
func Of(image any) *Parts { return partsOf(image) }

// Package godwarfs reads DwarFS images: the compressed, deduplicating,
// read-only file system archives made by mkdwarfs (this module's or the
// reference tools', format 2.0 to 2.5).
//
// # Opening an image
//
// Open opens an image file; OpenReaderAt opens one from any io.ReaderAt
// (an in-memory copy, a region of a larger file, a remote object). The
// zero Options, or nil, behave like the command-line tools: the image is
// searched for, so an image behind a header opens without knowing the
// header's length, and decompressed blocks are cached up to
// DefaultCacheSize bytes with DefaultWorkers blocks decompressed at once.
// Close the image when done.
//
//	im, err := godwarfs.Open("backup.dwarfs", nil)
//	if err != nil { ... }
//	defer im.Close()
//
// # Reading files
//
// An *Image is an fs.FS (with fs.ReadDirFS, fs.ReadFileFS, fs.StatFS and
// fs.ReadLinkFS), so fs.WalkDir, fs.ReadFile, fs.Glob, http.FS and
// os.CopyFS work on it. Symbolic links are followed inside the image;
// targets outside it do not exist. Lstat and ReadLink see the links
// themselves.
//
// Open returns a *File for everything but directories. A *File keeps the
// file's chunk list and chunk offsets, resolved once when it is opened,
// so a read costs the same whether the file has ten chunks or a million
// (heavily deduplicated files have many). Besides Read and Seek it has ReadAt,
// ReadAtContext (which stops waiting for decompression when its context
// ends), SeekData and SeekHole (for sparse files, like lseek(2)), Prefetch
// (to start decompressing what will be read next) and DontNeed (to let the
// block cache give up first what a reader has gone past).
//
// # Inodes
//
// Programs that work with inode numbers, such as FUSE drivers, use Root,
// Lookup, InodeInfo and OpenInode; Stat.Ino and the numbers dwarfsck
// prints are the same inode numbers. Package fusefs mounts an image.
//
// # Building and rewriting images
//
// Package writer makes images: writer.Build archives a directory (what
// mkdwarfs -i DIR does) and writer.Rewrite recompresses an image, rebuilds
// its metadata or changes its block size (mkdwarfs --recompress,
// --rebuild-metadata, --change-block-size). Both take a context.Context
// and report progress through a callback, and write the image atomically.
//
// # Concurrency and errors
//
// An Image and its Files are safe for concurrent use, except that Read
// and Seek share the file position of one *File. Errors from the io/fs
// methods are *fs.PathError; errors about the image's content name the
// image. A damaged data block found by the
// checksum pass at open (see Options.NoCheck) is reported by Warnings and
// fails only the reads that need it, as with the reference tools; damaged
// metadata fails Open.
package godwarfs

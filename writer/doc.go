// Package writer builds DwarFS images from a directory tree and rewrites
// existing images; it is what mkdwarfs runs.
//
// Build scans a directory, deduplicates and segments the file data into
// blocks (package dedup), compresses the blocks and writes the image:
//
//	scan -> order -> segment -> compress -> write
//
// Rewrite reads an image and writes a new one: it recompresses sections
// (mkdwarfs --recompress), rebuilds the metadata with a new policy
// (--rebuild-metadata) or re-chunks the data into blocks of another size
// (--change-block-size).
//
// Append adds a directory to an existing image and Merge joins images,
// copying the input images' blocks byte for byte (mkdwarfs --append,
// --merge); they are builds that start from the images' trees. Update
// makes an image of a changed tree (or of an image with an overlayfs upper
// directory applied) from an old image, reusing the chunks of unchanged
// files and copying the old blocks still referred to (mkdwarfs --update,
// --apply-upper).
//
// A Build with BuildOptions.Shard builds one shard of a tree as package
// shard plans it, and records it in the image's history; a Merge whose
// inputs are shards checks that they are every shard of one plan, once,
// before it writes anything.
//
// All go through the same back half: one ordered, bounded compression
// pipeline (the output does not depend on the number of workers), one
// writer of the metadata and history sections, and one atomic commit (a
// temporary file in the output's directory, fsynced, renamed and the
// directory fsynced), so that a failed or cancelled run never leaves a
// partial image under the output's name. All take a context.Context for
// cancellation and report progress through Target.Progress.
package writer

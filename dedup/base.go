package dedup

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"path"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/metadata"
)

// Base is what a build grows from: the trees of existing images, whose
// BLOCK sections come first in the new image, copied as they are
// (mkdwarfs --append, --merge). The new image's tree is the base trees,
// in order, with the scanned input (if any) on top; only the scanned
// input's data is segmented into new blocks.
type Base struct {
	Trees []BaseTree
	// Blocks is the number of blocks the base trees' chunks refer to
	// (after their BlockShift); new blocks are numbered from it.
	Blocks int
	// BlockCategories, if not nil, names the category of each of the
	// Blocks base blocks (CategoryDefault for a block without one).
	BlockCategories []string
	// BlockCategoryMetadata is the category metadata (JSON) of base
	// blocks that have it, by block number.
	BlockCategoryMetadata map[int]string
	// Replace lets a later tree's entry replace an earlier one at the same
	// path. Without it a path two trees share is an error (ErrPathExists)
	// unless both are directories, whose entries then merge.
	Replace bool
	// Hash, if set, returns the whole-file hash (Options.FileHash) of
	// regular inode ino of Trees[tree]. A scanned file whose size and hash
	// match a base file is stored as that file, without new data. Hash is
	// only called for base files of a size some scanned file has.
	Hash func(tree int, ino uint32) ([]byte, error)
	// BlockData, if set, returns the decoded data of base block n; the
	// segmenter then also matches new data against the windows of the
	// base blocks IndexBlocks names (an update chooses them itself), so
	// that new files that share data
	// with base files refer to it instead of storing it again. This holds
	// those blocks' data in memory while segmenting.
	BlockData   func(n int) ([]byte, error)
	IndexBlocks []int
	// MatchAcross stores files of different trees that have the same
	// size and Hash once, as the earliest tree's file (mkdwarfs --merge):
	// the later copies' data stays in their blocks but nothing refers to
	// it. Only files of a size that two trees have are hashed.
	MatchAcross bool
	// Update, if set, makes the build an update of the one base tree to
	// the scanned input (see Update).
	Update *Update
}

// BaseTree is one existing image's tree.
type BaseTree struct {
	// Name is the image, for error messages.
	Name string
	FS   *metadata.FS
	// At is where the tree's root goes: a slash separated path, "" for
	// the root. Missing parent directories are made with the attributes
	// of the tree's root.
	At string
	// BlockShift is added to the block number of every data chunk.
	BlockShift uint32
	// Blocks is the number of the image's blocks: a chunk referring to
	// another is an error.
	Blocks int
}

// ErrPathExists is wrapped by the error for a path that two trees of a
// growing build both have, unless Base.Replace is set.
var ErrPathExists = errors.New("path exists in more than one input")

// inputName is how errors name the scanned input of a growing build.
func (o *Options) inputName() string {
	if o.Input == "" {
		return "input"
	}
	return o.Input
}

// baseRef is a base file: which tree and inode it comes from, and its
// chunks in the new image's block numbering.
type baseRef struct {
	tree   int
	ino    uint32
	key    string // the chunk list, as a map key
	chunks []pchunk
}

// ImageOptions returns the build options that reproduce how an image's
// metadata was made (block size, time resolution, which times are kept,
// packing, hard link table, creation time), for a build growing from it.
func ImageOptions(f *metadata.FS) Options {
	o := DefaultOptions()
	md := f.Tables()
	if bs := f.BlockSize(); bs > 0 {
		o.BlockSizeBits = bits.Len32(bs - 1)
	}
	sec, mult := f.TimeResolution()
	switch {
	case mult != 0:
		o.TimeResolution = time.Duration(mult)
	case sec != 0:
		o.TimeResolution = time.Duration(sec) * time.Second
	}
	pk := PackAuto
	// The stored options: md's say the tables the reader unpacked are plain.
	if fo := f.StoredOptions(); fo != nil {
		o.KeepAllTimes = !fo.MtimeOnly
		o.NoHardlinks = !fo.InodesHaveNlink
		pk.ChunkTable, pk.Directories, pk.SharedFiles = fo.PackedChunkTable, fo.PackedDirectories, fo.PackedSharedFilesTable
	}
	if md.CompactNames == nil && md.CompactSymlinks == nil && (len(md.Names) > 0 || len(md.Symlinks) > 0) {
		pk = Pack{Plain: true, ChunkTable: pk.ChunkTable, Directories: pk.Directories, SharedFiles: pk.SharedFiles}
	} else {
		if md.CompactNames != nil {
			pk.Names, pk.NamesIndex = md.CompactNames.Symtab != nil, md.CompactNames.PackedIndex
		}
		if md.CompactSymlinks != nil {
			pk.Symlinks, pk.SymlinksIndex = md.CompactSymlinks.Symtab != nil, md.CompactSymlinks.PackedIndex
		}
	}
	o.Pack = &pk
	o.NoCreateTime = md.CreateTimestamp == nil
	return o
}

// baseTree reads tree t of the base into entries; files maps the content
// keys seen so far to their first inode's reference.
func (b *builder) baseTree(t int) (*entry, error) {
	bt := b.opt.Base.Trees[t]
	f := bt.FS
	inodes := map[uint32]*inode{}
	var conv func(ino uint32, name, rel string, parent *entry) (*entry, error)
	conv = func(ino uint32, name, rel string, parent *entry) (*entry, error) {
		e := &entry{name: name, parent: parent, top: parent == nil}
		if in, ok := inodes[ino]; ok {
			e.ino = in
			return e, nil
		}
		a, err := f.Inode(ino)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", bt.Name, displayPath(rel), err)
		}
		in := &inode{mode: a.Mode, uid: a.Uid, gid: a.Gid}
		in.setMtime(timespec{a.Mtime.Sec, int64(a.Mtime.Nsec)})
		if b.opt.KeepAllTimes {
			x := in.ext()
			x.atime = timespec{a.Atime.Sec, int64(a.Atime.Nsec)}
			x.ctime = timespec{a.Ctime.Sec, int64(a.Ctime.Nsec)}
		}
		if a.Rdev != 0 {
			in.ext().rdev = a.Rdev
		}
		inodes[ino] = in
		e.ino = in
		switch a.Mode & syscall.S_IFMT {
		case syscall.S_IFDIR:
			in.kind = kDir
		case syscall.S_IFLNK:
			in.kind = kLink
			t, err := f.Readlink(ino)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", bt.Name, displayPath(rel), err)
			}
			in.ext().target = t
			in.size = int64(len(t))
		case syscall.S_IFREG:
			in.kind = kReg
			in.size = a.Size
			chunks, err := f.FileChunks(ino)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", bt.Name, displayPath(rel), err)
			}
			ref := &baseRef{tree: t, ino: ino}
			var key strings.Builder
			for _, c := range chunks {
				var pc pchunk
				if c.Hole {
					pc = holeChunk(int64(c.Size))
					key.WriteString("h" + strconv.FormatUint(c.Size, 10) + ";")
				} else {
					if int64(c.Block) >= int64(bt.Blocks) {
						return nil, fmt.Errorf("%s: %s: chunk refers to block %d, image has %d: %w", bt.Name, displayPath(rel), c.Block, bt.Blocks, block.ErrCorrupt)
					}
					pc = pchunk{block: c.Block + bt.BlockShift, off: c.Offset, size: uint32(c.Size)}
					fmt.Fprintf(&key, "%d,%d,%d;", pc.block, pc.off, pc.size)
				}
				ref.chunks = append(ref.chunks, pc)
			}
			ref.key = key.String()
			in.ext().base = ref
		case syscall.S_IFCHR, syscall.S_IFBLK:
			in.kind = kDev
		default:
			in.kind = kSpecial
		}
		if in.kind != kDir {
			return e, nil
		}
		ents, err := f.ReadDir(ino)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", bt.Name, displayPath(rel), err)
		}
		for _, ce := range ents {
			crel := ce.Name
			if rel != "" {
				crel = rel + "/" + ce.Name
			}
			c, err := conv(ce.Ino, ce.Name, crel, e)
			if err != nil {
				return nil, err
			}
			e.children = append(e.children, c)
		}
		return e, nil
	}
	return conv(0, "", "", nil)
}

func displayPath(rel string) string {
	if rel == "" {
		return "/"
	}
	return rel
}

// grow places the base trees and then the scanned tree (nil: none) at
// their paths in one tree, with the collision rule of Base.Replace.
func (b *builder) grow(scanned *entry) (*entry, error) {
	base := b.opt.Base
	var root *entry
	place := func(tree *entry, at, name string) error {
		at = strings.Trim(path.Clean("/"+at), "/")
		if at != "" {
			// Wrap the tree in the directories leading to at.
			parts := strings.Split(at, "/")
			tree.name = parts[len(parts)-1]
			for i := len(parts) - 2; i >= -1; i-- {
				d := *tree.ino
				if d.x != nil {
					x := *d.x
					x.base = nil
					d.x = &x
				}
				w := &entry{ino: &d, children: []*entry{tree}}
				if i >= 0 {
					w.name = parts[i]
				}
				tree = w
			}
		}
		if root == nil {
			root = tree
			return nil
		}
		return mergeEntries(root, tree, base.Replace, "", name)
	}
	for i, t := range base.Trees {
		e, err := b.baseTree(i)
		if err != nil {
			return nil, err
		}
		if err := place(e, t.At, t.Name); err != nil {
			return nil, err
		}
	}
	if scanned != nil {
		if err := place(scanned, b.opt.InputAt, b.opt.inputName()); err != nil {
			return nil, err
		}
		b.scanRoot = scanned
		b.scanAt = strings.Trim(path.Clean("/"+b.opt.InputAt), "/")
	}
	if root == nil {
		return nil, errors.New("nothing to build: no base image and no input")
	}
	fixTree(root, nil)
	return root, nil
}

// mergeEntries merges directory src into directory dst; rel is their
// path, name the input src comes from.
func mergeEntries(dst, src *entry, replace bool, rel, name string) error {
	if replace {
		dst.ino = src.ino
	}
	idx := make(map[string]int, len(dst.children))
	for i, c := range dst.children {
		idx[c.name] = i
	}
	for _, c := range src.children {
		crel := c.name
		if rel != "" {
			crel = rel + "/" + c.name
		}
		i, ok := idx[c.name]
		if !ok {
			idx[c.name] = len(dst.children)
			dst.children = append(dst.children, c)
			continue
		}
		d := dst.children[i]
		switch {
		case d.ino.kind == kDir && c.ino.kind == kDir:
			if err := mergeEntries(d, c, replace, crel, name); err != nil {
				return err
			}
		case replace:
			dst.children[i] = c
		default:
			return fmt.Errorf("%s: /%s: %w", name, crel, ErrPathExists)
		}
	}
	return nil
}

// fixTree sorts every directory's entries by name and sets the parent
// links after merging.
func fixTree(e, parent *entry) {
	e.parent = parent
	sort.Slice(e.children, func(i, j int) bool { return e.children[i].name < e.children[j].name })
	for _, c := range e.children {
		fixTree(c, e)
	}
}

// baseContents groups the base files by chunk list: files that share one
// in an input image share it in the new one.
func baseContents(files []*inode) []*content {
	var out []*content
	m := map[string]*content{}
	for _, f := range files {
		if c, ok := m[f.base().key]; ok {
			c.inodes = append(c.inodes, f)
			f.content = c
			continue
		}
		c := &content{rep: f, inodes: []*inode{f}, size: f.size, chunks: f.base().chunks}
		f.content = c
		m[f.base().key] = c
		out = append(out, c)
	}
	return out
}

// matchAcross implements Base.MatchAcross: it returns base without the
// contents that an earlier content of the same size and hash replaces.
func (b *builder) matchAcross(ctx context.Context, base []*content) ([]*content, error) {
	hf := b.opt.Base.Hash
	if hf == nil || !b.opt.Base.MatchAcross || len(b.opt.Base.Trees) < 2 {
		return base, nil
	}
	bySize := map[int64][]*content{}
	for _, c := range base {
		if c.size > 0 {
			bySize[c.size] = append(bySize[c.size], c)
		}
	}
	var cand []*content
	for _, cs := range bySize {
		for _, c := range cs[1:] {
			if c.rep.base().tree != cs[0].rep.base().tree {
				cand = append(cand, cs...)
				break
			}
		}
	}
	if len(cand) == 0 {
		return base, nil
	}
	// Hash in block order, so that each block is decoded about once.
	sort.Slice(cand, func(i, j int) bool {
		x, y := cand[i].rep.base(), cand[j].rep.base()
		if x.tree != y.tree {
			return x.tree < y.tree
		}
		if len(x.chunks) > 0 && len(y.chunks) > 0 {
			if cx, cy := x.chunks[0], y.chunks[0]; cx.block != cy.block || cx.off != cy.off {
				if cx.block != cy.block {
					return cx.block < cy.block
				}
				return cx.off < cy.off
			}
		}
		return x.ino < y.ino
	})
	hashes := make(map[*content]string, len(cand))
	var hashed int64
	for _, c := range cand {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h, err := hf(c.rep.base().tree, c.rep.base().ino)
		if err != nil {
			return nil, fmt.Errorf("%s: hashing %s: %w", b.opt.Base.Trees[c.rep.base().tree].Name, c.rep.relPath(), err)
		}
		hashes[c] = string(h)
		hashed += c.size
	}
	type key struct {
		size int64
		hash string
	}
	first := map[key]*content{}
	out := base[:0:0]
	var files, dupBytes int64
	for _, c := range base {
		if h, ok := hashes[c]; ok {
			k := key{c.size, h}
			if f, dup := first[k]; dup {
				for _, in := range c.inodes {
					in.content = f
					b.debugf("duplicate: %s in %s has the contents of %s in %s", in.relPath(), b.opt.Base.Trees[c.rep.base().tree].Name, f.rep.relPath(), b.opt.Base.Trees[f.rep.base().tree].Name)
				}
				f.inodes = append(f.inodes, c.inodes...)
				files += int64(len(c.inodes))
				dupBytes += c.size * int64(len(c.inodes))
				continue
			}
			first[k] = c
		}
		out = append(out, c)
	}
	b.verbosef("hashed %d files (%d bytes) that share their size with a file of another image: %d files (%d bytes) are stored as an earlier image's", len(cand), hashed, files, dupBytes)
	return out, nil
}

// matchBase stores each scanned file whose size and hash equal those of
// a base file as that file, and returns the others.
// hashes holds base contents' hashes already known (nil: none).
func (b *builder) matchBase(base []*content, files []*inode, hashOn bool, hashes map[*content][]byte) ([]*inode, error) {
	hf := b.opt.Base.Hash
	if hf == nil || !hashOn {
		return files, nil
	}
	bySize := map[int64][]*content{}
	for _, c := range base {
		bySize[c.size] = append(bySize[c.size], c)
	}
	if hashes == nil {
		hashes = map[*content][]byte{}
	}
	var rest []*inode
	for _, f := range files {
		var match *content
		if f.hash != "" || f.size == 0 {
			for _, c := range bySize[f.size] {
				h, ok := hashes[c]
				if !ok && f.size > 0 {
					var err error
					if h, err = hf(c.rep.base().tree, c.rep.base().ino); err != nil {
						return nil, fmt.Errorf("%s: hashing %s: %w", b.opt.Base.Trees[c.rep.base().tree].Name, c.rep.relPath(), err)
					}
					hashes[c] = h
				}
				if f.size == 0 || string(h) == f.hash {
					match = c
					break
				}
			}
		}
		if match == nil {
			rest = append(rest, f)
			continue
		}
		match.inodes = append(match.inodes, f)
		f.content = match
		b.debugf("duplicate: %s has the contents of %s in %s", f.relPath(), match.rep.relPath(), b.opt.Base.Trees[match.rep.base().tree].Name)
	}
	return rest, nil
}

// baseSizes counts the base files by size, so that scanned files of those
// sizes are hashed.
func baseSizes(files []*inode) map[int64]int {
	m := map[int64]int{}
	for _, f := range files {
		if f.base() != nil {
			m[f.size]++
		}
	}
	return m
}

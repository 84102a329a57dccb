package tarinput

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"

	"github.com/godwarfs/godwarfs/dedup"
)

// Layer is one layer of a container image: a tar archive of changes
// that applies over the layers below it (the OCI image spec's changeset
// rules: .wh.NAME removes NAME of the lower layers, .wh..wh..opq hides
// all lower content of its directory, and an entry replaces whatever the
// lower layers had at its path).
type Layer struct {
	// Name names the layer in messages (its digest).
	Name string
	// Open returns the layer's tar stream, decoded. Reading it to its
	// end must fail when the layer is not what it should be (a digest
	// mismatch); the whole stream is read, also past the tar's end.
	Open func(ctx context.Context) (io.ReadCloser, error)
	// File, if not nil, holds the decoded stream at [Offset, Offset+Size)
	// (an uncompressed layer blob): regular files' data are read from
	// there in place instead of being copied to the spill.
	File         *os.File
	Offset, Size int64
}

// Layers is a stack of layers (the lowest first) as one tree, a
// dedup.TreeSource. Close it after the build.
//
// The layers are read from the top down, each once: an entry is kept
// only if no upper layer has claimed its path (replaced it, whited it
// out, or made a directory above it opaque), so only the data of files
// that are in the result is copied to the spill, and nothing else of a
// lower layer is kept. Within a layer, members apply in archive order as
// in a plain tar input.
type Layers struct {
	layers []Layer
	opt    Options
	spill  *spill
}

// NewLayers returns the tree of layers (the lowest first).
func NewLayers(layers []Layer, opt Options) *Layers {
	if opt.MemoryLimit == 0 {
		opt.MemoryLimit = DefaultMemoryLimit
	}
	if opt.TempDir == "" {
		opt.TempDir = os.TempDir()
	}
	return &Layers{layers: layers, opt: opt}
}

// Close releases the decoded data.
func (l *Layers) Close() error {
	if l.spill != nil {
		return l.spill.close()
	}
	return nil
}

// WhiteoutPrefix marks a whiteout entry; OpaqueWhiteout is the entry that
// makes its directory opaque.
const (
	WhiteoutPrefix = ".wh."
	OpaqueWhiteout = ".wh..wh..opq"
)

// lnode is a path of the merged tree.
type lnode struct {
	n     *dedup.TreeNode // nil: a whiteout (the path is gone from lower layers)
	layer int             // the layer that put it here
	// explicit: a member named this path; a directory made for a
	// member's path takes the attributes of a lower layer's directory.
	explicit bool
	// opaque hides the content of layers below it under this directory.
	opaque int
	// ghost: a directory made only to hold a whiteout; it is in the
	// result only if some layer has it or something in it.
	ghost bool
	kids  map[string]*lnode
}

func isDir(n *dedup.TreeNode) bool { return n != nil && n.Mode&syscall.S_IFMT == syscall.S_IFDIR }

// layerMember is a non-directory member of the layer being read, which
// later hard links of that layer may name.
type layerMember struct {
	n      *dedup.TreeNode
	off    int64 // data start in the decoded stream
	sparse bool
}

// layerReader reads one layer into the merged tree.
type layerReader struct {
	*reader // names, warnings, errors, counters shared with a tar input
	l       *Layers
	layer   Layer
	idx     int
	root    *lnode
	members map[string]*layerMember
	// refetch are hidden files whose data a visible hard link needs.
	refetch map[int64]*layerMember
	// files are the non-directory member paths of the layer; cuts hold,
	// for each, when (in member order) a non-directory member last went
	// there, replacing whatever the layer had below it. A path is a
	// non-directory of the layer if it is in files and no path above it
	// was cut later. (members keeps what was cut: hard links may still
	// name it.)
	files   map[string]bool
	cuts    map[string]int
	seq     int
	touched map[*lnode]*touch
}

// ReadTree reads the layers into one tree.
func (l *Layers) ReadTree(ctx context.Context, progress func(int64), warn func(string, ...any)) (*dedup.TreeNode, error) {
	if l.spill != nil {
		return nil, errors.New("tarinput: the layers were read already")
	}
	l.spill = &spill{dir: l.opt.TempDir, limit: l.opt.MemoryLimit}
	top := len(l.layers)
	root := &lnode{layer: top, n: &dedup.TreeNode{Mode: syscall.S_IFDIR | 0o755}}
	shared := &reader{ctx: ctx, warn: warn}
	var done int64
	for i := len(l.layers) - 1; i >= 0; i-- {
		lr := &layerReader{reader: shared, l: l, layer: l.layers[i], idx: i, root: root,
			members: map[string]*layerMember{}, refetch: map[int64]*layerMember{},
			files: map[string]bool{}, cuts: map[string]int{},
			touched: map[*lnode]*touch{}}
		shared.src = &Source{name: "layer " + l.layers[i].Name}
		shared.lastName = ""
		n, err := lr.read(ctx, func(k int64) {
			if progress != nil {
				progress(done + k)
			}
		})
		if err != nil {
			return nil, err
		}
		done += n
		lr.settle()
		if len(lr.refetch) > 0 {
			if err := lr.fetch(ctx); err != nil {
				return nil, err
			}
		}
	}
	shared.src = &Source{name: "layers"}
	if warn != nil {
		if shared.xattrs > 0 {
			warn("image layers: dropped %d extended attributes and ACLs, which the image cannot hold", shared.xattrs)
		}
		if n := len(shared.skipped); n > 0 {
			var types []string
			for t, c := range shared.skipped {
				types = append(types, fmt.Sprintf("%d of type %q", c, t))
			}
			sort.Strings(types)
			warn("image layers: skipped members of types the image cannot hold: %s", strings.Join(types, ", "))
		}
	}
	finishLayers(root)
	return root.n, nil
}

// finishLayers turns the merged tree into TreeNodes.
func finishLayers(d *lnode) {
	d.n.Children = d.n.Children[:0]
	for name, k := range d.kids {
		if k.n == nil || k.ghost {
			continue
		}
		k.n.Name = name
		d.n.Children = append(d.n.Children, k.n)
		if isDir(k.n) {
			finishLayers(k)
		}
	}
	sort.Slice(d.n.Children, func(i, j int) bool { return d.n.Children[i].Name < d.n.Children[j].Name })
}

// read reads the layer's members, returning the decoded bytes read.
func (lr *layerReader) read(ctx context.Context, progress func(int64)) (int64, error) {
	rc, err := lr.layer.Open(ctx)
	if err != nil {
		return 0, fmt.Errorf("layer %s: %w", lr.layer.Name, err)
	}
	defer rc.Close()
	pos := &posReader{r: rc}
	lr.pos = pos
	tr := tar.NewReader(pos)
	next := int64(0)
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		start := next
		hdr, err := tr.Next()
		if errors.Is(err, tar.ErrInsecurePath) {
			err = nil
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, lr.blobError(pos, lr.headerError(start, err))
		}
		if err := lr.add(tr, hdr, start); err != nil {
			return 0, lr.blobError(pos, err)
		}
		lr.lastName, lr.lastStart = hdr.Name, start
		next = (pos.pos + 511) &^ 511
		progress(pos.pos)
	}
	// The rest (the end blocks and any padding) goes through the
	// layer's digest check too.
	if _, err := io.Copy(io.Discard, pos); err != nil {
		return 0, fmt.Errorf("layer %s: %w", lr.layer.Name, err)
	}
	progress(pos.pos)
	return pos.pos, nil
}

// blobError reads the rest of a layer that turned out bad: a corrupt
// blob is better named by its digest check than by what the tar reader
// made of it.
func (lr *layerReader) blobError(r io.Reader, err error) error {
	if _, derr := io.Copy(io.Discard, r); derr != nil {
		return fmt.Errorf("layer %s: %w", lr.layer.Name, derr)
	}
	return err
}

// add applies one member.
func (lr *layerReader) add(tr *tar.Reader, hdr *tar.Header, start int64) error {
	n, ok := lr.node(hdr)
	if !ok {
		return nil
	}
	name, err := lr.cleanName(hdr.Name, start)
	if err != nil {
		return err
	}
	dir, base := path.Split(name)
	dir = strings.TrimSuffix(dir, "/")
	if strings.HasPrefix(base, WhiteoutPrefix) {
		switch {
		case base == OpaqueWhiteout:
			lr.opaque(dir)
		case strings.HasPrefix(base, WhiteoutPrefix+WhiteoutPrefix), base == WhiteoutPrefix:
			// Other metadata of aufs (.wh..wh.plnk and the like): never
			// part of the tree.
		default:
			lr.whiteout(path.Join(dir, base[len(WhiteoutPrefix):]))
		}
		return nil
	}
	var m *layerMember
	switch hdr.Typeflag {
	case tar.TypeLink:
		target, err := lr.cleanName(hdr.Linkname, start)
		if err != nil {
			return err
		}
		t := lr.members[target]
		if t == nil {
			return lr.memberError(hdr.Name, start, fmt.Errorf("hard link to %s, which is not a file of the layer before it", hdr.Linkname))
		}
		if t.n.Mode&syscall.S_IFMT != syscall.S_IFREG {
			c := *t.n
			n = &c
			m = &layerMember{n: n}
			if _, err := lr.place(name, n, hdr.Name, start); err != nil {
				return err
			}
			break
		}
		n, m = &dedup.TreeNode{Mode: t.n.Mode, Link: t.n}, t
		ok, err := lr.place(name, n, hdr.Name, start)
		if err != nil {
			return err
		}
		if ok && t.n.Data.R == nil {
			// The target is hidden by an upper layer, but its data is
			// needed.
			if t.n.Size == 0 || (lr.layer.File != nil && !t.sparse) {
				if err := lr.data(nil, t, t.n.Size); err != nil {
					return lr.memberError(hdr.Name, start, err)
				}
			} else {
				lr.refetch[t.off] = t
			}
		}
	case tar.TypeReg, tar.TypeRegA, tar.TypeCont, tar.TypeGNUSparse:
		if hdr.Size < 0 {
			return lr.memberError(hdr.Name, start, fmt.Errorf("negative size %d", hdr.Size))
		}
		n.Size = hdr.Size
		n.Data.Name = lr.layer.Name + ":" + hdr.Name
		m = &layerMember{n: n, off: lr.pos.pos, sparse: sparse(hdr)}
		ok, err := lr.place(name, n, hdr.Name, start)
		if err != nil {
			return err
		}
		if ok {
			if err := lr.data(tr, m, hdr.Size); err != nil {
				return lr.memberError(hdr.Name, start, err)
			}
		}
	default:
		if _, err := lr.place(name, n, hdr.Name, start); err != nil {
			return err
		}
		if isDir(n) {
			delete(lr.members, name)
			delete(lr.files, name)
			return nil
		}
		m = &layerMember{n: n}
	}
	lr.members[name] = m
	lr.seq++
	lr.files[name], lr.cuts[name] = true, lr.seq
	return nil
}

// isFile tells whether the layer's own tree, as its members so far
// make it, has a non-directory at p.
func (lr *layerReader) isFile(p string) bool {
	if !lr.files[p] {
		return false
	}
	at := lr.cuts[p]
	for i := range len(p) {
		if p[i] == '/' && lr.cuts[p[:i]] > at {
			return false
		}
	}
	return true
}

// data locates a visible regular file's bytes: in place, or copied to
// the spill from the tar reader (which is at the member's data).
func (lr *layerReader) data(r io.Reader, m *layerMember, size int64) error {
	n, sp := m.n, lr.l.spill
	if size == 0 {
		n.Data.R, n.Data.Off = sp, sp.size
		return nil
	}
	if m.sparse {
		off, ext, err := sp.copySparse(r, size)
		if err != nil {
			return err
		}
		n.Data.R, n.Data.Off = sp, off
		if len(ext) != 1 || ext[0].off != 0 || ext[0].len != size {
			n.Data.Extents = make([]dedup.Extent, len(ext))
			for i, e := range ext {
				n.Data.Extents[i] = dedup.Extent{Off: e.off, Len: e.len}
			}
		}
		return nil
	}
	if f := lr.layer.File; f != nil {
		if m.off+size > lr.layer.Size {
			return errShort
		}
		n.Data.R, n.Data.Off = archiveFile{f}, lr.layer.Offset+m.off
		return nil
	}
	off, err := sp.copyFrom(r, size)
	if err != nil {
		return err
	}
	n.Data.R, n.Data.Off = sp, off
	return nil
}

// fetch reads the layer again for the data of files that upper layers
// hide but that a visible hard link of the layer names (rare: only then
// is a layer decoded twice).
func (lr *layerReader) fetch(ctx context.Context) error {
	rc, err := lr.layer.Open(ctx)
	if err != nil {
		return fmt.Errorf("layer %s: %w", lr.layer.Name, err)
	}
	defer rc.Close()
	pos := &posReader{r: rc}
	tr := tar.NewReader(pos)
	for len(lr.refetch) > 0 {
		hdr, err := tr.Next()
		if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("layer %s: reading it again: %w", lr.layer.Name, err)
		}
		m := lr.refetch[pos.pos]
		if m == nil {
			continue
		}
		delete(lr.refetch, pos.pos)
		if err := lr.data(tr, m, hdr.Size); err != nil {
			return fmt.Errorf("layer %s: member %s: %w", lr.layer.Name, hdr.Name, err)
		}
	}
	return nil
}

// implicitDir is a directory no member of the layer names, made for a
// path below it; it takes its owner and time from n, as in a tar input.
func implicitDir(n *dedup.TreeNode) *dedup.TreeNode {
	src := n
	if n.Link != nil {
		src = n.Link
	}
	return &dedup.TreeNode{Mode: syscall.S_IFDIR | 0o755, UID: src.UID, GID: src.GID,
		Atime: src.Mtime, Mtime: src.Mtime, Ctime: src.Mtime}
}

// walk finds the directory that holds the last component of parts, as
// seen from this layer: nil if an upper layer hides it. Missing
// directories are made like the member's parents in a tar input, or,
// for a whiteout (like nil), as ghosts: in the result only if a layer
// has something there.
func (lr *layerReader) walk(parts []string, like *dedup.TreeNode, member string, start int64) (*lnode, error) {
	newDir := func() *dedup.TreeNode {
		if like != nil {
			return implicitDir(like)
		}
		return &dedup.TreeNode{Mode: syscall.S_IFDIR | 0o755}
	}
	d := lr.root
	for i, c := range parts {
		if d.opaque > lr.idx {
			return nil, nil
		}
		k := d.kids[c]
		switch {
		case k == nil:
			k = &lnode{layer: lr.idx, n: newDir(), ghost: like == nil}
			if d.kids == nil {
				d.kids = map[string]*lnode{}
			}
			d.kids[c] = k
		case k.n == nil: // a whiteout
			if k.layer > lr.idx || like == nil {
				return nil, nil
			}
			// This layer removes the lower path and puts something
			// below it: a new directory.
			k.n, k.opaque, k.ghost = newDir(), lr.idx, like == nil
		case !isDir(k.n):
			if k.layer > lr.idx || like == nil {
				return nil, nil
			}
			return nil, lr.memberError(member, start, fmt.Errorf("%s is not a directory", strings.Join(parts[:i+1], "/")))
		}
		if k.ghost && k.explicit {
			// A layer above this one whited the path out (settle made
			// the ghost explicit), and the layers above that have only
			// whiteouts there: nothing of this layer shows, and the
			// directory must not come back for it.
			return nil, nil
		}
		if like != nil && !k.explicit && k.layer > lr.idx {
			// Applied from the bottom up, the lowest layer that needs
			// a directory no member names makes it.
			if t := lr.touch(k); !t.set {
				keepAttrs(k.n, implicitDir(like))
				t.set, t.killed = true, false
			}
		} else if like != nil && k.ghost {
			keepAttrs(k.n, implicitDir(like))
		}
		if like != nil {
			k.ghost = false
		}
		d = k
	}
	return d, nil
}

// place puts a member's node at p unless an upper layer hides it, and
// tells whether it is in the result.
func (lr *layerReader) place(p string, n *dedup.TreeNode, member string, start int64) (bool, error) {
	if p == "" {
		if !isDir(n) {
			return false, lr.memberError(member, start, errors.New("the layer's root is not a directory"))
		}
		if !lr.root.explicit || lr.root.layer == lr.idx {
			keepAttrs(lr.root.n, n)
			lr.root.explicit, lr.root.layer = true, lr.idx
		}
		return true, nil
	}
	parts := strings.Split(p, "/")
	for i := range parts[:len(parts)-1] {
		// A non-directory this layer put here (even one an upper layer
		// hides) cannot hold the member, as in a tar input.
		if q := strings.Join(parts[:i+1], "/"); lr.isFile(q) {
			return false, lr.memberError(member, start, fmt.Errorf("%s is not a directory", q))
		}
	}
	d, err := lr.walk(parts[:len(parts)-1], n, member, start)
	if err != nil || d == nil || d.opaque > lr.idx {
		return false, err
	}
	name := parts[len(parts)-1]
	k := d.kids[name]
	switch {
	case k == nil:
		if d.kids == nil {
			d.kids = map[string]*lnode{}
		}
		d.kids[name] = &lnode{n: n, layer: lr.idx, explicit: true}
		return true, nil
	case k.layer > lr.idx && !isDir(n) && !k.explicit && (k.ghost || lr.touched[k] != nil && lr.touched[k].ghost):
		// Only whiteouts of upper layers are below: they remove
		// nothing from a non-directory.
		// (Those whiteouts and its opacity stay for a directory this
		// layer may put here next.)
		delete(lr.touched, k)
		lr.prune(k)
		lr.killBelow(k)
		k.n, k.layer, k.explicit, k.ghost = n, lr.idx, true, false
		return true, nil
	case k.layer > lr.idx && isDir(k.n):
		// An upper layer has a directory here: only one it made for
		// its members (and no member named) takes a lower directory's
		// attributes.
		if isDir(n) {
			if k.explicit {
				return false, nil
			}
			t := lr.touch(k)
			keepAttrs(k.n, n)
			t.set, t.dir, t.killed, k.ghost = true, true, false, false
			return true, nil
		}
		// A non-directory of this layer removes what it and the lower
		// layers had below; the upper layer makes the directory anew.
		lr.prune(k)
		k.opaque = max(k.opaque, lr.idx)
		lr.kill(k)
		return false, nil
	case k.layer > lr.idx:
		return false, nil
	case isDir(k.n) && isDir(n):
		keepAttrs(k.n, n)
		k.explicit, k.ghost = true, false
		return true, nil
	default:
		// A later member of the same layer replaces an earlier one (or
		// its whiteout), and with it what the lower layers had there.
		lr.prune(k)
		if !isDir(n) {
			lr.killBelow(k)
		}
		k.n, k.explicit, k.ghost, k.opaque = n, true, false, max(k.opaque, lr.idx)
		return true, nil
	}
}

// touch is what a layer did to a directory an upper layer made for its
// members without naming it.
type touch struct {
	orig   dedup.TreeNode // its attributes before the layer
	set    bool           // the layer gave it attributes
	dir    bool           // a directory member of the layer did
	killed bool           // the layer's last word there is a non-directory
	ghost  bool           // it was a ghost before the layer
	cut    bool           // the layer whited out the lower layers' one
}

func (lr *layerReader) touch(k *lnode) *touch {
	t := lr.touched[k]
	if t == nil {
		t = &touch{orig: *k.n, ghost: k.ghost}
		lr.touched[k] = t
	}
	return t
}

// settle fixes the attributes of the directories the layer touched.
func (lr *layerReader) settle() {
	for k, t := range lr.touched {
		switch {
		case t.killed:
			// A non-directory of the layer removed what it had made
			// visible here: a ghost stays one.
			keepAttrs(k.n, &t.orig)
			k.explicit, k.ghost = true, t.ghost
		case t.dir:
			k.explicit = true
		case t.cut:
			if !t.set {
				keepAttrs(k.n, &t.orig)
			}
			k.explicit = true
		}
	}
}

// kill undoes what this layer did to the attributes of the directories
// an upper layer made at and below k without naming them: a non-directory
// of this layer removed them, so the upper layer makes them anew.
func (lr *layerReader) kill(k *lnode) {
	if !k.explicit {
		t := lr.touch(k)
		t.killed, t.dir, t.set = true, false, false
	}
	lr.killBelow(k)
}

// killBelow kills the directories of upper layers below k, which a
// non-directory of this layer replaces.
func (lr *layerReader) killBelow(k *lnode) {
	for _, c := range k.kids {
		if c.layer > lr.idx && isDir(c.n) {
			lr.kill(c)
		}
	}
}

// prune removes what this layer put below k.
func (lr *layerReader) prune(k *lnode) {
	for name, c := range k.kids {
		if c.layer == lr.idx {
			delete(k.kids, name)
		} else if c.n != nil && isDir(c.n) {
			lr.prune(c)
		}
	}
}

// keepAttrs gives the directory d the attributes of n.
func keepAttrs(d, n *dedup.TreeNode) {
	d.Mode, d.UID, d.GID, d.Atime, d.Mtime, d.Ctime = n.Mode, n.UID, n.GID, n.Atime, n.Mtime, n.Ctime
}

// whiteout removes p from the layers below this one.
func (lr *layerReader) whiteout(p string) {
	parts := strings.Split(p, "/")
	d, _ := lr.walk(parts[:len(parts)-1], nil, "", 0)
	if d == nil || d.opaque > lr.idx {
		return
	}
	name := parts[len(parts)-1]
	k := d.kids[name]
	switch {
	case k == nil:
		if d.kids == nil {
			d.kids = map[string]*lnode{}
		}
		d.kids[name] = &lnode{layer: lr.idx, explicit: true}
	case k.ghost && k.layer == lr.idx:
		*k = lnode{layer: lr.idx, explicit: true}
	case isDir(k.n):
		// A directory of this or an upper layer stays; what the lower
		// layers had in it (and its attributes) is gone.
		k.opaque = max(k.opaque, lr.idx)
		if !k.explicit && k.layer > lr.idx {
			lr.touch(k).cut = true
		} else if !k.explicit {
			k.explicit = true
		}
	}
}

// opaque hides the lower layers' content of directory p.
func (lr *layerReader) opaque(p string) {
	if p == "" {
		lr.root.opaque = max(lr.root.opaque, lr.idx)
		return
	}
	parts := strings.Split(p, "/")
	d, _ := lr.walk(parts, nil, "", 0)
	if d != nil {
		d.opaque = max(d.opaque, lr.idx)
	}
}

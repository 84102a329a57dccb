// Package tarinput reads a tar archive (plain, or compressed with gzip,
// xz, zstd or bzip2; from a file or a pipe) as an input tree for the image
// builder (dedup.TreeSource). A plain tar file is read in place: the
// builder reads each member's data at its offset in the archive. A
// compressed archive or a pipe is decoded once, its members' data kept in
// memory or, beyond a limit, in an unlinked temporary file.
package tarinput

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/bzip2"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"syscall"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/metadata"
)

// Options configure a Source.
type Options struct {
	// TempDir holds the spill file of a compressed archive or a pipe
	// ("": os.TempDir()).
	TempDir string
	// MemoryLimit is how many bytes of decoded member data are kept in
	// memory before they go to the spill file (0: DefaultMemoryLimit).
	MemoryLimit int64
}

// DefaultMemoryLimit is Options.MemoryLimit's default.
const DefaultMemoryLimit = 16 << 20

// Source is a tar archive as a dedup.TreeSource. Close it after the build.
type Source struct {
	name  string // for messages; "-" is standard input
	r     io.Reader
	opt   Options
	spill *spill
}

// New returns a Source reading the archive from r: an *os.File of a
// regular file is read in place when the archive is not compressed.
// name names the archive in messages.
func New(name string, r io.Reader, opt Options) *Source {
	if opt.MemoryLimit == 0 {
		opt.MemoryLimit = DefaultMemoryLimit
	}
	if opt.TempDir == "" {
		opt.TempDir = os.TempDir()
	}
	return &Source{name: name, r: r, opt: opt}
}

// Close releases the decoded data.
func (s *Source) Close() error {
	if s.spill != nil {
		return s.spill.close()
	}
	return nil
}

// The magic numbers of the compressions understood.
var magics = []struct {
	name  string
	magic []byte
}{
	{"gzip", []byte{0x1f, 0x8b}},
	{"xz", []byte{0xfd, '7', 'z', 'X', 'Z', 0}},
	{"zstd", []byte{0x28, 0xb5, 0x2f, 0xfd}},
	{"bzip2", []byte("BZh")},
}

// compression names the compression head starts with ("" for none).
func compression(head []byte) string {
	for _, m := range magics {
		if bytes.HasPrefix(head, m.magic) {
			return m.name
		}
	}
	return ""
}

// Detect tells whether the file at path is a tar archive, plain or
// compressed (by its first bytes, not its name).
func Detect(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, 64<<10)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, err
	}
	return isTar(head[:n]), nil
}

func isTar(head []byte) bool {
	if compression(head) != "" {
		return true
	}
	if len(head) >= 1024 && bytes.Count(head[:1024], []byte{0}) == 1024 {
		return true // an empty archive
	}
	_, err := tar.NewReader(bytes.NewReader(head)).Next()
	return err == nil || errors.Is(err, tar.ErrInsecurePath)
}

// posReader counts the bytes read through it: a tar reader's position in
// the (decoded) archive.
type posReader struct {
	r   io.Reader
	pos int64
}

func (p *posReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.pos += int64(n)
	return n, err
}

// posSeeker is a posReader over a file, which the tar reader skips data
// in by seeking.
type posSeeker struct {
	posReader
	f *os.File
}

func (p *posSeeker) Seek(off int64, whence int) (int64, error) {
	n, err := p.f.Seek(off, whence)
	if err == nil {
		p.pos = n
	}
	return n, err
}

// ReadTree reads the archive into a tree.
func (s *Source) ReadTree(ctx context.Context, progress func(int64), warn func(string, ...any)) (*dedup.TreeNode, error) {
	if s.spill != nil {
		return nil, errors.New("tarinput: the archive was read already")
	}
	s.spill = &spill{dir: s.opt.TempDir, limit: s.opt.MemoryLimit}
	rd := &reader{src: s, ctx: ctx, progress: progress, warn: warn}
	defer func() { rd.kids = nil }()
	if f, ok := s.r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			base, err := f.Seek(0, io.SeekCurrent)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.name, err)
			}
			var head [8]byte
			n, _ := f.ReadAt(head[:], base)
			if compression(head[:n]) == "" {
				// Plain: read in place.
				ps := &posSeeker{posReader{f, base}, f}
				rd.next = base
				rd.pos, rd.raw = &ps.posReader, &ps.posReader
				rd.inPlace, rd.size = archiveFile{f}, st.Size()
				return rd.read(tar.NewReader(ps))
			}
		}
	}
	raw := &posReader{r: s.r}
	br := bufio.NewReaderSize(raw, 1<<20)
	head, _ := br.Peek(8)
	var dec io.Reader = br
	var closeDec func()
	switch c := compression(head); c {
	case "gzip":
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: gzip: %w", s.name, err)
		}
		dec = z
	case "xz":
		z, err := xz.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: xz: %w", s.name, err)
		}
		dec = z
	case "zstd":
		z, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(2))
		if err != nil {
			return nil, fmt.Errorf("%s: zstd: %w", s.name, err)
		}
		dec, closeDec = z, z.Close
	case "bzip2":
		dec = bzip2.NewReader(br)
	}
	if closeDec != nil {
		defer closeDec()
	}
	rd.raw = raw
	rd.pos = &posReader{r: dec}
	return rd.read(tar.NewReader(rd.pos))
}

// reader builds the tree of one archive.
type reader struct {
	src      *Source
	ctx      context.Context
	progress func(int64)
	warn     func(string, ...any)
	raw      *posReader // the archive as read (compressed): progress
	pos      *posReader // the tar stream: member offsets
	inPlace  io.ReaderAt
	size     int64 // of an archive read in place

	root      *dedup.TreeNode
	kids      map[*dedup.TreeNode]map[string]*dedup.TreeNode
	xattrs    int
	skipped   map[byte]int
	stripped  bool
	lastName  string
	lastStart int64
	next      int64 // where the next header starts
	unread    int64 // data of the member read in place
}

// memberError names the member and the offset of its header.
func (r *reader) memberError(name string, off int64, err error) error {
	return fmt.Errorf("%s: member %s at offset %d: %w", r.src.name, name, off, err)
}

func (r *reader) read(tr *tar.Reader) (*dedup.TreeNode, error) {
	r.kids = map[*dedup.TreeNode]map[string]*dedup.TreeNode{}
	for {
		if err := r.ctx.Err(); err != nil {
			return nil, err
		}
		start := r.next
		hdr, err := tr.Next()
		if errors.Is(err, tar.ErrInsecurePath) {
			err = nil // names are made local below
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, r.headerError(start, err)
		}
		if err := r.add(tr, hdr, start); err != nil {
			return nil, err
		}
		r.lastName, r.lastStart = hdr.Name, start
		// The next header follows this member's data, which the tar
		// reader has consumed unless it is read in place.
		r.next = r.pos.pos + r.unread
		r.next = (r.next + 511) &^ 511
		r.unread = 0
		if r.progress != nil {
			r.progress(r.raw.pos)
		}
	}
	if r.progress != nil {
		r.progress(r.raw.pos)
	}
	if r.warn != nil {
		if r.xattrs > 0 {
			r.warn("%s: dropped %d extended attributes and ACLs, which the image cannot hold", r.src.name, r.xattrs)
		}
		if n := len(r.skipped); n > 0 {
			var types []string
			for t, c := range r.skipped {
				types = append(types, fmt.Sprintf("%d of type %q", c, t))
			}
			sort.Strings(types)
			r.warn("%s: skipped members of types the image cannot hold: %s", r.src.name, strings.Join(types, ", "))
		}
	}
	if r.root == nil {
		r.root = &dedup.TreeNode{Mode: syscall.S_IFDIR | 0o755}
	}
	r.finish(r.root)
	return r.root, nil
}

// headerError explains a failed Next: a bad header, or the previous
// member's data (which Next skips) or the archive ending early.
func (r *reader) headerError(start int64, err error) error {
	what := "bad tar header"
	if errors.Is(err, io.ErrUnexpectedEOF) {
		if r.lastName != "" {
			return r.memberError(r.lastName, r.lastStart, errShort)
		}
		what = "archive truncated"
	}
	after := ""
	if r.lastName != "" {
		after = fmt.Sprintf(" (after member %s)", r.lastName)
	}
	return fmt.Errorf("%s: %s at offset %d%s: %w", r.src.name, what, start, after, err)
}

// cleanName makes a member name relative to the root as GNU tar does on
// extraction: leading slashes and "." components go; ".." is refused.
func (r *reader) cleanName(name string, start int64) (string, error) {
	if strings.HasPrefix(name, "/") && !r.stripped {
		r.stripped = true
		if r.warn != nil {
			r.warn("%s: removing leading '/' from member names", r.src.name)
		}
	}
	if s, ok := alreadyClean(name); ok {
		return s, nil
	}
	parts := strings.Split(name, "/")
	out := parts[:0]
	for _, p := range parts {
		switch p {
		case "", ".":
			continue
		case "..":
			return "", r.memberError(name, start, errors.New("name contains '..'"))
		}
		out = append(out, p)
	}
	return strings.Join(out, "/"), nil
}

// alreadyClean returns what cleanName makes of name as a substring of
// name, when that is what name is once its leading "/" and "./" and its
// trailing "/" are gone (most members): the tree's entry names then share
// the member name's memory, which the file's data keeps for its errors,
// instead of holding a second copy of every path.
func alreadyClean(name string) (string, bool) {
	s := name
	for {
		if t, ok := strings.CutPrefix(s, "/"); ok {
			s = t
		} else if t, ok := strings.CutPrefix(s, "./"); ok {
			s = t
		} else {
			break
		}
	}
	s = strings.TrimRight(s, "/")
	if s == "." {
		return "", true
	}
	for rest := s; rest != ""; {
		c, next, _ := strings.Cut(rest, "/")
		if c == "" || c == "." || c == ".." {
			return "", false
		}
		rest = next
	}
	return s, true
}

// add puts one member into the tree.
func (r *reader) add(tr *tar.Reader, hdr *tar.Header, start int64) error {
	n, ok := r.node(hdr)
	if !ok {
		return nil
	}
	name, err := r.cleanName(hdr.Name, start)
	if err != nil {
		return err
	}
	switch hdr.Typeflag {
	case tar.TypeLink:
		target, err := r.cleanName(hdr.Linkname, start)
		if err != nil {
			return err
		}
		t := r.lookup(target)
		if t == nil {
			return r.memberError(hdr.Name, start, fmt.Errorf("hard link to %s, which is not in the archive before it", hdr.Linkname))
		}
		if t.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			return r.memberError(hdr.Name, start, fmt.Errorf("hard link to the directory %s", hdr.Linkname))
		}
		if t.Link != nil {
			t = t.Link
		}
		if t.Mode&syscall.S_IFMT == syscall.S_IFREG {
			n = &dedup.TreeNode{Mode: t.Mode, Link: t}
		} else {
			c := *t
			n = &c
		}
	case tar.TypeReg, tar.TypeRegA, tar.TypeCont, tar.TypeGNUSparse:
		if hdr.Size < 0 {
			return r.memberError(hdr.Name, start, fmt.Errorf("negative size %d", hdr.Size))
		}
		n.Size = hdr.Size
		n.Data.Name = hdr.Name
		if err := r.data(tr, hdr, n, start); err != nil {
			return err
		}
	}
	return r.place(hdr.Name, name, n, start)
}

// node makes the TreeNode of a member, counting what the image cannot
// hold; ok is false for a member that is skipped.
func (r *reader) node(hdr *tar.Header) (n *dedup.TreeNode, ok bool) {
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "SCHILY.xattr.") || strings.HasPrefix(k, "LIBARCHIVE.xattr.") || strings.HasPrefix(k, "SCHILY.acl.") || k == "RHT.security.selinux" {
			r.xattrs++
		}
	}
	var mode uint32
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeRegA, tar.TypeCont, tar.TypeGNUSparse, tar.TypeLink:
		mode = syscall.S_IFREG
	case tar.TypeDir:
		mode = syscall.S_IFDIR
	case tar.TypeSymlink:
		mode = syscall.S_IFLNK
	case tar.TypeChar:
		mode = syscall.S_IFCHR
	case tar.TypeBlock:
		mode = syscall.S_IFBLK
	case tar.TypeFifo:
		mode = syscall.S_IFIFO
	case tar.TypeXGlobalHeader:
		return nil, false
	default:
		if r.skipped == nil {
			r.skipped = map[byte]int{}
		}
		r.skipped[hdr.Typeflag]++
		return nil, false
	}
	n = &dedup.TreeNode{
		Mode:  mode | uint32(hdr.Mode&0o7777),
		UID:   uint32(hdr.Uid),
		GID:   uint32(hdr.Gid),
		Mtime: hdr.ModTime,
		Atime: hdr.AccessTime,
		Ctime: hdr.ChangeTime,
	}
	if n.Atime.IsZero() {
		n.Atime = n.Mtime
	}
	if n.Ctime.IsZero() {
		n.Ctime = n.Mtime
	}
	switch hdr.Typeflag {
	case tar.TypeSymlink:
		n.Target = hdr.Linkname
	case tar.TypeChar, tar.TypeBlock:
		n.Rdev = metadata.MakeDev(uint32(hdr.Devmajor), uint32(hdr.Devminor))
	}
	return n, true
}

// sparse tells whether hdr is a sparse file (GNU or pax format).
func sparse(hdr *tar.Header) bool {
	if hdr.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// data locates a regular member's data: in place in a plain archive file,
// else copied to the spill.
func (r *reader) data(tr *tar.Reader, hdr *tar.Header, n *dedup.TreeNode, start int64) error {
	sp := r.src.spill
	if sparse(hdr) {
		off, ext, err := sp.copySparse(tr, hdr.Size)
		if err != nil {
			return r.memberError(hdr.Name, start, err)
		}
		n.Data.R, n.Data.Off = sp, off
		if len(ext) != 1 || ext[0].off != 0 || ext[0].len != hdr.Size {
			n.Data.Extents = make([]dedup.Extent, len(ext))
			for i, e := range ext {
				n.Data.Extents[i] = dedup.Extent{Off: e.off, Len: e.len}
			}
		}
		return nil
	}
	if r.inPlace != nil {
		off := r.pos.pos
		if off+hdr.Size > r.size {
			return r.memberError(hdr.Name, start, errShort)
		}
		n.Data.R, n.Data.Off = r.inPlace, off
		r.unread = hdr.Size
		return nil
	}
	off, err := sp.copyFrom(tr, hdr.Size)
	if err != nil {
		return r.memberError(hdr.Name, start, err)
	}
	n.Data.R, n.Data.Off = sp, off
	return nil
}

// lookup finds the node at a cleaned path (nil: none).
func (r *reader) lookup(p string) *dedup.TreeNode {
	if r.root == nil {
		return nil
	}
	n := r.root
	if p == "" {
		return n
	}
	for _, c := range strings.Split(p, "/") {
		if n = r.kids[n][c]; n == nil {
			return nil
		}
	}
	return n
}

// place puts n at path p, creating missing parents with the attributes
// of n. A later member replaces an earlier one of the same path, as tar
// extraction does; a directory over a directory keeps its entries.
func (r *reader) place(member, p string, n *dedup.TreeNode, start int64) error {
	if p == "" {
		if n.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			return r.memberError(member, start, errors.New("the archive root is not a directory"))
		}
		if r.root == nil {
			r.root = n
		} else {
			keepChildren(r.root, n)
		}
		return nil
	}
	implicit := func() *dedup.TreeNode {
		src := n
		if n.Link != nil {
			src = n.Link
		}
		return &dedup.TreeNode{Mode: syscall.S_IFDIR | 0o755, UID: src.UID, GID: src.GID,
			Atime: src.Mtime, Mtime: src.Mtime, Ctime: src.Mtime}
	}
	if r.root == nil {
		r.root = implicit()
	}
	dir := r.root
	parts := strings.Split(p, "/")
	for i, c := range parts[:len(parts)-1] {
		next := r.kids[dir][c]
		if next == nil {
			next = implicit()
			next.Name = c
			r.child(dir, next)
		} else if next.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			return r.memberError(member, start, fmt.Errorf("%s is not a directory", strings.Join(parts[:i+1], "/")))
		}
		dir = next
	}
	n.Name = parts[len(parts)-1]
	if old := r.kids[dir][n.Name]; old != nil && old.Mode&syscall.S_IFMT == syscall.S_IFDIR && n.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		keepChildren(old, n)
		return nil
	}
	r.child(dir, n)
	return nil
}

// keepChildren gives the directory old the attributes of n.
func keepChildren(old, n *dedup.TreeNode) {
	name := old.Name
	*old = dedup.TreeNode{Name: name, Mode: n.Mode, UID: n.UID, GID: n.GID, Atime: n.Atime, Mtime: n.Mtime, Ctime: n.Ctime}
}

func (r *reader) child(dir, n *dedup.TreeNode) {
	m := r.kids[dir]
	if m == nil {
		m = map[string]*dedup.TreeNode{}
		r.kids[dir] = m
	}
	m[n.Name] = n
}

// finish turns the child maps into sorted Children.
func (r *reader) finish(d *dedup.TreeNode) {
	m := r.kids[d]
	d.Children = make([]*dedup.TreeNode, 0, len(m))
	for _, c := range m {
		d.Children = append(d.Children, c)
	}
	sort.Slice(d.Children, func(i, j int) bool { return d.Children[i].Name < d.Children[j].Name })
	for _, c := range d.Children {
		if c.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			r.finish(c)
		}
	}
}

package dedup

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sync/errgroup"
)

type kind uint8

const (
	kDir kind = iota
	kLink
	kReg
	kDev
	kSpecial
)

type timespec struct{ sec, nsec int64 }

// extent is a data range of a sparse file; bytes between extents are holes.
type extent struct{ off, len int64 }

// inode is one file of the tree. A build holds one for every file, so
// what only some files have (devices, symbolic links, sparse extents,
// categories, base images, all three times) lives in x, allocated when
// needed, and the path to open is derived from the file's first entry.
type inode struct {
	kind       kind
	hasDigest  bool
	hot        bool // named in the hotness list
	dense      bool // as many bytes allocated as its size: no holes to look for
	mode       uint32
	uid, gid   uint32
	num        uint32
	simHash    uint32 // similarity order key
	nlinks     uint32 // dir entries referring to this inode
	mtimeNsec  uint32 // mtime in two fields: a timespec would pad the record
	mtimeSec   int64
	size       int64
	hash       string    // whole-file hash ("": not hashed)
	simDigest  [4]uint64 // nilsimsa digest
	data       *FileData // a TreeSource's file: read from here, not the path
	content    *content
	firstEntry *entry
	x          *inodeExtra // nil: none of its fields set
}

func (f *inode) mtime() timespec { return timespec{f.mtimeSec, int64(f.mtimeNsec)} }

func (f *inode) setMtime(t timespec) { f.mtimeSec, f.mtimeNsec = t.sec, uint32(t.nsec) }

// claimedBy is the categorizer that claimed the file: its position in
// Categorize plus one (0: none).
func (f *inode) claimedBy() int {
	if f.x == nil {
		return 0
	}
	return int(f.x.claimedBy)
}

func (f *inode) setClaimedBy(i int) { f.ext().claimedBy = uint16(i) }

// inodeExtra holds what few inodes have.
type inodeExtra struct {
	atime, ctime timespec // only with Options.KeepAllTimes
	rdev         uint64
	target       string
	// osPath is the path to open where it is not the input root joined
	// with the first entry's path: the root, and a TreeSource's files.
	osPath    string
	extents   []extent   // nil: not sparse
	frags     []fragment // categorizer result; nil: all default
	base      *baseRef   // a file of a base image (nil: scanned)
	claimedBy uint16     // see inode.claimedBy
}

// ext returns f's extra fields, allocating them.
func (f *inode) ext() *inodeExtra {
	if f.x == nil {
		f.x = &inodeExtra{}
	}
	return f.x
}

func (f *inode) target() string {
	if f.x == nil {
		return ""
	}
	return f.x.target
}

func (f *inode) rdev() uint64 {
	if f.x == nil {
		return 0
	}
	return f.x.rdev
}

func (f *inode) extents() []extent {
	if f.x == nil {
		return nil
	}
	return f.x.extents
}

func (f *inode) frags() []fragment {
	if f.x == nil {
		return nil
	}
	return f.x.frags
}

func (f *inode) setFrags(fr []fragment) {
	if fr != nil || f.x != nil {
		f.ext().frags = fr
	}
}

func (f *inode) base() *baseRef {
	if f.x == nil {
		return nil
	}
	return f.x.base
}

func (f *inode) times() (a, m, c timespec) {
	if f.x == nil {
		return timespec{}, f.mtime(), timespec{}
	}
	return f.x.atime, f.mtime(), f.x.ctime
}

// osPath is the path f is read from: for a TreeSource's file, its name in
// messages (the archive member's, else its path in the tree).
func (f *inode) osPath() string {
	if f.x != nil && f.x.osPath != "" {
		return f.x.osPath
	}
	if f.data != nil && f.data.Name != "" {
		return f.data.Name
	}
	e := f.firstEntry
	if e == nil {
		return ""
	}
	var n int
	root := e
	for ; !root.isTop(); root = root.parent {
		n += len(root.name) + 1
	}
	if root.ino.x == nil || root.ino.x.osPath == "" {
		return e.rel()
	}
	rp := root.ino.x.osPath
	b := make([]byte, n)
	i := n
	for p := e; !p.isTop(); p = p.parent {
		i -= len(p.name)
		copy(b[i:], p.name)
		i--
		b[i] = filepath.Separator
	}
	return filepath.Join(rp, string(b[i:]))
}

type entry struct {
	name string
	// top marks the root of an input tree (the scanned one, a base
	// image's): paths below the root are relative to it.
	top      bool
	parent   *entry
	children []*entry
	ino      *inode
}

// rel is e's slash separated path relative to the root ("" for the
// root). It is built when asked for rather than kept, as a build holds an
// entry for every file.
func (e *entry) rel() string {
	if e.isTop() {
		return ""
	}
	return string(e.appendRel(nil))
}

// appendRel appends e.rel() to dst.
func (e *entry) appendRel(dst []byte) []byte {
	if e.isTop() {
		return dst
	}
	n := -1
	for p := e; !p.isTop(); p = p.parent {
		n += len(p.name) + 1
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	i := start + n
	for p := e; !p.isTop(); p = p.parent {
		i -= len(p.name)
		copy(dst[i:], p.name)
		if i > start {
			i--
			dst[i] = '/'
		}
	}
	return dst
}

// compareRel compares a.rel() and b.rel() without allocating for paths of
// usual length.
func compareRel(a, b *entry) int {
	var ba, bb [512]byte
	return bytes.Compare(a.appendRel(ba[:0]), b.appendRel(bb[:0]))
}

func (e *entry) isTop() bool { return e.top || e.parent == nil }

type devIno struct{ dev, ino uint64 }

type scanner struct {
	opt   *Options
	root  string
	mu    sync.Mutex
	links map[devIno]*inode
	stats *Stats
	warn  func(format string, args ...any)
	// listPos maps each --input-list path to its first line (nil: no list).
	listPos map[string]int
}

// kindOf classifies a stat(2) mode (the S_IF* values are the same on
// every system Go supports, Windows included).
func kindOf(mode uint32) kind {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return kDir
	case syscall.S_IFLNK:
		return kLink
	case syscall.S_IFREG:
		return kReg
	case syscall.S_IFCHR, syscall.S_IFBLK:
		return kDev
	default:
		return kSpecial
	}
}

// lstat returns an inode for osPath, merging hard links of regular files.
// It returns nil (and no error) for entries excluded by type.
func (s *scanner) lstat(osPath string) (*inode, error) {
	in, st, err := statPath(osPath, false, s.opt.KeepAllTimes)
	if err != nil {
		return nil, &os.PathError{Op: "lstat", Path: osPath, Err: err}
	}
	switch in.kind {
	case kDev:
		if !s.opt.WithDevices {
			return nil, nil
		}
	case kSpecial:
		if !s.opt.WithSpecials {
			return nil, nil
		}
	case kLink:
		t, err := os.Readlink(osPath)
		if err != nil {
			return nil, fmt.Errorf("readlink: %w", err)
		}
		in.ext().target = t
		in.size = int64(len(t))
	case kReg:
		if st.nlink > 1 {
			key := st.id
			s.mu.Lock()
			defer s.mu.Unlock()
			if prev, ok := s.links[key]; ok {
				return prev, nil
			}
			s.links[key] = in
		}
	case kDir:
		in.size = 0
	}
	return in, nil
}

func (s *scanner) excluded(osPath string) bool {
	for _, x := range s.opt.Exclude {
		if x == osPath {
			return true
		}
	}
	return false
}

// rootInode stats the input root, following a symlink to it.
func (s *scanner) rootInode() (*inode, error) {
	in, _, err := statPath(s.root, true, s.opt.KeepAllTimes)
	if err != nil {
		return nil, fmt.Errorf("scanning input: %w", &os.PathError{Op: "stat", Path: s.root, Err: err})
	}
	if in.kind != kDir {
		return nil, fmt.Errorf("input %s is not a directory", s.root)
	}
	in.size = 0
	in.ext().osPath = s.root
	return in, nil
}

func (s *scanner) fail(err error) error {
	if s.opt.ContinueOnErr {
		s.warn("skipping: %v", err)
		s.mu.Lock()
		s.stats.Errors++
		s.mu.Unlock()
		return nil
	}
	return err
}

// walk scans the input tree in parallel (one goroutine per directory, bounded
// by the scanner worker count; directories are read inline when no worker is
// free so the recursion never blocks).
func (s *scanner) walk(ctx context.Context) (*entry, error) {
	rootIn, err := s.rootInode()
	if err != nil {
		return nil, err
	}
	root := &entry{ino: rootIn, top: true}
	g, gctx := errgroup.WithContext(ctx)
	n := s.opt.ScannerWorkers
	if n < 1 {
		n = 1
	}
	g.SetLimit(n)
	// The directory's path to open and its path below the root go down
	// the recursion rather than into the entries.
	var readDir func(d *entry, dirPath, dirRel string) error
	readDir = func(d *entry, dirPath, dirRel string) error {
		if err := gctx.Err(); err != nil {
			return err
		}
		names, err := readDirNames(s.opt.OpenFile, dirPath)
		if err != nil {
			return s.fail(fmt.Errorf("reading directory %s: %w", dirPath, err))
		}
		for _, name := range names {
			rel := name
			if dirRel != "" {
				rel = dirRel + "/" + name
			}
			osPath := filepath.Join(dirPath, name)
			if s.excluded(osPath) {
				continue
			}
			in, err := s.lstat(osPath)
			if err != nil {
				// Includes entries that vanished after readdir: the image
				// would silently miss them, so this is an error too.
				if err := s.fail(err); err != nil {
					return err
				}
				continue
			}
			if in == nil || !filterKeep(s.opt.Filters, rel, in.kind == kDir) {
				continue
			}
			c := &entry{name: name, parent: d, ino: in}
			d.children = append(d.children, c)
			if in.kind == kDir {
				f := func() error { return readDir(c, osPath, rel) }
				if !g.TryGo(f) {
					if err := f(); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	g.Go(func() error { return readDir(root, rootIn.osPath(), "") })
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return root, nil
}

func readDirNames(open func(string) (*os.File, error), p string) ([]string, error) {
	f, err := open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

// fromList builds the tree from an explicit list of relative paths; parent
// directories are added implicitly, listed directories are not recursed.
func (s *scanner) fromList(list []string) (*entry, error) {
	rootIn, err := s.rootInode()
	if err != nil {
		return nil, err
	}
	root := &entry{ino: rootIn, top: true}
	byRel := map[string]*entry{"": root}
	var add func(rel string) (*entry, error)
	add = func(rel string) (*entry, error) {
		if e, ok := byRel[rel]; ok {
			return e, nil
		}
		parentRel, name := path.Split(rel)
		parent, err := add(strings.TrimSuffix(parentRel, "/"))
		if err != nil || parent == nil {
			return nil, err
		}
		if parent.ino.kind != kDir {
			return nil, fmt.Errorf("input list: %s: parent is not a directory", rel)
		}
		in, err := s.lstat(filepath.Join(s.root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		if in == nil {
			byRel[rel] = nil
			return nil, nil
		}
		e := &entry{name: name, parent: parent, ino: in}
		parent.children = append(parent.children, e)
		byRel[rel] = e
		return e, nil
	}
	s.listPos = make(map[string]int, len(list))
	var absRoot string
	for i, l := range list {
		if filepath.IsAbs(l) {
			// As the reference: an absolute path must lie below the input.
			if absRoot == "" {
				if absRoot, err = canonicalDir(s.root); err != nil {
					return nil, fmt.Errorf("input list: %w", err)
				}
			}
			p := filepath.Clean(l)
			if d, err := canonicalDir(filepath.Dir(p)); err == nil {
				p = filepath.Join(d, filepath.Base(p))
			}
			r, err := filepath.Rel(absRoot, p)
			if err != nil || r == ".." || strings.HasPrefix(r, "../") {
				s.warn("input list: ignoring %s: not below the input %s", l, absRoot)
				continue
			}
			l = r
		}
		rel := CleanListPath(filepath.ToSlash(l))
		if rel == "" {
			continue
		}
		if _, ok := s.listPos[rel]; !ok {
			s.listPos[rel] = i
		}
		if strings.HasPrefix(rel, "../") || rel == ".." {
			return nil, fmt.Errorf("input list: %q is outside the input directory", l)
		}
		if _, err := add(rel); err != nil {
			if err := s.fail(err); err != nil {
				return nil, err
			}
		}
	}
	var sortRec func(e *entry)
	sortRec = func(e *entry) {
		sort.Slice(e.children, func(i, j int) bool { return e.children[i].name < e.children[j].name })
		for _, c := range e.children {
			sortRec(c)
		}
	}
	sortRec(root)
	return root, nil
}

// canonicalDir is the absolute path of directory d with symbolic links
// resolved.
func canonicalDir(d string) (string, error) {
	a, err := filepath.Abs(d)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(a)
}

// ReadInputList reads newline separated paths (empty lines ignored).
func ReadInputList(r io.Reader) ([]string, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading input list: %w", err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSuffix(l, "\r")
		if l != "" {
			out = append(out, l)
		}
	}
	return out, nil
}

// removeEmptyDirs drops directories without (remaining) children, bottom up.
func removeEmptyDirs(e *entry) {
	kept := e.children[:0]
	for _, c := range e.children {
		if c.ino.kind == kDir {
			removeEmptyDirs(c)
			if len(c.children) == 0 {
				continue
			}
		}
		kept = append(kept, c)
	}
	e.children = kept
}

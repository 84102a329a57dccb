// Package dwarfsextract implements the dwarfsextract command: restoring an image's tree to
// disk or writing it as a tar stream.
package dwarfsextract

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sync/errgroup"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/glob"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/metadata"
)

// Config controls one extraction.
type Config struct {
	Output string // directory, or the tar file ("-" = Stdout) when Format is set
	Format string // "" (to disk), or one of Formats
	// Compression of a tar stream (gzip, xz, zstd), set from Format "auto".
	Compression     string
	Patterns        []string
	ContinueOnError bool
	// CaseCollision is what to do, on a target that folds letter case,
	// with entries whose names differ only in case from one already
	// extracted to their directory: CaseSkip (also ""), CaseRename or
	// CaseError.
	CaseCollision string
	// probeCase replaces foldsCase in tests.
	probeCase    func(dir string) (bool, error)
	SkipDevices  bool // leave out block and character devices
	SkipSpecials bool // leave out sockets and fifos
	Workers      int
	DiskWriters  int       // files written at once (0: Workers)
	Stdout       io.Writer // tar stream target for "-"
	Stderr       io.Writer // warnings with ContinueOnError
	Progress     *Progress // nil: none
	// Owners restores uid/gid; the default (set by Main) is "when root".
	Owners bool
}

// entry is one path to extract with its attributes, as the archive
// writers take it.
type entry struct {
	path string
	ino  uint32
	in   metadata.Inode
}

// node is one path to extract, kept small because an image may hold
// millions: the path is rebuilt from the parent chain when needed and the
// attributes are read from the image again.
type node struct {
	name   string // base name (shares the image's names table)
	parent int32  // index of the parent directory's node; -1 at the top
	ino    uint32
	mode   uint32
}

// tree is what to extract, in pre-order (parents before children).
type tree struct {
	nodes []node
}

// path returns the '/'-separated path of node i.
func (t *tree) path(i int) string {
	var stack [32]int32
	chain := stack[:0]
	n := -1
	for j := int32(i); j >= 0; j = t.nodes[j].parent {
		chain = append(chain, j)
		n += len(t.nodes[j].name) + 1
	}
	var b strings.Builder
	b.Grow(n)
	for k := len(chain) - 1; k >= 0; k-- {
		b.WriteString(t.nodes[chain[k]].name)
		if k > 0 {
			b.WriteByte('/')
		}
	}
	return b.String()
}

// entry returns node i with its path and attributes.
func (t *tree) entry(im *godwarfs.Image, i int) (entry, error) {
	n := t.nodes[i]
	in, err := im.InodeInfo(n.ino)
	return entry{path: t.path(i), ino: n.ino, in: in}, err
}

func (n *node) typ() uint32 { return n.mode & metadata.ModeType }

// Stats summarises an extraction.
type Stats struct {
	Entries int
	Files   int
	Bytes   int64
	Errors  int
}

// collect walks the image and applies the patterns: an entry is taken when
// it or one of its ancestors matches; ancestors of taken entries are
// always taken so the tree can be built. As the reference does, nothing is
// taken when the patterns match no file (only directories, or nothing);
// matched is then false.
func collect(im *godwarfs.Image, cfg *Config) (t *tree, any bool, err error) {
	set, err := glob.CompileAll(cfg.Patterns)
	if err != nil {
		return nil, false, err
	}
	fsys := imageaccess.Of(im).FS
	t = &tree{}
	var visit func(dir uint32, parent int32) error
	visit = func(dir uint32, parent int32) error {
		des, err := fsys.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, de := range des {
			in, err := fsys.Inode(de.Ino)
			if err != nil {
				return err
			}
			switch in.Mode & metadata.ModeType {
			case metadata.ModeChar, metadata.ModeBlock:
				if cfg.SkipDevices {
					continue
				}
			case metadata.ModeFIFO, metadata.ModeSocket:
				if cfg.SkipSpecials {
					continue
				}
			}
			idx := int32(len(t.nodes))
			t.nodes = append(t.nodes, node{name: de.Name, parent: parent, ino: de.Ino, mode: in.Mode})
			// Names a corrupt image could use to escape the output
			// directory.
			if de.Name == "" || de.Name == "." || de.Name == ".." || strings.IndexByte(de.Name, '/') >= 0 {
				return fmt.Errorf("unsafe path %q", t.path(int(idx)))
			}
			if fsys.IsDir(de.Ino) {
				if err := visit(de.Ino, idx); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if _, err := fsys.Inode(im.Root()); err != nil {
		return nil, false, fmt.Errorf("%s: %w", im.Name(), err)
	}
	if err := visit(im.Root(), -1); err != nil {
		return nil, false, fmt.Errorf("%s: %w", im.Name(), err)
	}
	if len(set) == 0 {
		return t, true, nil
	}
	// matched[i]: node i or an ancestor matches; pre-order visits parents
	// first.
	matched := make([]bool, len(t.nodes))
	files := 0
	for i := range t.nodes {
		n := &t.nodes[i]
		if (n.parent >= 0 && matched[n.parent]) || set.Match(t.path(i)) {
			matched[i] = true
			if n.typ() != metadata.ModeDir {
				files++
			}
		}
	}
	if files == 0 {
		return &tree{}, false, nil
	}
	// Take the ancestors of what matched: a taken parent has its
	// ancestors taken already, as parents come first.
	taken := matched
	for i := range t.nodes {
		if matched[i] {
			for p := t.nodes[i].parent; p >= 0 && !taken[p]; p = t.nodes[p].parent {
				taken[p] = true
			}
		}
	}
	out := &tree{}
	idx := make([]int32, len(t.nodes))
	for i, n := range t.nodes {
		if !taken[i] {
			continue
		}
		if n.parent >= 0 {
			n.parent = idx[n.parent]
		}
		idx[i] = int32(len(out.nodes))
		out.nodes = append(out.nodes, n)
	}
	return out, true, nil
}

// Extract extracts im according to cfg.
func Extract(im *godwarfs.Image, cfg Config) (Stats, error) {
	return ExtractContext(context.Background(), im, cfg)
}

// ExtractContext is Extract stopping early when ctx is done: files being
// written are removed, an archive is not put under its name, and ctx's
// error is returned.
func ExtractContext(ctx context.Context, im *godwarfs.Image, cfg Config) (Stats, error) {
	t, matched, err := collect(im, &cfg)
	if err != nil {
		return Stats{}, err
	}
	if !matched && cfg.Stderr != nil {
		fmt.Fprintln(cfg.Stderr, "dwarfsextract: warning: no matching files found")
	}
	if cfg.Progress != nil {
		seen := make([]bool, imageaccess.Of(im).FS.InodeCount())
		var files int
		var bytes int64
		for _, n := range t.nodes {
			if n.typ() == metadata.ModeRegular && !seen[n.ino] {
				seen[n.ino] = true
				files++
				if in, err := im.InodeInfo(n.ino); err == nil {
					bytes += in.Size
				}
			}
		}
		cfg.Progress.Start(files, bytes)
		defer cfg.Progress.Finish()
	}
	if cfg.Format != "" {
		spec, err := resolveFormat(cfg.Format, cfg.Output)
		if err != nil {
			return Stats{}, err
		}
		if cfg.Compression != "" && spec.filter == "" {
			spec.filter = cfg.Compression
		}
		return writeArchive(ctx, im, t, cfg, spec)
	}
	return toDisk(ctx, im, t, cfg)
}

// reporter collects per-entry errors, failing fast unless ContinueOnError.
type reporter struct {
	mu    sync.Mutex
	cfg   *Config
	name  string
	count int
}

func (r *reporter) fail(p string, err error) error {
	err = fmt.Errorf("%s: %s: %w", r.name, p, err)
	if !r.cfg.ContinueOnError {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count++
	if r.cfg.Stderr != nil {
		fmt.Fprintf(r.cfg.Stderr, "dwarfsextract: warning: %v\n", err)
	}
	return nil
}

// skip counts p as not extracted and says why, whatever ContinueOnError
// says: the rest of the tree is still extracted (exit status 2).
func (r *reporter) skip(p string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count++
	if r.cfg.Stderr != nil {
		fmt.Fprintf(r.cfg.Stderr, "dwarfsextract: warning: %s: %s: %v (skipped)\n", r.name, p, err)
	}
}

// warn says p was left out because this system cannot hold it (a symbolic
// link without the privilege to make one, a device on Windows); that is
// not an error, as in the reference's Windows build.
func (r *reporter) warn(p string, err error) {
	if r.cfg.Stderr == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.cfg.Stderr, "dwarfsextract: warning: %s: %s: %v (skipped)\n", r.name, p, err)
}

// renamed says p was extracted as name because its name folds to that of
// other, already on a case-insensitive target (--case-collision=rename).
func (r *reporter) renamed(p, other, name string) {
	if r.cfg.Stderr == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.cfg.Stderr, "dwarfsextract: warning: %s: %s: differs only in letter case from %s on this case-insensitive target: extracted as %s\n", r.name, p, other, name)
}

// fileJob is a regular file to write; key is where its data starts in the
// image (block, offset), so writing in key order decodes each block once.
type fileJob struct {
	key uint64
	idx int32
}

// copyBufSize is the buffer each disk writer reuses for all its files.
const copyBufSize = 1 << 20

// toDisk restores t under cfg.Output: directories, symbolic links and
// special files first, in path order, then the regular files in the order
// their data sits in the image (so each block is decompressed once however
// small the cache), then hard links, then the directories' metadata.
func toDisk(ctx context.Context, im *godwarfs.Image, t *tree, cfg Config) (Stats, error) {
	var st Stats
	rep := &reporter{cfg: &cfg, name: im.Name()}
	if err := os.MkdirAll(cfg.Output, 0o755); err != nil {
		return st, err
	}
	workers := max(cfg.Workers, 1)
	if cfg.DiskWriters > 0 {
		workers = cfg.DiskWriters
	}
	tn, err := newTempNames(cfg.Output)
	if err != nil {
		return st, err
	}
	probe := cfg.probeCase
	if probe == nil {
		probe = foldsCase
	}
	// A directory the probe cannot write to takes no entries either:
	// each entry's own write then fails and says why.
	folds, err := probe(cfg.Output)
	if err != nil {
		folds = false
	}
	var caseDrop []bool
	if folds {
		if caseDrop, err = resolveCaseCollisions(t, cfg.CaseCollision, rep); err != nil {
			return st, err
		}
	}
	fsys := imageaccess.Of(im).FS
	dst := func(i int) string { return filepath.Join(cfg.Output, filepath.FromSlash(t.path(i))) }
	first := make([]int32, fsys.InodeCount()) // 1 + node of a regular inode's first name
	failed := make([]bool, len(t.nodes))      // directories that could not be created
	var jobs []fileJob
	var links, dirs, symlinks []int32
	for i := range t.nodes {
		if ctx.Err() != nil {
			break
		}
		n := &t.nodes[i]
		if n.parent >= 0 && failed[n.parent] {
			failed[i] = true
			continue
		}
		if caseDrop != nil && caseDrop[i] {
			failed[i] = true // reported by resolveCaseCollisions
			continue
		}
		if err := hostNameProblem(path.Base(t.path(i))); err != nil {
			// Never written under another name: the entry (and what is
			// below it) is left out and reported.
			rep.skip(t.path(i), err)
			failed[i] = true
			continue
		}
		st.Entries++
		if n.typ() == metadata.ModeRegular {
			if first[n.ino] != 0 {
				links = append(links, int32(i))
				continue
			}
			first[n.ino] = int32(i) + 1
			key, size := dataKey(fsys, n.ino)
			jobs = append(jobs, fileJob{key: key, idx: int32(i)})
			st.Files++
			st.Bytes += size
			continue
		}
		var err error
		if n.typ() == metadata.ModeDir {
			p := dst(i)
			err = os.Mkdir(p, 0o700)
			if errors.Is(err, os.ErrExist) {
				// An earlier extraction: keep a directory, replace anything
				// else (the reference unlinks what is in the way).
				if fi, serr := os.Lstat(p); serr == nil && fi.IsDir() {
					err = os.Chmod(p, 0o700)
				} else if err = os.Remove(p); err == nil {
					err = os.Mkdir(p, 0o700)
				}
			}
			if err == nil {
				dirs = append(dirs, int32(i))
			} else {
				failed[i] = true
			}
		} else if linksInPlace && n.typ() == metadata.ModeSymlink {
			symlinks = append(symlinks, int32(i))
			continue
		} else {
			err = special(im, tn, n, dst(i), cfg.Owners)
			if errors.Is(err, errNotHere) {
				rep.warn(t.path(i), err)
				err = nil
			}
		}
		if err != nil {
			if ferr := rep.fail(t.path(i), err); ferr != nil {
				return st, ferr
			}
		}
	}
	slices.SortFunc(jobs, func(a, b fileJob) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.idx, b.idx)
	})

	g, gctx := errgroup.WithContext(ctx)
	ch := make(chan int32, 4*workers)
	for range workers {
		g.Go(func() error {
			buf := make([]byte, copyBufSize)
			for i := range ch {
				if err := gctx.Err(); err != nil {
					return err
				}
				n := &t.nodes[i]
				err := writeFile(gctx, im, tn, n.ino, dst(int(i)), buf, cfg.Owners)
				if err := gctx.Err(); err != nil {
					return err // interrupted, or another file failed: not a failure of this one
				}
				if err != nil {
					if ferr := rep.fail(t.path(int(i)), err); ferr != nil {
						return ferr
					}
					continue
				}
				if cfg.Progress != nil {
					if in, err := im.InodeInfo(n.ino); err == nil {
						cfg.Progress.Add(1, in.Size)
					}
				}
			}
			return nil
		})
	}
feed:
	for _, j := range jobs {
		select {
		case ch <- j.idx:
		case <-gctx.Done():
			break feed
		}
	}
	close(ch)
	if err := g.Wait(); err != nil {
		return st, err
	}
	if err := ctx.Err(); err != nil {
		return st, err
	}
	for _, i := range links {
		target := dst(int(first[t.nodes[i].ino] - 1))
		if err := place(tn, dst(int(i)), true, func(tmp string) error { return os.Link(target, tmp) }); err != nil {
			if ferr := rep.fail(t.path(int(i)), err); ferr != nil {
				return st, ferr
			}
		}
	}
	// Symbolic links made where their targets exist already: Windows
	// records whether a link is to a directory when it is made.
	for _, i := range symlinks {
		err := special(im, tn, &t.nodes[i], dst(int(i)), cfg.Owners)
		if errors.Is(err, errNotHere) {
			rep.warn(t.path(int(i)), err)
			continue
		}
		if err != nil {
			if ferr := rep.fail(t.path(int(i)), err); ferr != nil {
				return st, ferr
			}
		}
	}
	// Directory times last, deepest first, so children do not touch them.
	for k := len(dirs) - 1; k >= 0; k-- {
		i := int(dirs[k])
		in, err := im.InodeInfo(t.nodes[i].ino)
		if err == nil {
			err = setMeta(dst(i), in, false, cfg.Owners)
		}
		if err != nil {
			if ferr := rep.fail(t.path(i), err); ferr != nil {
				return st, ferr
			}
		}
	}
	st.Errors = rep.count
	return st, nil
}

// dataKey returns where regular file ino's data starts in the image
// (block and offset, 0 for a file without data, which needs no block) and
// its size. A file whose chunks cannot be read sorts last; writing it
// reports the error.
func dataKey(fsys *metadata.FS, ino uint32) (key uint64, size int64) {
	chunks, err := fsys.FileChunks(ino)
	if err != nil {
		return math.MaxUint64, 0
	}
	key = math.MaxUint64
	for _, c := range chunks {
		size += int64(c.Size)
		if !c.Hole && c.Size > 0 && key == math.MaxUint64 {
			key = uint64(c.Block)<<32 | uint64(c.Offset)
		}
	}
	if key == math.MaxUint64 {
		key = 0
	}
	return key, size
}

// special creates a symbolic link, device, fifo or socket.
func special(im *godwarfs.Image, tn *tempNames, n *node, dst string, owners bool) error {
	in, err := im.InodeInfo(n.ino)
	if err != nil {
		return err
	}
	switch n.typ() {
	case metadata.ModeSymlink:
		target, err := imageaccess.Of(im).FS.Readlink(n.ino)
		if err != nil {
			return err
		}
		if linksInPlace {
			// Made under the final name: creating a link is atomic, and
			// a renamed link would be followed where its target is
			// missing.
			if fi, err := os.Lstat(dst); err == nil && !fi.IsDir() {
				os.Remove(dst)
			}
			if err := symlink(target, dst); err != nil {
				return err
			}
			return setMeta(dst, in, true, owners)
		}
		return place(tn, dst, false, func(tmp string) error {
			if err := symlink(target, tmp); err != nil {
				return err
			}
			return setMeta(tmp, in, true, owners)
		})
	case metadata.ModeChar, metadata.ModeBlock, metadata.ModeFIFO:
		return place(tn, dst, false, func(tmp string) error {
			if err := makeNode(tmp, in); err != nil {
				return err
			}
			return setMeta(tmp, in, false, owners)
		})
	case metadata.ModeSocket:
		// A socket cannot be restored without a listener; like the
		// reference we leave an empty regular file.
		return place(tn, dst, false, func(tmp string) error {
			f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return err
			}
			f.Close()
			return setMeta(tmp, in, false, owners)
		})
	}
	return fmt.Errorf("unknown file type %#o", n.typ())
}

// tempNames hands out the temporary names entries are created under: a
// dot, the final name, a token chosen once per extraction and a counter.
// Nothing an image holds can predict the token, and a clash with a
// leftover of an earlier run is detected by the exclusive create.
//
// Regular files need no name until they are complete where the
// filesystem has O_TMPFILE: the file is created unnamed and linked under
// its final name once written, which costs the kernel half as much as
// creating a named file and renaming it, and leaves nothing behind even
// when the process is killed. link says how (or that it cannot be done).
type tempNames struct {
	token string
	seq   atomic.Uint64
	link  linkMode
}

// linkMode is how unnamed (O_TMPFILE) files get their name; only Linux
// has them, elsewhere it stays linkNone.
type linkMode int

const (
	linkNone      linkMode = iota // named temporary file and rename
	linkEmptyPath                 // linkat(fd, "", AT_EMPTY_PATH): needs CAP_DAC_READ_SEARCH
	linkProc                      // linkat("/proc/self/fd/N", AT_SYMLINK_FOLLOW)
)

// newTempToken returns temporary names with a fresh token.
func newTempToken() (*tempNames, error) {
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	return &tempNames{token: hex.EncodeToString(rnd[:])}, nil
}

// next returns a new temporary name beside dst.
func (tn *tempNames) next(dst string) string {
	dir, base := filepath.Split(dst)
	// Keep the temporary name within NAME_MAX (255 bytes).
	base = base[:min(len(base), 200)]
	return dir + "." + base + ".dwarfsextract-" + tn.token + "-" + strconv.FormatUint(tn.seq.Add(1), 36)
}

// errNotHere marks an entry this system cannot hold, left out with a
// warning.
var errNotHere = errors.New("not supported on this system")

// place creates an entry under a temporary name beside dst and renames
// it to dst once create (which also sets its metadata) succeeded, so a
// failed or interrupted extraction never leaves wrong content under a
// final name; on failure the temporary entry is removed. create must
// fail with an fs.ErrExist error, having created nothing, when the name
// is taken. Whatever is at dst already is replaced, as the reference does
// when extracting into a directory again (an empty directory in the way
// is removed too). link says create makes a hard link, which may be to
// the file at dst already.
func place(tn *tempNames, dst string, link bool, create func(tmp string) error) error {
	var tmp string
	for try := 0; ; try++ {
		tmp = tn.next(dst)
		err := create(tmp)
		if err == nil {
			break
		}
		if errors.Is(err, fs.ErrExist) {
			if try < 16 {
				continue // a leftover of an earlier run
			}
			return err
		}
		os.Remove(tmp)
		return err
	}
	if err := renameOver(tmp, dst); err != nil {
		return err
	}
	// Renaming a hard link onto another name of the same file succeeds
	// without removing the source.
	if link && lexists(tmp) {
		os.Remove(tmp)
	}
	return nil
}

func lexists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// writeFile writes regular file ino to dst with its attributes, copying
// through buf. Holes stay unwritten so the result is sparse. It works on
// the descriptor (no runtime poller, no path lookups) to keep the system
// calls per file few: open, the writes, chown, chmod, utimes, link, close.
func writeFile(ctx context.Context, im *godwarfs.Image, tn *tempNames, ino uint32, dst string, buf []byte, owners bool) error {
	r, err := im.OpenInode(ino)
	if err != nil {
		return err
	}
	defer r.Close()
	f, tmp, err := tn.createFile(dst)
	if err != nil {
		return err
	}
	err = fillFile(ctx, r, f, buf, readAhead(im))
	fi, _ := r.Stat()
	st := fi.Sys().(*godwarfs.Stat)
	if err == nil {
		err = fileMeta(f, tmp, st, owners)
	}
	if err == nil && tmp == "" {
		err = tn.commitFile(f, "", dst) // an unnamed file is linked while open
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close: %w", cerr)
	}
	if tmp != "" {
		if err == nil {
			err = closedMeta(tmp, st)
		}
		if err == nil {
			return tn.commitFile(nil, tmp, dst)
		}
		os.Remove(tmp)
	}
	return err
}

// outFile is a file being extracted: a bare descriptor on Unix, an
// *os.File elsewhere.
type outFile interface {
	io.WriterAt
	Truncate(size int64) error
	Close() error
}

// readAhead is how far past a read of a file fillFile asks for its blocks
// to be decoded: two blocks, so that a large file's blocks are decoded
// on every worker of the cache while the current one is written.
func readAhead(im *godwarfs.Image) int64 {
	return 2 * max(int64(imageaccess.Of(im).Metadata.BlockSize), 1<<20)
}

// fillFile copies the data extents of r to f and sets the size, asking
// for the blocks of the next ahead bytes to be decoded ahead of the copy.
func fillFile(ctx context.Context, r *godwarfs.File, f outFile, buf []byte, ahead int64) error {
	size := r.Size()
	var end int64 // end of the last extent written
	for off := int64(0); off < size; {
		start, err := r.SeekData(off)
		if errors.Is(err, syscall.ENXIO) {
			break // only a hole is left
		}
		if err != nil {
			return err
		}
		stop, err := r.SeekHole(start)
		if err != nil {
			return err
		}
		for pos := start; pos < stop; {
			if err := ctx.Err(); err != nil {
				return err
			}
			n := min(int64(len(buf)), stop-pos)
			if stop-pos > n {
				r.Prefetch(pos+n, min(ahead, stop-pos-n))
			}
			got, err := r.ReadAtContext(ctx, buf[:n], pos)
			if int64(got) < n {
				if err == nil || err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return err
			}
			for b, at := buf[:n], pos; len(b) > 0; {
				w, err := f.WriteAt(b, at)
				if err != nil {
					return fmt.Errorf("write: %w", err)
				}
				if w == 0 {
					return fmt.Errorf("write: %w", io.ErrShortWrite)
				}
				b, at = b[w:], at+int64(w)
			}
			pos += n
		}
		off, end = stop, stop
	}
	if end < size {
		if err := f.Truncate(size); err != nil {
			return fmt.Errorf("truncate: %w", err)
		}
	}
	return nil
}

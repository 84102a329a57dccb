// Package dwarfsextract implements the dwarfsextract command: restoring an image's tree to
// disk or writing it as a tar stream.
package dwarfsextract

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"

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
	SkipDevices     bool // leave out block and character devices
	SkipSpecials    bool // leave out sockets and fifos
	Workers         int
	DiskWriters     int       // files written at once (0: Workers)
	Stdout          io.Writer // tar stream target for "-"
	Stderr          io.Writer // warnings with ContinueOnError
	Progress        *Progress // nil: none
	// Owners restores uid/gid; the default (set by Main) is "when root".
	Owners bool
}

// entry is one path to extract.
type entry struct {
	path string
	ino  uint32
	in   metadata.Inode
}

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
func collect(im *godwarfs.Image, cfg *Config) (ents []entry, any bool, err error) {
	set, err := glob.CompileAll(cfg.Patterns)
	if err != nil {
		return nil, false, err
	}
	var all []entry
	err = imageaccess.Of(im).FS.Walk(func(p string, ino uint32, in metadata.Inode) error {
		if p == "" {
			return nil
		}
		switch in.Mode & metadata.ModeType {
		case metadata.ModeChar, metadata.ModeBlock:
			if cfg.SkipDevices {
				return nil
			}
		case metadata.ModeFIFO, metadata.ModeSocket:
			if cfg.SkipSpecials {
				return nil
			}
		}
		all = append(all, entry{path: p, ino: ino, in: in})
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", im.Name(), err)
	}
	for _, e := range all {
		if err := checkPath(e.path); err != nil {
			return nil, false, fmt.Errorf("%s: %w", im.Name(), err)
		}
	}
	if len(set) == 0 {
		return all, true, nil
	}
	// matched[p]: p or an ancestor matches; pre-order visits parents first.
	matched := map[string]bool{}
	taken := map[string]bool{}
	var out []entry
	files := 0
	for _, e := range all {
		if matched[path.Dir(e.path)] || set.Match(e.path) {
			matched[e.path] = true
			taken[e.path] = true
			if e.in.Mode&metadata.ModeType != metadata.ModeDir {
				files++
			}
		}
	}
	if files == 0 {
		return nil, false, nil
	}
	// Mark ancestors, then keep pre-order.
	for p := range taken {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if taken[d] {
				break
			}
			taken[d] = true
		}
	}
	for _, e := range all {
		if taken[e.path] {
			out = append(out, e)
		}
	}
	return out, true, nil
}

// checkPath rejects names a corrupt image could use to escape the output
// directory.
func checkPath(p string) error {
	if strings.HasPrefix(p, "/") || path.Clean(p) != p {
		return fmt.Errorf("unsafe path %q", p)
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." || c == "." || c == "" {
			return fmt.Errorf("unsafe path %q", p)
		}
	}
	return nil
}

// Extract extracts im according to cfg.
func Extract(im *godwarfs.Image, cfg Config) (Stats, error) {
	return ExtractContext(context.Background(), im, cfg)
}

// ExtractContext is Extract stopping early when ctx is done: files being
// written are removed, an archive is not put under its name, and ctx's
// error is returned.
func ExtractContext(ctx context.Context, im *godwarfs.Image, cfg Config) (Stats, error) {
	ents, matched, err := collect(im, &cfg)
	if err != nil {
		return Stats{}, err
	}
	if !matched && cfg.Stderr != nil {
		fmt.Fprintln(cfg.Stderr, "dwarfsextract: warning: no matching files found")
	}
	if cfg.Progress != nil {
		seen := map[uint32]bool{}
		var files int
		var bytes int64
		for _, e := range ents {
			if e.in.Mode&metadata.ModeType == metadata.ModeRegular && !seen[e.ino] {
				seen[e.ino] = true
				files++
				bytes += e.in.Size
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
		return writeArchive(ctx, im, ents, cfg, spec)
	}
	return toDisk(ctx, im, ents, cfg)
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

func toDisk(ctx context.Context, im *godwarfs.Image, ents []entry, cfg Config) (Stats, error) {
	var st Stats
	rep := &reporter{cfg: &cfg, name: im.Name()}
	if err := os.MkdirAll(cfg.Output, 0o755); err != nil {
		return st, err
	}
	workers := max(cfg.Workers, 1)
	if cfg.DiskWriters > 0 {
		workers = cfg.DiskWriters
	}
	var g errgroup.Group
	g.SetLimit(workers)
	first := map[uint32]string{} // inode -> first path, for hard links
	type link struct{ target, path string }
	var links []link
	var dirs []entry
	failed := map[string]bool{} // directories that could not be created
	var mu sync.Mutex

	for _, e := range ents {
		if ctx.Err() != nil {
			break
		}
		if failed[path.Dir(e.path)] {
			failed[e.path] = true
			continue
		}
		dst := filepath.Join(cfg.Output, filepath.FromSlash(e.path))
		st.Entries++
		var err error
		switch e.in.Mode & metadata.ModeType {
		case metadata.ModeDir:
			err = os.Mkdir(dst, 0o700)
			if errors.Is(err, os.ErrExist) {
				// An earlier extraction: keep a directory, replace anything
				// else (the reference unlinks what is in the way).
				if fi, serr := os.Lstat(dst); serr == nil && fi.IsDir() {
					err = os.Chmod(dst, 0o700)
				} else if err = os.Remove(dst); err == nil {
					err = os.Mkdir(dst, 0o700)
				}
			}
			if err == nil {
				dirs = append(dirs, e)
			} else {
				failed[e.path] = true
			}
		case metadata.ModeRegular:
			if t, ok := first[e.ino]; ok {
				links = append(links, link{t, dst})
				continue
			}
			first[e.ino] = dst
			st.Files++
			st.Bytes += e.in.Size
			e, dst := e, dst
			g.Go(func() error {
				err := place(dst, func(tmp string) error {
					if err := writeFile(ctx, im, e, tmp); err != nil {
						return err
					}
					return setMeta(tmp, e.in, false, cfg.Owners)
				})
				if ctx.Err() != nil {
					return ctx.Err() // not a failure of this file
				}
				if err != nil {
					mu.Lock()
					defer mu.Unlock()
					return rep.fail(e.path, err)
				}
				if cfg.Progress != nil {
					cfg.Progress.Add(1, e.in.Size)
				}
				return nil
			})
			continue
		case metadata.ModeSymlink:
			var target string
			if target, err = imageaccess.Of(im).FS.Readlink(e.ino); err == nil {
				err = place(dst, func(tmp string) error {
					if err := os.Symlink(target, tmp); err != nil {
						return err
					}
					return setMeta(tmp, e.in, true, cfg.Owners)
				})
			}
		case metadata.ModeChar, metadata.ModeBlock:
			err = place(dst, func(tmp string) error {
				if err := unix.Mknod(tmp, e.in.Mode, int(e.in.Rdev)); err != nil {
					return err
				}
				return setMeta(tmp, e.in, false, cfg.Owners)
			})
		case metadata.ModeFIFO:
			err = place(dst, func(tmp string) error {
				if err := unix.Mkfifo(tmp, e.in.Mode&0o7777); err != nil {
					return err
				}
				return setMeta(tmp, e.in, false, cfg.Owners)
			})
		case metadata.ModeSocket:
			// A socket cannot be restored without a listener; like the
			// reference we leave an empty regular file.
			err = place(dst, func(tmp string) error {
				f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
				if err != nil {
					return err
				}
				f.Close()
				return setMeta(tmp, e.in, false, cfg.Owners)
			})
		default:
			err = fmt.Errorf("unknown file type %#o", e.in.Mode&metadata.ModeType)
		}
		if err != nil {
			mu.Lock()
			ferr := rep.fail(e.path, err)
			mu.Unlock()
			if ferr != nil {
				g.Wait()
				return st, ferr
			}
		}
	}
	if err := g.Wait(); err != nil {
		return st, err
	}
	if err := ctx.Err(); err != nil {
		return st, err
	}
	for _, l := range links {
		if err := place(l.path, func(tmp string) error { return os.Link(l.target, tmp) }); err != nil {
			if ferr := rep.fail(l.path, err); ferr != nil {
				return st, ferr
			}
		}
	}
	// Directory times last, deepest first, so children do not touch them.
	for i := len(dirs) - 1; i >= 0; i-- {
		e := dirs[i]
		dst := filepath.Join(cfg.Output, filepath.FromSlash(e.path))
		if err := setMeta(dst, e.in, false, cfg.Owners); err != nil {
			if ferr := rep.fail(e.path, err); ferr != nil {
				return st, ferr
			}
		}
	}
	st.Errors = rep.count
	return st, nil
}

// place creates an entry under a temporary name beside dst and renames
// it to dst once create (which also sets its metadata) succeeded, so a
// failed or interrupted extraction never leaves wrong content under a
// final name; on failure the temporary entry is removed. Whatever is at
// dst already is replaced, as the reference does when extracting into a
// directory again (an empty directory in the way is removed too).
func place(dst string, create func(tmp string) error) error {
	var tmp string
	for {
		var rnd [6]byte
		if _, err := rand.Read(rnd[:]); err != nil {
			return err
		}
		tmp = filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".dwarfsextract-"+hex.EncodeToString(rnd[:]))
		if _, err := os.Lstat(tmp); errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	if err := create(tmp); err != nil {
		os.Remove(tmp)
		return err
	}
	err := os.Rename(tmp, dst)
	if errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
		if os.Remove(dst) == nil {
			err = os.Rename(tmp, dst)
		}
	}
	// Renaming a hard link onto another name of the same file succeeds
	// without removing the source.
	if err != nil || lexists(tmp) {
		os.Remove(tmp)
	}
	return err
}

func lexists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// writeFile writes one regular file, leaving holes unwritten so the result
// is sparse, then sets the final size.
func writeFile(ctx context.Context, im *godwarfs.Image, e entry, dst string) error {
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	r, err := im.OpenInode(e.ino)
	if err != nil {
		f.Close()
		return err
	}
	// Copy the data extents only; the holes stay unwritten.
	buf := make([]byte, 1<<20)
	for off := int64(0); off < r.Size(); {
		start, err := r.SeekData(off)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole is left
		}
		if err != nil {
			f.Close()
			return err
		}
		end, err := r.SeekHole(start)
		if err != nil {
			f.Close()
			return err
		}
		for pos := start; pos < end; {
			if err := ctx.Err(); err != nil {
				f.Close()
				return err
			}
			n := min(int64(len(buf)), end-pos)
			got, err := r.ReadAt(buf[:n], pos)
			if int64(got) < n {
				if err == nil || err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				f.Close()
				return err
			}
			if _, err := f.WriteAt(buf[:n], pos); err != nil {
				f.Close()
				return err
			}
			pos += n
		}
		off = end
	}
	if err := f.Truncate(r.Size()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// setMeta restores owner, permissions and times; owner first because
// chown clears set-id bits.
func setMeta(dst string, in metadata.Inode, isLink, owners bool) error {
	if owners {
		if err := os.Lchown(dst, int(in.Uid), int(in.Gid)); err != nil {
			return err
		}
	}
	if !isLink {
		if err := unix.Fchmodat(unix.AT_FDCWD, dst, in.Mode&0o7777, 0); err != nil {
			return fmt.Errorf("chmod: %w", err)
		}
	}
	ts := []unix.Timespec{
		{Sec: in.Atime.Sec, Nsec: int64(in.Atime.Nsec)},
		{Sec: in.Mtime.Sec, Nsec: int64(in.Mtime.Nsec)},
	}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, dst, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("utimes: %w", err)
	}
	return nil
}

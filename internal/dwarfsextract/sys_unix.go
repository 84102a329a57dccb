//go:build unix

package dwarfsextract

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/metadata"
)

// linksInPlace: symbolic links go through place like everything else.
const linksInPlace = false

// hostNameProblem reports why name cannot be created here; every name an
// image may hold (no slash, not . or ..) can on Unix.
func hostNameProblem(name string) error { return nil }

// fdFile is an extracted file open as a bare descriptor: no runtime
// poller, no path lookups.
type fdFile int

func (f fdFile) WriteAt(b []byte, off int64) (int, error) { return unix.Pwrite(int(f), b, off) }

func (f fdFile) Truncate(size int64) error { return unix.Ftruncate(int(f), size) }

func (f fdFile) Close() error { return unix.Close(int(f)) }

func symlink(target, name string) error { return os.Symlink(target, name) }

// makeNode creates a device or fifo; device numbers in images use the
// Linux layout (see metadata.DevMajor).
func makeNode(p string, in metadata.Inode) error {
	if in.Mode&metadata.ModeType == metadata.ModeFIFO {
		return unix.Mkfifo(p, in.Mode&0o7777)
	}
	return mknod(p, in.Mode, unix.Mkdev(metadata.DevMajor(in.Rdev), metadata.DevMinor(in.Rdev)))
}

// newTempNames returns the temporary names for extracting into dir,
// probing whether files can be created unnamed there.
func newTempNames(dir string) (*tempNames, error) {
	tn, err := newTempToken()
	if err != nil {
		return nil, err
	}
	probeUnnamed(tn, dir)
	return tn, nil
}

// createFile opens a new file for writing what goes to dst: unnamed
// (tmp "") where possible, else under a temporary name.
func (tn *tempNames) createFile(dst string) (f outFile, tmp string, err error) {
	if tn.link != linkNone {
		fd, err := openUnnamed(filepath.Dir(dst))
		if err == nil {
			return fdFile(fd), "", nil
		}
		// A directory on another filesystem (a mount point left by an
		// earlier extraction) may not support it.
		if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EINVAL) {
			return nil, "", fmt.Errorf("create: %w", err)
		}
	}
	for try := 0; ; try++ {
		tmp = tn.next(dst)
		fd, err := unix.Open(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
		if err == nil {
			return fdFile(fd), tmp, nil
		}
		if !errors.Is(err, unix.EEXIST) || try >= 16 {
			return nil, "", fmt.Errorf("create: %w", err)
		}
	}
}

// commitFile puts the complete file f (named tmp, or unnamed and still
// open) under dst, replacing what is there.
func (tn *tempNames) commitFile(f outFile, tmp, dst string) error {
	if tmp != "" {
		return renameOver(tmp, dst)
	}
	fd := int(f.(fdFile))
	err := tn.linkFD(fd, dst)
	if errors.Is(err, unix.EEXIST) {
		if os.Remove(dst) == nil {
			err = tn.linkFD(fd, dst)
		}
	}
	if err != nil {
		return fmt.Errorf("link: %w", err)
	}
	return nil
}

// renameOver renames tmp to dst, replacing what is there (an empty
// directory too), and removes tmp if that fails.
func renameOver(tmp, dst string) error {
	err := unix.Renameat(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dst)
	if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
		if os.Remove(dst) == nil {
			err = unix.Renameat(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dst)
		}
	}
	if err != nil {
		unix.Unlink(tmp)
		return fmt.Errorf("rename: %w", err)
	}
	return nil
}

// fileMeta restores owner, permissions and times of an open file; owner
// first because chown clears set-id bits.
func fileMeta(f outFile, tmp string, st *godwarfs.Stat, owners bool) error {
	fd := int(f.(fdFile))
	if owners {
		if err := unix.Fchown(fd, int(st.Uid), int(st.Gid)); err != nil {
			return fmt.Errorf("chown: %w", err)
		}
	}
	if err := unix.Fchmod(fd, st.Mode&0o7777); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	if err := futimens(fd, tmp, [2]time.Time{st.Atime, st.Mtime}); err != nil {
		return fmt.Errorf("utimes: %w", err)
	}
	return nil
}

// closedMeta has nothing left to do here: fileMeta set everything.
func closedMeta(tmp string, st *godwarfs.Stat) error { return nil }

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
	if err := utimesNoFollow(dst, [2]time.Time{time.Unix(in.Atime.Sec, int64(in.Atime.Nsec)), time.Unix(in.Mtime.Sec, int64(in.Mtime.Nsec))}); err != nil {
		return fmt.Errorf("utimes: %w", err)
	}
	return nil
}

// timespecs is at for utimensat. On 32-bit systems without a 64-bit time
// call here its fields are 32 bits wide, and a time past 2038 is an error.
func timespecs(at [2]time.Time) ([2]unix.Timespec, error) {
	var ts [2]unix.Timespec
	for i, t := range at {
		var err error
		if ts[i], err = unix.TimeToTimespec(t); err != nil {
			return ts, fmt.Errorf("time %s out of this system's range: %w", t.UTC().Format(time.RFC3339), err)
		}
	}
	return ts, nil
}

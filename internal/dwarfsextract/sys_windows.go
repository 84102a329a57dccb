package dwarfsextract

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/windows"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/metadata"
)

// linksInPlace: symbolic links are made under their final names, after
// the files they point to (see toDisk).
const linksInPlace = true

// hostNameProblem reports why Windows cannot hold name (see
// windowsNameProblem).
func hostNameProblem(name string) error { return windowsNameProblem(name) }

// Every file is written under a temporary name and renamed
// (tempNames.link stays linkNone).
func newTempNames(dir string) (*tempNames, error) { return newTempToken() }

// symlink makes a symbolic link where the process may (an elevated
// process, or developer mode); otherwise the link is left out with a
// warning, as by the reference's Windows build.
func symlink(target, name string) error {
	err := os.Symlink(target, name)
	if errors.Is(err, windows.ERROR_PRIVILEGE_NOT_HELD) || errors.Is(err, windows.ERROR_NOT_SUPPORTED) || errors.Is(err, windows.ERROR_INVALID_FUNCTION) {
		return fmt.Errorf("symbolic link to %q: %w (%v)", target, errNotHere, err)
	}
	if err != nil {
		return err
	}
	// Some implementations (Wine's) report success without making a
	// link; believe only one that is there.
	if fi, err := os.Lstat(name); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		if err == nil {
			os.Remove(name)
		}
		return fmt.Errorf("symbolic link to %q: %w (the system made no link)", target, errNotHere)
	}
	return nil
}

// makeNode: Windows has no devices or fifos in its filesystems.
func makeNode(p string, in metadata.Inode) error {
	what := "device"
	if in.Mode&metadata.ModeType == metadata.ModeFIFO {
		what = "fifo"
	}
	return fmt.Errorf("%s: %w", what, errNotHere)
}

func (tn *tempNames) createFile(dst string) (outFile, string, error) {
	for try := 0; ; try++ {
		tmp := tn.next(dst)
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			return f, tmp, nil
		}
		if !errors.Is(err, fs.ErrExist) || try >= 16 {
			return nil, "", fmt.Errorf("create: %w", err)
		}
	}
}

func (tn *tempNames) commitFile(_ outFile, tmp, dst string) error { return renameOver(tmp, dst) }

// renameOver renames tmp to dst, replacing what is there (an empty
// directory too), and removes tmp if that fails.
func renameOver(tmp, dst string) error {
	err := os.Rename(tmp, dst)
	if err != nil && lexists(dst) {
		if os.Remove(dst) == nil {
			err = os.Rename(tmp, dst)
		}
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("rename: %w", err)
	}
	return nil
}

// fileMeta sets the times through the open handle; Windows files have
// no owner and mode to restore (closedMeta maps the mode).
func fileMeta(f outFile, _ string, st *godwarfs.Stat, _ bool) error {
	h := windows.Handle(f.(*os.File).Fd())
	a := windows.NsecToFiletime(st.Atime.UnixNano())
	m := windows.NsecToFiletime(st.Mtime.UnixNano())
	if err := windows.SetFileTime(h, nil, &a, &m); err != nil {
		return fmt.Errorf("utimes: %w", err)
	}
	return nil
}

// closedMeta maps the permission bits onto the read-only attribute: a
// file nobody may write (no w bit for its owner) becomes read-only.
func closedMeta(tmp string, st *godwarfs.Stat) error {
	if st.Mode&0o200 != 0 {
		return nil
	}
	if err := os.Chmod(tmp, 0o444); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	return nil
}

// setMeta restores the times of a directory or special file and maps its
// mode onto the read-only attribute (for files only: on a directory
// Windows reads that attribute as "customised folder"). Owners do not
// exist; links keep the times Windows gave them.
func setMeta(dst string, in metadata.Inode, isLink, _ bool) error {
	if isLink {
		return nil
	}
	if in.Mode&metadata.ModeType != metadata.ModeDir && in.Mode&0o200 == 0 {
		if err := os.Chmod(dst, 0o444); err != nil {
			return fmt.Errorf("chmod: %w", err)
		}
	}
	at := time.Unix(in.Atime.Sec, int64(in.Atime.Nsec))
	mt := time.Unix(in.Mtime.Sec, int64(in.Mtime.Nsec))
	if err := os.Chtimes(dst, at, mt); err != nil {
		return fmt.Errorf("utimes: %w", err)
	}
	return nil
}

//go:build linux && !386 && !arm

package fusefs_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/internal/manifest"
	"github.com/godwarfs/godwarfs/metadata"
	"golang.org/x/sys/unix"
)

// fullCheck lists the images that also get the expensive extra checks.
var fullCheck = map[string]bool{
	"default": true, "pack-all": true, "nanosecond-times": true,
	"compat-v0.2.0": true, "gh307": true, "lz4hc-12": true, "level-9": true,
}

func typeChar(mode uint32) byte {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return 'd'
	case syscall.S_IFLNK:
		return 'l'
	case syscall.S_IFBLK:
		return 'b'
	case syscall.S_IFCHR:
		return 'c'
	case syscall.S_IFIFO:
		return 'p'
	case syscall.S_IFSOCK:
		return 's'
	}
	return '-'
}

func hashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// mountImage opens and mounts an image file; both are released at cleanup.
func mountImage(t testing.TB, path, opts string) (*fusefs.Server, *godwarfs.Image) {
	t.Helper()
	return mountImageWith(t, path, nil, opts)
}

func mountImageWith(t testing.TB, path string, gopts *godwarfs.Options, opts string) (*fusefs.Server, *godwarfs.Image) {
	t.Helper()
	requireFuse(t)
	im, err := godwarfs.Open(path, gopts)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	src := fusefs.NewImageSource(im)
	t.Cleanup(func() {
		src.Close()
		im.Close()
	})
	return mountSrc(t, src, opts), im
}

func TestImages(t *testing.T) {
	requireFuse(t)
	for _, img := range fixtures.Good(t) {
		t.Run(img.Name, func(t *testing.T) {
			t.Parallel()
			srv, im := mountImage(t, img.Path, "")
			if img.Manifest != "" {
				want, err := manifest.ParseFile(img.Manifest)
				if err != nil {
					t.Fatal(err)
				}
				checkManifest(t, srv.Dir(), want, legacyLinkTimes(im))
			}
			checkAgainstLibrary(t, srv.Dir(), im, fullCheck[img.Name])
			if fullCheck[img.Name] {
				checkExtras(t, srv.Dir(), im)
			}
		})
	}
}

// checkManifest compares the mounted tree with an expected manifest.
//
// linkTimes, if non-nil, maps shared inodes of legacy images to the mtimes
// their directory entries carry: see legacyLinkTimes.
func checkManifest(t *testing.T, dir string, want []manifest.Entry, linkTimes map[uint64]map[int64]bool) {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range want {
		seen[e.Path] = true
		p := filepath.Join(dir, e.Path)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Errorf("%s: %v", e.Path, err)
			continue
		}
		if st.Mode&syscall.S_IFMT == syscall.S_IFSOCK && e.Type == '-' && e.Size == 0 {
			// The expected manifests come from an extraction, which turns
			// sockets into empty regular files; the mount keeps the socket.
			e.Type, e.SHA256 = 's', ""
		}
		if c := typeChar(st.Mode); c != e.Type {
			t.Errorf("%s: type %c, want %c", e.Path, c, e.Type)
		}
		// Extraction cannot set symlink permissions on Linux (they read
		// 0777 there); the mount reports the stored mode, which
		// checkAgainstLibrary verifies.
		if st.Mode&0o7777 != e.Perm && e.Type != 'l' {
			t.Errorf("%s: perm %o, want %o", e.Path, st.Mode&0o7777, e.Perm)
		}
		if st.Uid != e.Uid || st.Gid != e.Gid {
			t.Errorf("%s: owner %d:%d, want %d:%d", e.Path, st.Uid, st.Gid, e.Uid, e.Gid)
		}
		if (st.Mtim.Sec != e.Sec || st.Mtim.Nsec != e.Nsec) && !linkTimes[st.Ino][st.Mtim.Sec] {
			t.Errorf("%s: mtime %d.%09d, want %d.%09d", e.Path, st.Mtim.Sec, st.Mtim.Nsec, e.Sec, e.Nsec)
		}
		if e.Type != 'd' {
			// Directory sizes and link counts in the manifest come from
			// the source tree; DwarFS does not store them.
			if st.Size != e.Size {
				t.Errorf("%s: size %d, want %d", e.Path, st.Size, e.Size)
			}
			if uint64(st.Nlink) != uint64(e.Nlink) {
				t.Errorf("%s: nlink %d, want %d", e.Path, st.Nlink, e.Nlink)
			}
		}
		switch {
		case e.SHA256 != "":
			h, err := hashFile(p)
			if err != nil {
				t.Errorf("%s: %v", e.Path, err)
			} else if h != e.SHA256 {
				t.Errorf("%s: sha256 %s, want %s", e.Path, h, e.SHA256)
			}
		case e.Type == 'l':
			if s, err := os.Readlink(p); err != nil || s != e.Target {
				t.Errorf("%s: readlink %q %v, want %q", e.Path, s, err, e.Target)
			}
		case e.HasRdev:
			if maj, mnr := unix.Major(st.Rdev), unix.Minor(st.Rdev); maj != e.Major || mnr != e.Minor {
				t.Errorf("%s: rdev %d:%d, want %d:%d", e.Path, maj, mnr, e.Major, e.Minor)
			}
		}
	}
	// Nothing beyond the manifest may appear.
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel != "." && !seen[rel] {
			t.Errorf("unexpected entry %s", rel)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// legacyLinkTimes handles pre-2.3 images, where every directory entry has
// its own attribute record and identical files share one inode. The
// manifests come from extracting such an image, which applies every
// entry's mtime to the one shared inode, so the last entry written wins;
// the driver reports one of the entries' times. For these inodes any of
// the entries' times is accepted (keyed by st_ino = inode + 1).
func legacyLinkTimes(im *godwarfs.Image) map[uint64]map[int64]bool {
	md := imageaccess.Of(im).Metadata
	if md.HasDirEntries {
		return nil
	}
	count := map[uint32]int{}
	for _, in := range md.Inodes {
		count[in.InodeV22]++
	}
	res := uint64(1)
	if md.Options != nil && md.Options.TimeResolutionSec != nil {
		res = uint64(*md.Options.TimeResolutionSec)
	}
	out := map[uint64]map[int64]bool{}
	for _, in := range md.Inodes {
		if count[in.InodeV22] < 2 {
			continue
		}
		k := uint64(in.InodeV22) + 1
		if out[k] == nil {
			out[k] = map[int64]bool{}
		}
		out[k][int64(md.TimestampBase+in.MtimeOffset*res)] = true
	}
	return out
}

// checkAgainstLibrary walks the image with the library and compares every
// inode with what the mount reports, including content and st_ino (so
// hard links are checked to share an inode number).
func checkAgainstLibrary(t *testing.T, dir string, im *godwarfs.Image, withSeek bool) {
	t.Helper()
	root := im.Root()
	var btimes atomic.Int64
	defer func() {
		if n := btimes.Load(); n > 0 {
			t.Logf("%d inodes with birth time checked via statx", n)
		}
	}()
	err := imageaccess.Of(im).FS.Walk(func(path string, ino uint32, in metadata.Inode) error {
		p := filepath.Join(dir, path)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Errorf("%q: %v", path, err)
			return nil
		}
		if st.Ino != uint64(ino)+1 {
			t.Errorf("%q: st_ino %d, want %d", path, st.Ino, ino+1)
		}
		if path == "" && ino != root {
			t.Errorf("walk root is %d, image root %d", ino, root)
		}
		if st.Mode != in.Mode || st.Uid != in.Uid || st.Gid != in.Gid || st.Size != in.Size {
			t.Errorf("%q: mode %o uid %d gid %d size %d, library %o %d %d %d", path, st.Mode, st.Uid, st.Gid, st.Size, in.Mode, in.Uid, in.Gid, in.Size)
		}
		if st.Mtim.Sec != in.Mtime.Sec || st.Mtim.Nsec != int64(in.Mtime.Nsec) {
			t.Errorf("%q: mtime %v, library %v", path, st.Mtim, in.Mtime)
		}
		var sx unix.Statx_t
		if err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &sx); err != nil {
			t.Errorf("%q: statx: %v", path, err)
		} else {
			if sx.Mtime.Sec != in.Mtime.Sec || sx.Mtime.Nsec != in.Mtime.Nsec || sx.Ino != uint64(ino)+1 {
				t.Errorf("%q: statx mtime %v ino %d, library %v %d", path, sx.Mtime, sx.Ino, in.Mtime, ino+1)
			}
			if hasB := sx.Mask&unix.STATX_BTIME != 0; hasB != in.HasBtime ||
				(hasB && (sx.Btime.Sec != in.Btime.Sec || sx.Btime.Nsec != in.Btime.Nsec)) {
				t.Errorf("%q: statx btime %v (mask %x), library %v %v", path, sx.Btime, sx.Mask, in.HasBtime, in.Btime)
			}
		}
		if in.HasBtime {
			btimes.Add(1)
		}
		if in.Mode&syscall.S_IFMT != syscall.S_IFREG {
			return nil
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("%q: %v", path, err)
			return nil
		}
		want := make([]byte, in.Size)
		f, err := im.OpenInode(ino)
		if err == nil {
			_, err = f.ReadAt(want, 0)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			t.Errorf("%q: library read: %v", path, err)
			return nil
		}
		if sha256.Sum256(got) != sha256.Sum256(want) {
			t.Errorf("%q: content differs from library", path)
		}
		if withSeek && in.Size > 0 {
			checkSeek(t, p, im, ino, in.Size)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// checkSeek compares the SEEK_DATA/SEEK_HOLE map of a file with the library.
func checkSeek(t *testing.T, p string, im *godwarfs.Image, ino uint32, size int64) {
	t.Helper()
	r, err := im.OpenInode(ino)
	if err != nil {
		t.Error(err)
		return
	}
	f, err := os.Open(p)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	offs := []int64{0, size / 3, size / 2, size - 1}
	if size > 1<<20 {
		for o := int64(0); o < size; o += 1 << 20 {
			offs = append(offs, o)
		}
	}
	slices.Sort(offs)
	for _, o := range offs {
		for _, w := range []int{unix.SEEK_DATA, unix.SEEK_HOLE} {
			got, gerr := unix.Seek(int(f.Fd()), o, w)
			var want int64
			var werr error
			if w == unix.SEEK_DATA {
				want, werr = r.SeekData(o)
			} else {
				want, werr = r.SeekHole(o)
			}
			if (gerr != nil) != (werr != nil) || (gerr == nil && got != want) {
				t.Errorf("%s: lseek(%d, %d) = %d %v, library %d %v", p, o, w, got, gerr, want, werr)
			}
		}
	}
}

// checkExtras covers readdir order, statfs, xattrs and sparse holes.
func checkExtras(t *testing.T, dir string, im *godwarfs.Image) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	lib, err := imageaccess.Of(im).FS.ReadDir(im.Root())
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	for _, e := range lib {
		want = append(want, e.Name)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("readdir root: %v, want %v", got, want)
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil {
		t.Error(err)
	} else if sfs.Flags&unix.ST_RDONLY == 0 || sfs.Files != uint64(imageaccess.Of(im).FS.InodeCount()) {
		t.Errorf("statfs: flags %x files %d, want ro and %d", sfs.Flags, sfs.Files, imageaccess.Of(im).FS.InodeCount())
	}
	buf := make([]byte, 64)
	n, err := unix.Getxattr(dir, fusefs.XattrPid, buf)
	if err != nil || string(buf[:n]) != strconv.Itoa(os.Getpid()) {
		t.Errorf("pid xattr: %q %v", buf[:max(n, 0)], err)
	}
	sp := filepath.Join(dir, "data/sparse.bin")
	if fi, err := os.Stat(sp); err == nil && fi.Size() > 0 {
		f, err := os.Open(sp)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		h, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_HOLE)
		if err != nil || h < 0 || h > fi.Size() {
			t.Errorf("SEEK_HOLE on sparse.bin: %d %v", h, err)
		}
		var st unix.Stat_t
		_ = unix.Stat(sp, &st)
		t.Logf("sparse.bin: first hole at %d, %d blocks of 512 for %d bytes", h, st.Blocks, fi.Size())
	}
}

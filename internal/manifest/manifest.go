// Package manifest reads the reference manifest files (NAME.manifest.tsv)
// that describe an extracted tree, and computes the same description for
// a directory on disk, so tests can compare the two.
package manifest

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// stat is what a manifest line needs beyond fs.FileInfo.
type stat struct {
	mode         uint32 // S_IFMT type and permission bits
	uid, gid     uint32
	sec, nsec    int64 // modification time
	nlink        int
	major, minor uint32
}

// Entry is one manifest line.
type Entry struct {
	Path     string
	Type     byte   // first character of the symbolic mode: '-', 'd', 'l', 'c', 'b', 'p', 's'
	Symbolic string // e.g. "-rw-r--r--"
	Perm     uint32 // permission bits including setuid/setgid/sticky
	Uid, Gid uint32
	Size     int64
	Sec      int64
	Nsec     int64
	Nlink    int
	SHA256   string // regular files
	Target   string // symlinks
	HasRdev  bool
	Major    uint32
	Minor    uint32
}

// Parse reads a manifest.
func Parse(r io.Reader) ([]Entry, error) {
	var out []Entry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if text == "" {
			continue
		}
		e, err := parseLine(text)
		if err != nil {
			return nil, fmt.Errorf("manifest line %d: %w", line, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// ParseFile reads the manifest at path.
func ParseFile(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f)
}

func parseLine(text string) (Entry, error) {
	var e Entry
	tab := strings.IndexByte(text, '\t')
	if tab < 0 {
		return e, fmt.Errorf("no tab in %q", text)
	}
	e.Path = text[:tab]
	f := strings.SplitN(text[tab+1:], " ", 8)
	if len(f) < 7 {
		return e, fmt.Errorf("too few fields in %q", text)
	}
	e.Symbolic = f[0]
	if e.Symbolic == "" {
		return e, fmt.Errorf("empty mode in %q", text)
	}
	e.Type = e.Symbolic[0]
	perm, err := strconv.ParseUint(f[1], 8, 32)
	if err != nil {
		return e, err
	}
	e.Perm = uint32(perm)
	uid, err := strconv.ParseUint(f[2], 10, 32)
	if err != nil {
		return e, err
	}
	gid, err := strconv.ParseUint(f[3], 10, 32)
	if err != nil {
		return e, err
	}
	e.Uid, e.Gid = uint32(uid), uint32(gid)
	if e.Size, err = strconv.ParseInt(f[4], 10, 64); err != nil {
		return e, err
	}
	sec, nsec, ok := strings.Cut(f[5], ".")
	if e.Sec, err = strconv.ParseInt(sec, 10, 64); err != nil {
		return e, err
	}
	if ok {
		if e.Nsec, err = strconv.ParseInt(nsec, 10, 64); err != nil {
			return e, err
		}
	}
	if e.Nlink, err = strconv.Atoi(f[6]); err != nil {
		return e, err
	}
	if len(f) == 8 {
		extra := f[7]
		switch {
		case strings.HasPrefix(extra, "sha256="):
			e.SHA256 = extra[len("sha256="):]
		case strings.HasPrefix(extra, "-> "):
			e.Target = extra[3:]
		case strings.HasPrefix(extra, "rdev="):
			maj, min, _ := strings.Cut(extra[5:], ":")
			a, err1 := strconv.ParseUint(maj, 10, 32)
			b, err2 := strconv.ParseUint(min, 10, 32)
			if err1 != nil || err2 != nil {
				return e, fmt.Errorf("bad rdev %q", extra)
			}
			e.HasRdev, e.Major, e.Minor = true, uint32(a), uint32(b)
		default:
			return e, fmt.Errorf("unknown extra field %q", extra)
		}
	}
	return e, nil
}

// FromDir describes the tree under root like a manifest (paths relative
// to root, pre-order, root itself omitted).
func FromDir(root string) ([]Entry, error) {
	var out []Entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st, err := statOf(p, fi)
		if err != nil {
			return err
		}
		e := Entry{
			Path: filepath.ToSlash(rel), Perm: st.mode & 0o7777, Uid: st.uid, Gid: st.gid,
			Size: fi.Size(), Sec: st.sec, Nsec: st.nsec, Nlink: st.nlink,
		}
		switch st.mode & syscall.S_IFMT {
		case syscall.S_IFDIR:
			e.Type = 'd'
		case syscall.S_IFLNK:
			e.Type = 'l'
			if e.Target, err = os.Readlink(p); err != nil {
				return err
			}
		case syscall.S_IFREG:
			e.Type = '-'
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			h := sha256.New()
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return err
			}
			e.SHA256 = hex.EncodeToString(h.Sum(nil))
		case syscall.S_IFCHR, syscall.S_IFBLK:
			e.Type = 'c'
			if st.mode&syscall.S_IFMT == syscall.S_IFBLK {
				e.Type = 'b'
			}
			e.HasRdev, e.Major, e.Minor = true, st.major, st.minor
		case syscall.S_IFIFO:
			e.Type = 'p'
		case syscall.S_IFSOCK:
			e.Type = 's'
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

//go:build !windows && !(linux && (386 || arm))

package fusefs

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// foldRune maps r to one representative of its class under Unicode
// simple case folding (the C and S mappings of CaseFolding.txt, whose
// classes unicode.SimpleFold walks): the smallest rune of the class.
// Which representative is used does not matter, only that equivalent
// runes map to the same one.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return m
}

// foldName folds every character of s; bytes that are not valid UTF-8
// are kept as they are, so distinct invalid names stay distinct.
func foldName(s string) string {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || foldRune(r) == r {
			i += n
			continue
		}
		// Something changes: build the folded copy from here on.
		var b strings.Builder
		b.Grow(len(s))
		b.WriteString(s[:i])
		for i < len(s) {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b.WriteByte(s[i])
			} else {
				b.WriteRune(foldRune(r))
			}
			i += n
		}
		return b.String()
	}
	return s
}

// foldDir is one directory's entries ordered by folded name; among equal
// folded names the stored (byte) order is kept, so a lookup finds the
// entry that sorts first, as the reference driver does.
type foldDir struct {
	ents   []DirEntry
	folded []string // folded names, sorted
	index  []int    // index[i]: the entry whose folded name is folded[i]
}

func newFoldDir(ents []DirEntry) *foldDir {
	fd := &foldDir{ents: ents, folded: make([]string, len(ents)), index: make([]int, len(ents))}
	for i, e := range ents {
		fd.folded[i], fd.index[i] = foldName(e.Name), i
	}
	sort.Stable(fd)
	return fd
}

func (fd *foldDir) Len() int           { return len(fd.folded) }
func (fd *foldDir) Less(i, j int) bool { return fd.folded[i] < fd.folded[j] }
func (fd *foldDir) Swap(i, j int) {
	fd.folded[i], fd.folded[j] = fd.folded[j], fd.folded[i]
	fd.index[i], fd.index[j] = fd.index[j], fd.index[i]
}

func (fd *foldDir) lookup(name string) (DirEntry, bool) {
	f := foldName(name)
	i := sort.SearchStrings(fd.folded, f)
	if i < len(fd.folded) && fd.folded[i] == f {
		return fd.ents[fd.index[i]], true
	}
	return DirEntry{}, false
}

// collisions lists the groups of entries whose names differ only in case.
func (fd *foldDir) collisions() [][]string {
	var out [][]string
	for i := 0; i < len(fd.folded); {
		j := i + 1
		for j < len(fd.folded) && fd.folded[j] == fd.folded[i] {
			j++
		}
		if j-i > 1 {
			var names []string
			for _, k := range fd.index[i:j] {
				names = append(names, fd.ents[k].Name)
			}
			out = append(out, names)
		}
		i = j
	}
	return out
}

// foldIndex answers case-insensitive lookups. A directory's index is
// built on its first lookup and kept: the image never changes.
type foldIndex struct {
	src  Source
	mu   sync.Mutex
	dirs map[uint32]*foldDir
}

func newFoldIndex(src Source) *foldIndex {
	return &foldIndex{src: src, dirs: map[uint32]*foldDir{}}
}

func (x *foldIndex) dir(ino uint32) (*foldDir, error) {
	x.mu.Lock()
	fd := x.dirs[ino]
	x.mu.Unlock()
	if fd != nil {
		return fd, nil
	}
	ents, err := x.src.ReadDir(ino)
	if err != nil {
		return nil, err
	}
	fd = newFoldDir(ents)
	x.mu.Lock()
	x.dirs[ino] = fd
	x.mu.Unlock()
	return fd, nil
}

// lookup returns the entry of dir that matches name ignoring case.
func (x *foldIndex) lookup(dir uint32, name string) (DirEntry, bool) {
	fd, err := x.dir(dir)
	if err != nil {
		return DirEntry{}, false
	}
	return fd.lookup(name)
}

// warnCollisions walks the whole tree and reports every directory with
// entries that differ only in case: only the first of them can be
// reached by a case-insensitive lookup.
func warnCollisions(src Source, w io.Writer) error {
	var walk func(dir uint32, path string) error
	walk = func(dir uint32, path string) error {
		ents, err := src.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, names := range newFoldDir(ents).collisions() {
			fmt.Fprintf(w, "dwarfs: warning: case-insensitive collision in directory %q (inode=%d): %s\n",
				path, dir, strings.Join(names, ", "))
		}
		for _, e := range ents {
			a, err := src.Stat(e.Ino)
			if err != nil {
				return err
			}
			if a.Mode&syscall.S_IFMT == syscall.S_IFDIR {
				if err := walk(e.Ino, joinPath(path, e.Name)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(src.Root(), "")
}

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// analysis records which regular files are opened, for
// MountOptions.Analysis: each file's path is written once, when it is
// first opened, in the order of first opens. A file's path is the one
// it was first looked up by (hard links have several).
type analysis struct {
	mu     sync.Mutex
	w      io.Writer
	dirs   map[uint32]string // directory inode -> path ("" for the root)
	files  map[uint32]string // regular file inode -> path
	opened map[uint32]bool
}

func newAnalysis(w io.Writer, root uint32) *analysis {
	return &analysis{w: w, dirs: map[uint32]string{root: ""}, files: map[uint32]string{}, opened: map[uint32]bool{}}
}

// lookedUp notes that name in directory dir is inode ino of mode.
func (a *analysis) lookedUp(dir uint32, name string, ino uint32, mode uint32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	parent, ok := a.dirs[dir]
	if !ok {
		return
	}
	switch mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		if _, ok := a.dirs[ino]; !ok {
			a.dirs[ino] = joinPath(parent, name)
		}
	case syscall.S_IFREG:
		if _, ok := a.files[ino]; !ok {
			a.files[ino] = joinPath(parent, name)
		}
	}
}

// open writes the path of ino when it is opened for the first time.
func (a *analysis) open(ino uint32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok := a.files[ino]
	if !ok || a.opened[ino] {
		return
	}
	a.opened[ino] = true
	// A failed write cannot fail the open; the list is advisory.
	_, _ = io.WriteString(a.w, p+"\n")
}

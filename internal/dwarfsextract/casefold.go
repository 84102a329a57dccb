package dwarfsextract

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Case collision policies (--case-collision): what to do with an entry
// whose name differs only in letter case from one its directory already
// holds, on a target that folds case.
const (
	CaseSkip   = "skip"   // keep the first, leave the others out (exit status 2)
	CaseRename = "rename" // extract the others as NAME~2, NAME~3, ...
	CaseError  = "error"  // refuse the extraction before writing anything
)

// CaseCollisionModes lists the values of --case-collision.
var CaseCollisionModes = []string{CaseSkip, CaseRename, CaseError}

// foldKey is the name under which a case-insensitive file system files
// name: every rune replaced by the smallest rune of its simple case
// folding orbit, the equivalence strings.EqualFold tests.
func foldKey(name string) string {
	ascii := true
	for i := 0; i < len(name); i++ {
		if name[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToUpper(name) // an ASCII letter's orbit starts with its upper case
	}
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range name {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(m)
	}
	return b.String()
}

// foldsCase reports whether dir treats names that differ only in letter
// case as one: it creates a probe file with a lower-case name and looks
// it up in upper case. Whatever the operating system: Linux has
// case-folding directories (ext4, f2fs, FUSE), macOS and Windows
// volumes may be case-sensitive. Directories below dir are taken to
// fold as dir does.
func foldsCase(dir string) (bool, error) {
	f, err := os.CreateTemp(dir, ".dwarfsextract-case-probe-")
	if err != nil {
		return false, fmt.Errorf("probing whether %s folds letter case: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	defer os.Remove(name)
	upper := filepath.Join(filepath.Dir(name), strings.ToUpper(filepath.Base(name)))
	_, err = os.Lstat(upper)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("probing whether %s folds letter case: %w", dir, err)
}

// caseKey is an entry's place on a case-folding target.
type caseKey struct {
	parent int32
	name   string // foldKey of the name
}

// resolveCaseCollisions applies mode to the entries of t whose names fold
// to one already taken in their directory, in path order, so the first
// keeps its name. It returns the entries to leave out (reported through
// rep, with what is below them) and renames the others in t for
// CaseRename. For CaseError it returns an error naming the first
// collision, before anything is written. Entries whose names the host
// cannot hold at all are left to the caller.
func resolveCaseCollisions(t *tree, mode string, rep *reporter) ([]bool, error) {
	drop := make([]bool, len(t.nodes))
	owner := make(map[caseKey]int32)
	for i := range t.nodes {
		n := &t.nodes[i]
		if n.parent >= 0 && drop[n.parent] {
			drop[i] = true
			continue
		}
		if hostNameProblem(n.name) != nil {
			continue
		}
		k := caseKey{n.parent, foldKey(n.name)}
		j, taken := owner[k]
		if !taken {
			owner[k] = int32(i)
			continue
		}
		switch mode {
		case CaseError:
			return nil, fmt.Errorf("%s: %s and %s differ only in letter case, and %s folds case (--case-collision=error)",
				rep.name, t.path(int(j)), t.path(i), rep.cfg.Output)
		case CaseRename:
			old := t.path(i)
			for s := 2; ; s++ {
				alt := n.name + "~" + strconv.Itoa(s)
				ak := caseKey{n.parent, foldKey(alt)}
				if _, used := owner[ak]; !used && hostNameProblem(alt) == nil {
					n.name = alt
					owner[ak] = int32(i)
					break
				}
			}
			rep.renamed(old, t.path(int(j)), n.name)
		default:
			drop[i] = true
			rep.skip(t.path(i), fmt.Errorf("differs only in letter case from %s, which this case-insensitive target already holds", t.path(int(j))))
		}
	}
	return drop, nil
}

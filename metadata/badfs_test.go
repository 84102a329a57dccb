package metadata

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// exercise runs every reader entry point over md with bounded work and
// reports the first error; it must never panic.
func exercise(md *Metadata, maxVisits int) error {
	f, err := NewFS(md)
	if err != nil {
		return err
	}
	checkErr := f.Check()
	visits := 0
	walkErr := f.Walk(func(p string, ino uint32, in Inode) error {
		visits++
		if visits > maxVisits {
			return errStopWalk
		}
		_, _ = f.ReadDir(ino)
		_, _ = f.Readlink(ino)
		_, _ = f.FileChunks(ino)
		_, _ = f.LookupPath(p)
		return nil
	})
	for ino := uint32(0); ino < uint32(min(f.InodeCount(), maxVisits)); ino++ {
		_, _ = f.Inode(ino)
		_ = f.Parent(ino)
	}
	// Served as the driver serves it: each directory checked when used.
	if lazy, err := NewFS(md); err == nil && lazy.CheckLazy() == nil {
		visits := 0
		_ = lazy.Walk(func(p string, ino uint32, in Inode) error {
			if visits++; visits > maxVisits {
				return errStopWalk
			}
			_, _ = lazy.ReadDir(ino)
			_, _ = lazy.LookupPath(p)
			return nil
		})
	}
	if checkErr != nil {
		return checkErr
	}
	if walkErr != errStopWalk {
		return walkErr
	}
	return nil
}

// lazyAgrees checks md with CheckLazy and then every directory on its
// own: together they must refuse what Check refuses, and when only the
// directories fail, with Check's error.
func lazyAgrees(md *Metadata) error {
	full, err := NewFS(md)
	if err != nil {
		return nil
	}
	want := full.Check()
	f, _ := NewFS(md)
	// What CheckLazy leaves out altogether: Check may report one of
	// these where the lazy checks find another fault, or none.
	leftOut := func(err error) bool {
		// checkEntries first: the full string check needs what it notes.
		strs := func() error { return f.checkStrings(true) }
		for _, c := range []func() error{f.checkInodeAttrs, f.checkSelfEntries, f.checkEntries, f.validateNames, strs, f.checkReferenced, f.checkNlinks, f.checkSharedTable, f.checkChunkRanges} {
			if e := runCheck(c); e != nil && e.Error() == err.Error() {
				return true
			}
		}
		return false
	}
	got := f.CheckLazy()
	if got != nil {
		// It runs Check's rules in Check's order, but the names' rules
		// (run first by Check) only later, so its error may be another.
		if want == nil {
			return fmt.Errorf("CheckLazy refused what Check accepts: %v", got)
		}
		return nil
	}
	for d := uint32(0); got == nil && d < f.rank[1]; d++ {
		got = f.CheckDir(d)
	}
	// A directory's checks run in another order than Check's passes over
	// the whole table: where both find a fault, one of a rule left out of
	// CheckLazy may be another.
	switch {
	case got != nil && want == nil:
		return fmt.Errorf("CheckDir refused what Check accepts: %v", got)
	case fmt.Sprint(got) != fmt.Sprint(want) && !leftOut(want) && (got == nil || !leftOut(got)):
		return fmt.Errorf("CheckLazy and CheckDir found %v, Check found %v", got, want)
	}
	return nil
}

type stopWalk struct{}

func (stopWalk) Error() string { return "stop" }

var errStopWalk error = stopWalk{}

func TestBadFS(t *testing.T) {
	imgs := decGlobFixtures(t, "badfs-sample/*.dwarfs")
	var decoded, built int
	for _, img := range imgs {
		t.Run(filepath.Base(img), func(t *testing.T) {
			start := time.Now()
			secs, err := decLoadSections(img)
			if err != nil {
				return // container-level corruption is block/'s business
			}
			for _, h := range secs.history {
				_, _ = DecodeHistory(h)
			}
			md, err := Decode(secs.schema, secs.data)
			if err == nil {
				if err := lazyAgrees(md); err != nil {
					t.Error(err)
				}
				decoded++
				if exercise(md, 100000) == nil {
					built++
				}
			}
			t.Logf("checked in %v", time.Since(start))
		})
	}
	t.Logf("%d images: %d metadata decoded, %d passed NewFS+Check", len(imgs), decoded, built)
}

package source

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godwarfs/godwarfs/internal/xxh3"
)

// The disk cache keeps fetched ranges of remote objects, one file per
// range, named after the object's identity and the range. Several
// processes may share a directory: entries are written under a temporary
// name and renamed into place, eviction runs under an exclusive flock,
// and a reader that loses a race with eviction sees a miss (an unlinked
// file it already opened stays readable). Every entry carries its range,
// the identity hash and an XXH3 of its bytes, checked on every use, so a
// torn or altered entry is refetched instead of served.

var (
	errCorruptEntry = errors.New("corrupt cache entry")
	errMiss         = errors.New("not cached")
)

const (
	cacheMagic   = "GDWCACH1"
	cacheHdrSize = 8 + 32 + 8 + 8 + 8
	cacheSubdir  = "godwarfs-v1"
)

type diskCache struct {
	dir    string
	limit  int64
	idHash [32]byte
	prefix string
	lock   *os.File
	used   atomic.Int64 // bytes in the directory, as of the last scan plus our writes
	evict  sync.Mutex
}

func openDiskCache(dir string, limit int64, identity string) (*diskCache, error) {
	d := &diskCache{dir: filepath.Join(dir, cacheSubdir), limit: limit, idHash: sha256.Sum256([]byte(identity))}
	d.prefix = hex.EncodeToString(d.idHash[:12])
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		return nil, fmt.Errorf("disk cache: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(d.dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("disk cache: %w", err)
	}
	d.lock = lock
	if err := d.trim(); err != nil {
		lock.Close()
		return nil, err
	}
	return d, nil
}

func (d *diskCache) path(off, n int64) string {
	return filepath.Join(d.dir, fmt.Sprintf("%s-%x-%x", d.prefix, off, n))
}

// get returns the cached bytes [off, off+n), errMiss, or an error
// wrapping errCorruptEntry after removing a damaged entry.
func (d *diskCache) get(off, n int64) ([]byte, error) {
	p := d.path(off, n)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errMiss
	}
	if err != nil {
		return nil, fmt.Errorf("disk cache: %w", err)
	}
	if err := d.check(b, off, n); err != nil {
		os.Remove(p)
		return nil, fmt.Errorf("%s: %w", filepath.Base(p), err)
	}
	// The modification time is the entry's last use, for LRU eviction.
	now := time.Now()
	os.Chtimes(p, now, now)
	return b[cacheHdrSize:], nil
}

func (d *diskCache) check(b []byte, off, n int64) error {
	switch {
	// n comes from the entry's name; a negative one must not wrap the sum.
	case n < 0 || int64(len(b)) < cacheHdrSize || int64(len(b))-cacheHdrSize != n:
		return fmt.Errorf("%w: %d bytes, want %d", errCorruptEntry, len(b), cacheHdrSize+n)
	case string(b[:8]) != cacheMagic:
		return fmt.Errorf("%w: bad magic", errCorruptEntry)
	case !bytes.Equal(b[8:40], d.idHash[:]):
		return fmt.Errorf("%w: belongs to another object", errCorruptEntry)
	case int64(binary.LittleEndian.Uint64(b[40:])) != off || int64(binary.LittleEndian.Uint64(b[48:])) != n:
		return fmt.Errorf("%w: range does not match its name", errCorruptEntry)
	case binary.LittleEndian.Uint64(b[56:]) != xxh3.Hash(b[cacheHdrSize:]):
		return fmt.Errorf("%w: checksum mismatch", errCorruptEntry)
	}
	return nil
}

// put stores data as the range starting at off.
func (d *diskCache) put(off int64, data []byte) error {
	n := int64(len(data))
	if cacheHdrSize+n > d.limit {
		return nil
	}
	var h [cacheHdrSize]byte
	copy(h[:], cacheMagic)
	copy(h[8:], d.idHash[:])
	binary.LittleEndian.PutUint64(h[40:], uint64(off))
	binary.LittleEndian.PutUint64(h[48:], uint64(n))
	binary.LittleEndian.PutUint64(h[56:], xxh3.Hash(data))
	f, err := os.CreateTemp(d.dir, ".tmp-")
	if err != nil {
		return err
	}
	_, err = f.Write(h[:])
	if err == nil {
		_, err = f.Write(data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), d.path(off, n))
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	if d.used.Add(cacheHdrSize+n) > d.limit {
		return d.trim()
	}
	return nil
}

// trim removes least recently used entries, of any object, until the
// directory holds at most 90% of the limit.
func (d *diskCache) trim() error {
	d.evict.Lock()
	defer d.evict.Unlock()
	if err := lockFile(d.lock); err != nil {
		return fmt.Errorf("disk cache: lock: %w", err)
	}
	defer unlockFile(d.lock)
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		return fmt.Errorf("disk cache: %w", err)
	}
	type entry struct {
		name  string
		size  int64
		mtime time.Time
	}
	var all []entry
	var total int64
	for _, e := range ents {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() || e.Name() == ".lock" {
			continue
		}
		if strings.HasPrefix(e.Name(), ".tmp-") {
			// Left behind by a process that died while writing.
			if time.Since(info.ModTime()) > time.Hour {
				os.Remove(filepath.Join(d.dir, e.Name()))
			}
			continue
		}
		all = append(all, entry{e.Name(), info.Size(), info.ModTime()})
		total += info.Size()
	}
	if total > d.limit {
		sort.Slice(all, func(i, j int) bool { return all[i].mtime.Before(all[j].mtime) })
		for _, e := range all {
			if total <= d.limit/10*9 {
				break
			}
			if os.Remove(filepath.Join(d.dir, e.name)) == nil {
				total -= e.size
			}
		}
	}
	d.used.Store(total)
	return nil
}

func (d *diskCache) close() error { return d.lock.Close() }

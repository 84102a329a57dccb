// Package s3input reads the objects under an S3 prefix as the input tree
// of a build (mkdwarfs -i s3://BUCKET/PREFIX/): object keys, relative to
// the prefix, become paths; the directories they imply become
// directories, and so do keys ending in a slash, which may stand for
// empty ones. Sizes and modification times come from the listing.
//
// The tree is read from the listing alone. The objects' bytes are fetched
// when the build first reads them, and ahead of its reads in the order it
// scans, by parallel ranged GETs that are retried as image reads are
// (package source/s3source) and pinned to the listed ETag and size: an
// object that changed or vanished since it was listed fails the build
// with an error naming it. Fetched bytes are kept in an unlinked
// temporary file for the build's second pass.
//
// Keys whose listings give the same size and the same ETag of the form
// S3 uses for the MD5 of a single-part object's contents (32 hex digits)
// are fetched once: trees put into object storage repeat files as much
// as trees on disk, and every GET is a request the store must serve. The
// first key's bytes are checked against that MD5 before the others are
// read from them (so a change to one of the others after the listing is
// not seen: the build holds what was listed); where they do not match (a
// store whose ETags are not MD5s, or an encrypted object), every key is
// fetched on its own.
package s3input

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/source"
	"github.com/godwarfs/godwarfs/source/s3source"
)

// Options configure an S3 input.
type Options struct {
	// Source holds the S3 settings (endpoint, region, path style,
	// profile; empty fields come from the environment) and the retry
	// rules. Its Workers bounds the parallel GETs (default 16).
	Source source.Options
	// PageSize is the number of keys a listing page asks for (0: the
	// server's default, 1000 on AWS).
	PageSize int
	// TempDir is where fetched bytes are kept during the build ("": the
	// system's temporary directory).
	TempDir string
	// ReadAhead bounds the bytes fetched ahead of the build's reads
	// (default 256 MiB).
	ReadAhead int64
	// Select, if set, keeps only the entries it returns true for; a
	// directory it drops takes its entries with it. The build then
	// fetches nothing else.
	Select func(Entry) bool
}

// File and directory modes: objects carry none, so every file gets
// FileMode and every directory DirMode, owned by 0:0 (--set-owner,
// --set-group and --chmod change them).
const (
	FileMode = 0o644
	DirMode  = 0o755
)

// partSize is the largest range one GET fetches.
const partSize = 8 << 20

// Entry is one entry of an S3 input: an object, a key ending in a slash,
// or a directory the keys imply.
type Entry struct {
	// Path is slash-separated and relative to the prefix.
	Path  string
	IsDir bool
	Size  int64 // a file's size
	Mtime time.Time
	// Object is the listed object; its Key is "" for an implied
	// directory.
	Object s3source.Object
}

// List lists the objects under the prefix url names (s3://BUCKET/PREFIX;
// a prefix not ending in / gets one) and returns them as Entries,
// sorted by path.
func List(ctx context.Context, url string, o Options) ([]Entry, error) {
	c, err := s3source.NewClient(ctx, o.Source)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	defer c.Close()
	_, ents, err := list(ctx, c, url, o)
	return ents, err
}

// list lists the prefix and returns its bucket and entries.
func list(ctx context.Context, c *s3source.Client, url string, o Options) (string, []Entry, error) {
	bucket, prefix, err := s3source.SplitURL(url)
	if err != nil {
		return "", nil, err
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	objs, err := c.List(ctx, bucket, prefix, o.PageSize)
	if err != nil {
		return "", nil, err
	}
	ents, err := Entries(bucket, prefix, objs)
	if err != nil {
		return "", nil, err
	}
	if o.Select != nil {
		ents = selectEntries(ents, o.Select)
	}
	return bucket, ents, nil
}

// Entries turns the objects listed under prefix (which ends in / unless
// it is empty) into entries sorted by path, the directories the keys
// imply included. The prefix's own object, if any, is the root (Path
// ""). A key whose path has an empty, . or .. element, or a path that is
// both a file and a directory, is an error naming the keys.
func Entries(bucket, prefix string, objs []s3source.Object) ([]Entry, error) {
	byPath := map[string]*Entry{}
	var ents []*Entry
	add := func(e Entry) (*Entry, error) {
		if old, ok := byPath[e.Path]; ok {
			if !old.IsDir || !e.IsDir {
				keys := []string{old.Object.Key, e.Object.Key}
				for i, k := range keys {
					if k == "" {
						keys[i] = "keys below it"
					} else {
						keys[i] = "s3://" + bucket + "/" + k
					}
				}
				return nil, fmt.Errorf("%s is both a file and a directory (%s, %s)", e.Path, keys[0], keys[1])
			}
			if e.Object.Key != "" {
				old.Object, old.Mtime = e.Object, e.Mtime
			}
			return old, nil
		}
		n := &e
		byPath[e.Path] = n
		ents = append(ents, n)
		return n, nil
	}
	if _, err := add(Entry{IsDir: true}); err != nil {
		return nil, err
	}
	for _, o := range objs {
		rel, ok := strings.CutPrefix(o.Key, prefix)
		if !ok {
			return nil, fmt.Errorf("s3://%s/%s: listed for the prefix %q, but it does not start with it", bucket, o.Key, prefix)
		}
		isDir := rel == "" || strings.HasSuffix(rel, "/")
		rel = strings.TrimSuffix(rel, "/")
		if rel != "" {
			for _, el := range strings.Split(rel, "/") {
				if el == "" || el == "." || el == ".." {
					return nil, fmt.Errorf("s3://%s/%s: the key's path below the prefix has an empty, . or .. element", bucket, o.Key)
				}
			}
		}
		// Implied directories first.
		for i := 0; i < len(rel); i++ {
			if rel[i] == '/' {
				if _, err := add(Entry{Path: rel[:i], IsDir: true}); err != nil {
					return nil, err
				}
			}
		}
		e := Entry{Path: rel, IsDir: isDir, Mtime: o.LastModified, Object: o}
		if !isDir {
			e.Size = o.Size
		}
		if _, err := add(e); err != nil {
			return nil, err
		}
	}
	// A directory without an object of its own takes the newest time of
	// what it holds, so that the tree's times depend on the listing only.
	sort.Slice(ents, func(i, j int) bool { return ents[i].Path > ents[j].Path })
	for _, e := range ents {
		if e.Path == "" {
			continue
		}
		parent := byPath[parentOf(e.Path)]
		if parent.Object.Key == "" && e.Mtime.After(parent.Mtime) {
			parent.Mtime = e.Mtime
		}
	}
	out := make([]Entry, len(ents))
	for i, e := range ents {
		out[len(ents)-1-i] = *e
	}
	return out, nil
}

func parentOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// selectEntries keeps the entries keep accepts whose directories it kept.
func selectEntries(ents []Entry, keep func(Entry) bool) []Entry {
	dropped := map[string]bool{}
	out := ents[:0:0]
	for _, e := range ents {
		if e.Path != "" && (dropped[parentOf(e.Path)] || !keep(e)) {
			if e.IsDir {
				dropped[e.Path] = true
			}
			continue
		}
		out = append(out, e)
	}
	return out
}

// Source is an S3 prefix as a dedup.TreeSource.
type Source struct {
	url string
	o   Options

	c      *s3source.Client
	bucket string
	spill  *os.File
	// spillName is the spill file's name while it is still to be
	// removed.
	spillName string
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup

	objs []*object // files in the order the build scans them
	cum  []int64   // cum[i]: bytes of objs[:i]

	mu       sync.Mutex
	cond     *sync.Cond
	urgent   []job // parts of objects a reader waits for
	queue    []job // parts fetched ahead
	next     int   // the next object to fetch ahead
	pos      int   // the furthest object read so far
	spillEnd int64
	closed   bool

	fetched atomic.Int64
}

type object struct {
	idx     int
	url     string
	ver     s3source.Object
	off     int64 // in the spill file, once started
	started bool  // under Source.mu
	left    atomic.Int32
	done    chan struct{}
	errOnce sync.Once
	err     error
	// same is an object scanned earlier with the same size and MD5
	// ETag: o is read from its bytes if they match that MD5, and
	// fetched itself otherwise.
	same *object
	// check is set on an object others are the same as: its bytes are
	// hashed once fetched, and md5OK tells whether they match its ETag
	// (set before done is closed).
	check bool
	md5OK bool
}

// contentKey is what objects with the same contents have in common: a
// size and an ETag that is an MD5 (lower case, no quotes).
type contentKey struct {
	size int64
	md5  string
}

// contentOf returns o's contentKey; false if its ETag is not an MD5, as
// for multipart uploads ("...-N") and ETags of other forms.
func contentOf(o s3source.Object) (contentKey, bool) {
	e := strings.ToLower(strings.Trim(o.ETag, `"`))
	if o.Size <= 0 || len(e) != 32 {
		return contentKey{}, false
	}
	if _, err := hex.DecodeString(e); err != nil {
		return contentKey{}, false
	}
	return contentKey{o.Size, e}, true
}

type job struct {
	o    *object
	part int64
}

// New returns the tree source for the prefix url names
// (s3://BUCKET/PREFIX/). Nothing is read before ReadTree.
func New(url string, o Options) *Source {
	if o.Source.Workers <= 0 {
		o.Source.Workers = 16
	}
	if o.ReadAhead <= 0 {
		o.ReadAhead = 256 << 20
	}
	s := &Source{url: url, o: o, pos: -1}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// ReadTree implements dedup.TreeSource: it lists the prefix and starts
// the fetchers, which run until Close.
func (s *Source) ReadTree(ctx context.Context, progress func(int64), warn func(string, ...any)) (*dedup.TreeNode, error) {
	if s.c != nil {
		return nil, errors.New(s.url + ": read twice")
	}
	c, err := s3source.NewClient(ctx, s.o.Source)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.url, err)
	}
	s.c = c
	bucket, ents, err := list(ctx, c, s.url, s.o)
	if err != nil {
		return nil, err
	}
	s.bucket = bucket
	if len(ents) == 1 && ents[0].Object.Key == "" {
		// Most likely a typo, or an image's URL without the option that
		// rewrites it.
		return nil, fmt.Errorf("%s: no objects below the prefix", s.url)
	}
	root := &dedup.TreeNode{}
	dirs := map[string]*dedup.TreeNode{"": root}
	for _, e := range ents {
		var n *dedup.TreeNode
		if e.Path == "" {
			n = root
		} else {
			n = &dedup.TreeNode{Name: e.Path[strings.LastIndexByte(e.Path, '/')+1:]}
			parent := dirs[parentOf(e.Path)]
			parent.Children = append(parent.Children, n)
		}
		n.Mtime, n.Atime, n.Ctime = e.Mtime, e.Mtime, e.Mtime
		if e.IsDir {
			n.Mode = syscall.S_IFDIR | DirMode
			dirs[e.Path] = n
			if e.Object.Size > 0 {
				warn("%s: a directory's key holds %d bytes; they are left out", "s3://"+bucket+"/"+e.Object.Key, e.Object.Size)
			}
			continue
		}
		n.Mode = syscall.S_IFREG | FileMode
		n.Size = e.Size
		o := &object{url: "s3://" + bucket + "/" + e.Object.Key, ver: e.Object, done: make(chan struct{})}
		n.Data = dedup.FileData{R: reader{s, o}, Name: o.url}
	}
	// The build scans depth first, by name: fetch in that order, each
	// contents once.
	first := map[contentKey]*object{}
	var visit func(n *dedup.TreeNode)
	visit = func(n *dedup.TreeNode) {
		sort.Slice(n.Children, func(i, j int) bool { return n.Children[i].Name < n.Children[j].Name })
		for _, c := range n.Children {
			if r, ok := c.Data.R.(reader); ok {
				k, ok := contentOf(r.o.ver)
				if p := first[k]; ok && p != nil {
					r.o.same, r.o.idx, p.check = p, p.idx, true
					continue
				}
				if ok {
					first[k] = r.o
				}
				r.o.idx = len(s.objs)
				s.objs = append(s.objs, r.o)
			}
			visit(c)
		}
	}
	visit(root)
	s.cum = make([]int64, len(s.objs)+1)
	for i, o := range s.objs {
		s.cum[i+1] = s.cum[i] + o.ver.Size
		if o.ver.Size == 0 {
			o.started = true
			close(o.done)
		}
	}
	if s.spill, err = os.CreateTemp(s.o.TempDir, "mkdwarfs-s3-*"); err != nil {
		return nil, fmt.Errorf("%s: a temporary file for the fetched objects: %w", s.url, err)
	}
	// Unlinked at once where the system allows it: nothing is left
	// behind, whatever happens. Windows refuses to remove an open file;
	// there it goes when it is closed.
	if os.Remove(s.spill.Name()) != nil {
		s.spillName = s.spill.Name()
	}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	context.AfterFunc(ctx, s.stop)
	// The build reads the first file soon: start there.
	s.mu.Lock()
	s.pos = 0
	s.mu.Unlock()
	for range s.o.Source.Workers {
		s.wg.Add(1)
		go s.fetcher()
	}
	progress(0)
	return root, nil
}

// Fetched returns the object bytes fetched so far.
func (s *Source) Fetched() int64 { return s.fetched.Load() }

// stop ends the fetchers and fails reads still waiting.
func (s *Source) stop() {
	s.mu.Lock()
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	if s.cancel != nil {
		s.cancel()
	}
}

// Close stops the fetchers and removes the fetched bytes.
func (s *Source) Close() error {
	s.stop()
	s.wg.Wait()
	if s.c != nil {
		s.c.Close()
	}
	if s.spill == nil {
		return nil
	}
	err := s.spill.Close()
	if s.spillName != "" {
		os.Remove(s.spillName)
	}
	return err
}

// start assigns o its place in the spill file and queues its parts.
// Called with s.mu held.
func (s *Source) start(o *object, urgent bool) {
	if o.started {
		return
	}
	o.started = true
	o.off = s.spillEnd
	s.spillEnd += o.ver.Size
	n := (o.ver.Size + partSize - 1) / partSize
	o.left.Store(int32(n))
	for p := range n {
		if urgent {
			s.urgent = append(s.urgent, job{o, p})
		} else {
			s.queue = append(s.queue, job{o, p})
		}
	}
	s.cond.Broadcast()
}

// take returns the next part to fetch, waiting for one; false once the
// source is closed.
func (s *Source) take() (job, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		switch {
		case s.closed:
			return job{}, false
		case len(s.urgent) > 0:
			j := s.urgent[0]
			s.urgent = s.urgent[1:]
			return j, true
		case len(s.queue) > 0:
			j := s.queue[0]
			s.queue = s.queue[1:]
			return j, true
		}
		// Fetch ahead of the furthest read, up to ReadAhead bytes.
		if s.pos >= 0 && s.next <= s.pos {
			s.next = s.pos + 1
		}
		if s.pos >= 0 && s.next < len(s.objs) && s.cum[s.next]-s.cum[s.pos] <= s.o.ReadAhead {
			s.start(s.objs[s.next], false)
			s.next++
			continue
		}
		s.cond.Wait()
	}
}

// fetcher fetches parts until the source is closed.
func (s *Source) fetcher() {
	defer s.wg.Done()
	buf := make([]byte, 256<<10)
	for {
		j, ok := s.take()
		if !ok {
			return
		}
		o := j.o
		select {
		case <-o.done:
			continue // failed already
		default:
		}
		off := j.part * partSize
		n := min(partSize, o.ver.Size-off)
		err := s.c.Get(s.ctx, s.bucket, o.ver, off, n, s.spill, o.off+off, buf)
		if err == nil {
			s.fetched.Add(n)
		}
		if err != nil {
			o.finish(err)
		} else if o.left.Add(-1) == 0 {
			if o.check {
				o.md5OK = s.matchesETag(o, buf)
			}
			o.finish(nil)
		}
	}
}

// matchesETag tells whether o's fetched bytes have the MD5 its ETag
// gives.
func (s *Source) matchesETag(o *object, buf []byte) bool {
	k, _ := contentOf(o.ver)
	h := md5.New()
	if _, err := io.CopyBuffer(h, io.NewSectionReader(s.spill, o.off, o.ver.Size), buf); err != nil {
		return false
	}
	return hex.EncodeToString(h.Sum(nil)) == k.md5
}

// finish records the object's fetch as done, with err if it failed.
func (o *object) finish(err error) {
	o.errOnce.Do(func() {
		switch {
		case errors.Is(err, source.ErrChanged):
			err = fmt.Errorf("%s changed during the build: %w", o.url, err)
		case errors.Is(err, s3source.ErrGone):
			err = fmt.Errorf("%s vanished during the build: %w", o.url, err)
		case err != nil:
			err = fmt.Errorf("%s: %w", o.url, err)
		}
		o.err = err
		close(o.done)
	})
}

// bytesOf returns the object whose fetched bytes are o's: the one o is
// the same as if its bytes proved it, else o itself, fetched unless it
// is.
func (s *Source) bytesOf(o *object) (*object, error) {
	if p := o.same; p != nil {
		if s.wait(p) == nil && p.md5OK {
			return p, nil
		}
		// p's bytes are not the MD5 its ETag gives, or p failed: o's
		// own error, if it has one, is the one to tell.
	}
	return o, s.wait(o)
}

// wait fetches o unless it is, and waits until it is there.
func (s *Source) wait(o *object) error {
	s.mu.Lock()
	if o.idx > s.pos {
		s.pos = o.idx
		s.cond.Broadcast()
	}
	s.start(o, true)
	s.mu.Unlock()
	select {
	case <-o.done:
		return o.err
	default:
	}
	select {
	case <-o.done:
		return o.err
	case <-s.ctx.Done():
		// A part that ended with the cancel may have closed done too.
		select {
		case <-o.done:
			if o.err != nil {
				return o.err
			}
			return nil
		default:
		}
		return fmt.Errorf("%s: %w", o.url, context.Cause(s.ctx))
	}
}

// reader reads one object's bytes.
type reader struct {
	s *Source
	o *object
}

func (r reader) ReadAt(p []byte, off int64) (int, error) {
	size := r.o.ver.Size
	if off >= size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	o, err := r.s.bytesOf(r.o)
	if err != nil {
		return 0, err
	}
	n := min(int64(len(p)), size-off)
	m, err := r.s.spill.ReadAt(p[:n], o.off+off)
	if int64(m) == n {
		err = nil
		if n < int64(len(p)) {
			err = io.EOF
		}
	}
	return m, err
}

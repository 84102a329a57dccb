//go:build !windows && !(linux && (386 || arm))

package fusefs

import (
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/gofuse/fuse"
	"github.com/godwarfs/godwarfs/source"
)

// kernelTimeout is how long the kernel may cache entries and attributes.
// The image never changes, so this only bounds memory held by the kernel.
const kernelTimeout = 24 * time.Hour

// Config controls a mount.
type Config struct {
	// Options are the driver settings; the zero value is the default.
	Options MountOptions
	// Debug logs every FUSE request (like -d) and implies perfmon output.
	Debug bool
	// Stderr receives warnings, the errors behind EIO replies and the
	// perfmon report at unmount (default os.Stderr).
	Stderr io.Writer
	// FsName is the "source" shown in /proc/mounts (default "dwarfs").
	FsName string
	// DirectMount uses mount(2) instead of fusermount3; only works as root.
	// Nil means: direct when running as root.
	DirectMount *bool
	// LimitMemory sets the process's soft memory limit (the Go runtime's
	// GOMEMLIMIT, unless that is set) to what the mount needs on the Go
	// heap: the heap in use when mounting and the compressed blocks being
	// decoded, plus a small constant (decoded blocks live outside the
	// heap; see limitMemory); and, unless GOGC is set, lets garbage grow
	// to a quarter of the live heap instead of all of it (mountGCPercent);
	// and takes the executable's code and read-only data that starting
	// the process mapped out of the resident set (dropExecutablePages).
	// For a process that serves one mount.
	LimitMemory bool
	// SpareProcs raises GOMAXPROCS (unless the GOMAXPROCS variable is
	// set) so that Go code can run while every FUSE reader is blocked in
	// read(2); see spareProcs. For a process that serves one mount.
	SpareProcs bool
}

// driver is the per-mount state.
type driver struct {
	// ready is set once the mount is complete, go-fuse's own probe of
	// it included; until then the pid xattr, which callers poll to learn
	// that the driver is up, is not there. A driver killed while that
	// probe's file is still open would wait on itself as it exits.
	ready   atomic.Bool
	src     Source
	root    uint32       // the source's root inode
	ninodes uint64       // inodes in the source; node ids above are invalid
	opts    MountOptions // with defaults applied
	blksize uint32
	ahead   int64 // bytes to prefetch once a sequential reader is detected
	// spendMin is the smallest file whose sequential readers mark the
	// blocks they have gone past as spent (see noteRead).
	spendMin int64
	opens    openCounts
	ioErrs   ioErrors
	pid      int
	perf     perfCounters
	plus     plusPolicy // which READDIRPLUS entries carry attributes
	// memLimit is the soft memory limit LimitMemory set (0: none).
	memLimit int64
	// base is 0 in a mount of this image alone; in a mount of several
	// it is the image's slot shifted into the high half of the node ids
	// (see nodeID).
	base uint64

	rootOnly bool   // allow_root: only root and owner may access
	owner    uint32 // uid that mounted

	fold     *foldIndex // case_insensitive lookups (nil: exact)
	analysis *analysis  // records opened files (nil: off)
}

func (d *driver) perfReport() string {
	r := d.perf.report(d.src.CacheStats())
	if d.memLimit > 0 {
		r += fmt.Sprintf("memory limit: %d bytes\n", d.memLimit)
	}
	if st, ok := d.remoteStats(); ok {
		r += "remote: " + st.String() + "\n"
	}
	return r
}

// remoteStats returns the transfer counters when the image is remote.
func (d *driver) remoteStats() (source.Stats, bool) {
	if rs, ok := d.src.(interface{ RemoteStats() (source.Stats, bool) }); ok {
		return rs.RemoteStats()
	}
	return source.Stats{}, false
}

// Server is a mounted image, or a mount of several (MountMulti).
type Server struct {
	fuse    *fuse.Server
	d       *driver // a mount of one image: its driver
	raw     *rawFS
	multi   *Multi // a mount of several images
	report  func() string
	tidy    func(maxAge time.Duration)
	onDone  func() // after serving has ended (nil: nothing)
	opts    MountOptions
	dir     string
	stderr  io.Writer
	perfOut bool
	direct  bool
	helper  *autoUnmountHelper // auto_unmount's fusermount3 (nil: none)

	stop     chan struct{} // closes background goroutines
	bg       sync.WaitGroup
	done     chan struct{} // closed once serving has ended and cleanup ran
	stopOnce sync.Once
}

// Mount mounts src at dir and returns once the kernel sees the mount.
func Mount(dir string, src Source, cfg Config) (*Server, error) {
	if err := checkMountPoint(dir); err != nil {
		return nil, err
	}
	stderr := cfg.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	d, err := newDriver(src, cfg.Options, stderr, 0)
	if err != nil {
		return nil, err
	}
	// The file system is wrapped to count the requests that reach the
	// driver (perfmon's fuse.requests).
	rfs := newRawFS(d)
	// Linux (5.1 on) takes ENOSYS for OPENDIR as "no more"; other
	// systems' FUSE may fail the opendir(2).
	rfs.noOpenDir = runtime.GOOS == "linux"
	s, err := serve(dir, countingFS{RawFileSystem: rfs, n: &d.perf.ops}, cfg, d.opts, func() { d.ready.Store(true) })
	if err != nil {
		return nil, err
	}
	s.d, s.raw = d, rfs
	s.report, s.tidy = d.perfReport, src.Tidy
	if cfg.LimitMemory {
		d.memLimit = limitMemory(src)
		if os.Getenv("GOGC") == "" {
			debug.SetGCPercent(mountGCPercent)
		}
		// Best effort: the mount works the same with them resident.
		_ = dropExecutablePages()
	}
	s.start()
	return s, nil
}

// checkMountPoint checks that dir is a directory.
func checkMountPoint(dir string) error {
	if fi, err := os.Stat(dir); err != nil {
		return fmt.Errorf("mount point: %w", err)
	} else if !fi.IsDir() {
		return fmt.Errorf("mount point %s: %w", dir, syscall.ENOTDIR)
	}
	return nil
}

// newDriver sets up the serving of src with the options o; base is 0 for
// a mount of src alone, or the high bits of the node ids of src's inodes
// in a mount of several images (see driver.nodeID).
func newDriver(src Source, opts MountOptions, stderr io.Writer, base uint64) (*driver, error) {
	o := opts.withDefaults()
	info := src.Info()
	d := &driver{src: src, opts: o, pid: os.Getpid(), root: src.Root(), ninodes: info.InodeCount, base: base}
	d.blksize = uint32(min(max(o.BlockSize, 512), 1<<30))
	d.ioErrs.w = stderr
	if o.CaseInsensitive {
		d.fold = newFoldIndex(src)
		if err := warnCollisions(src, stderr); err != nil {
			return nil, fmt.Errorf("case_insensitive: %w", err)
		}
	}
	if o.Analysis != nil {
		d.analysis = newAnalysis(o.Analysis, src.Root())
	}
	d.ahead = o.Readahead
	if d.ahead <= 0 {
		d.ahead = defaultAhead(info, src.CacheStats().Capacity)
	}
	d.spendMin = math.MaxInt64
	if c := src.CacheStats().Capacity; c > 0 {
		d.spendMin = c / 2
	}
	// The kernel only knows allow_other; allow_root is allow_other plus a
	// caller check in the driver, as in libfuse.
	d.rootOnly = o.AllowRoot && !o.AllowOther
	d.owner = uint32(os.Geteuid())
	return d, nil
}

// serve mounts raw at dir and starts serving it; ready runs once the
// mount is complete. The caller sets the Server's report and tidy and
// then calls start.
func serve(dir string, raw fuse.RawFileSystem, cfg Config, o MountOptions, ready func()) (*Server, error) {
	direct := os.Geteuid() == 0
	if cfg.DirectMount != nil {
		direct = *cfg.DirectMount
	}
	fsname := cfg.FsName
	if o.FsName != "" {
		fsname = o.FsName
	}
	if fsname == "" {
		fsname = "dwarfs"
	}
	name := "dwarfs"
	if o.Subtype != "" {
		name = o.Subtype
	}
	kopts := []string{"ro"}
	for _, f := range o.KernelFlags {
		if f != "ro" {
			kopts = append(kopts, f)
		}
	}
	if o.DefaultPermissions {
		kopts = append(kopts, "default_permissions")
	}
	mo := &fuse.MountOptions{
		AllowOther:  o.AllowOther || o.AllowRoot,
		Options:     kopts,
		FsName:      fsname,
		Name:        name,
		Debug:       cfg.Debug,
		DirectMount: direct,
		// Reads can block on decompression; let the kernel keep
		// several of them in flight.
		MaxBackground: 64,
		// The largest READ (max_read and max_pages). go-fuse gives each
		// of its readers a request buffer of this size, which makes up
		// most of the driver's heap. With the kernel's default readahead
		// READs are 256 KiB whatever the limit above that, for this
		// driver and the reference alike, so a larger one (1 MiB was
		// used) only made the buffers four times the size: RSS after
		// ls -lR of the redis image was 6 MiB higher, with the same
		// number of READs and throughput within noise for cat and fio.
		MaxWrite:     maxRead,
		MaxReadAhead: maxRead,
		// File data comes from memory, never from a file descriptor
		// splice(2) could move: each READ would only set up a pipe,
		// write the reply header into it and throw it away again
		// (three system calls) before writing the reply as usual.
		DisableSplice: true,
		// The image never changes: symlink targets can stay in the
		// kernel's page cache like file contents.
		EnableSymlinkCaching: true,
		// With kernel ACL support the kernel keeps each inode's
		// (absent) ACL instead of asking again for every ls -l;
		// the kernel then also checks permissions itself, so only
		// when default_permissions asked for that anyway.
		EnableAcl: o.DefaultPermissions,
		// READDIRPLUS only where it pays: for the first part of a
		// listing and after a lookup in the directory (ls -l); which
		// of its entries carry attributes is up to plusPolicy.
		ExtraCapabilities: fuse.CAP_READDIRPLUS_AUTO,
	}
	if !cfg.Debug {
		// go-fuse logs expected races (e.g. replies to interrupted
		// requests) that would only confuse users.
		mo.Logger = log.New(io.Discard, "", 0)
	}
	if o.MaxThreads > 0 {
		raw = limitFS{RawFileSystem: raw, sem: make(chan struct{}, o.MaxThreads)}
	}
	mountAt := dir
	var helper *autoUnmountHelper
	if o.AutoUnmount {
		// fusermount3 does the mount, also as root: only it can
		// unmount after this process is gone.
		mo.DirectMount = false
		direct = false
		fd, h, err := mountAutoUnmount(dir, mo)
		if err != nil {
			return nil, fmt.Errorf("mount %s: %w", dir, err)
		}
		helper = h
		mountAt = fmt.Sprintf("/dev/fd/%d", fd)
	}
	// One goroutine waits on the device; a READ, which may wait for a
	// block to be fetched and decoded, starts another (see readersFS).
	mo.ReadersOnDemand = true
	raw = &readersFS{RawFileSystem: raw}
	fsrv, err := fuse.NewServer(raw, mountAt, mo)
	if err == nil {
		go fsrv.Serve()
		if err = fsrv.WaitMount(); err == nil && helper != nil {
			// go-fuse cannot run its poll probe on a /dev/fd/N mount.
			err = probePoll(dir)
		}
		if err == nil {
			ready()
		}
	}
	if err != nil {
		if helper != nil {
			_ = unmountDir(dir)
			helper.close()
		}
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	s := &Server{
		fuse: fsrv, dir: dir, direct: direct, helper: helper,
		stderr:  cfg.Stderr,
		perfOut: o.Perfmon || cfg.Debug,
		opts:    o,
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	if s.stderr == nil {
		s.stderr = os.Stderr
	}
	if cfg.SpareProcs && os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + spareProcs)
	}
	return s, nil
}

// start runs the background work of a mounted Server.
func (s *Server) start() {
	o := s.opts
	if o.Tidy != TidyNone {
		s.bg.Add(1)
		go s.tidyLoop(o.Tidy, o.TidyInterval, o.TidyMaxAge)
	}
	go func() {
		// Serving ends on Unmount or on an external fusermount -u.
		s.fuse.Wait()
		s.finish()
	}()
}

// spareProcs is how many Ps the driver adds to the runtime's default of
// one per CPU, after go-fuse has sized its reader pool by that default.
// A reader waiting in read(2) on the FUSE device keeps its P; when every P
// is held that way, the runtime takes them back (handing each to a newly
// woken thread that finds nothing to do) every 20 microseconds and the
// reader that the next request wakes must get one back: a few thread
// wake-ups per request. With an idle P left over, a woken reader keeps
// its own and runs at once. One client stat-ing 100k files on a 2-CPU
// machine took 28-33% less time and CPU with 3 or 4 Ps than with 2 (Go
// 1.25). With Go 1.26 the dwarfs command no longer asks for it: the
// spare Ps kept the runtime's background sweeper yielding to the
// scheduler after every few spans, under the scheduler's lock, which
// took a third of the driver's CPU in a find; without them find over the
// redis image took 27% less time and half the CPU, and stat of every
// file the same time.
const spareProcs = 2

// maxRead is the largest READ request the kernel may send (see Mount).
const maxRead = 256 << 10

// memSlack is what the process may use beyond the metadata, the block
// cache and the blocks being decoded: FUSE request buffers, open file
// layouts, stacks.
const memSlack = 64 << 20

// mountGCPercent is the driver's GOGC. Its live heap is mostly the
// metadata, large pointer-free arrays that a collection marks in little
// time, while the default of 100 lets the process grow to twice their
// size between collections: on a 1M-file image (70 MiB of live metadata)
// RSS after find was 148 MiB with 100 and 104 MiB with 25, for the same
// CPU time within noise. (Decoded blocks are not on the heap; see
// limitMemory.)
const mountGCPercent = 25

// limitMemory sets the runtime's soft memory limit for a mount of src and
// returns it. The limit covers what lives on the Go heap: the metadata,
// the compressed payloads of the blocks being decoded (up to a block per
// worker, plus one) and memSlack. The block cache keeps decoded blocks in
// memory of their own, which it hands back to the system as soon as a
// block is evicted and no read holds it, so the cache's capacity counts
// here only where its blocks are too small for that and live on the heap.
func limitMemory(src Source) int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	// Opening left the metadata decoding's garbage behind: collect it and
	// return its pages, so the mounted driver starts at its live size.
	collectOpenGarbage()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	info := src.Info()
	limit := int64(ms.HeapAlloc) + int64(max(info.Workers, 1)+1)*int64(info.BlockSize) + memSlack
	if !block.OffHeap(int(info.BlockSize)) {
		limit += src.CacheStats().Capacity
	}
	debug.SetMemoryLimit(limit)
	return limit
}

// collectOpenGarbage collects what opening images left behind and
// returns its pages to the system. Two collections: buffers that opening
// put back into sync.Pools (the checksum buffers of each image) survive
// the first one in the pools' victim cache and go only with the second;
// on 100 small images that was 10 MiB of a 15 MiB heap.
func collectOpenGarbage() {
	runtime.GC()
	debug.FreeOSMemory()
}

// defaultAhead is how far ahead of a sequential reader blocks are
// decoded without an explicit readahead: one block per decode worker, so
// the whole pool decompresses while the reader copies, but at most half
// the cache, so read-ahead never evicts the block being read.
func defaultAhead(info FsInfo, capacity int64) int64 {
	bs := int64(max(info.BlockSize, 64<<10))
	ahead := bs * int64(max(info.Workers, 1))
	if capacity > 0 {
		ahead = min(ahead, max(capacity/2, bs))
	}
	return ahead
}

// tidyLoop trims the block cache every interval. "time" drops blocks idle
// for longer than maxAge; "swap" drops all idle blocks, but only while the
// system is short of memory (the reference checks whether cache pages
// were swapped out, which Go cannot observe; memory pressure is the cause
// it reacts to).
func (s *Server) tidyLoop(strategy TidyStrategy, interval, maxAge time.Duration) {
	defer s.bg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			switch strategy {
			case TidyTime:
				s.tidy(maxAge)
			case TidySwap:
				if memoryPressure() {
					s.tidy(0)
				}
			}
		}
	}
}

// memoryPressure reports whether less than 1/16 of RAM is available or
// swap is more than half used, per /proc/meminfo.
func memoryPressure() bool {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return false
	}
	v := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var n int64
		if _, err := fmt.Sscan(rest, &n); err == nil {
			v[k] = n
		}
	}
	if total := v["MemTotal"]; total > 0 && v["MemAvailable"] < total/16 {
		return true
	}
	if st := v["SwapTotal"]; st > 0 && st-v["SwapFree"] > st/2 {
		return true
	}
	return false
}

func (s *Server) finish() {
	s.stopOnce.Do(func() {
		close(s.stop)
		s.bg.Wait()
		if s.helper != nil {
			s.helper.close()
		}
		if s.perfOut {
			fmt.Fprint(s.stderr, s.report())
		}
		if s.onDone != nil {
			s.onDone()
		}
		close(s.done)
	})
}

// Dir returns the mount point.
func (s *Server) Dir() string { return s.dir }

// Done is closed when the file system has been unmounted (by Unmount or
// externally) and background work has stopped.
func (s *Server) Done() <-chan struct{} { return s.done }

// Wait blocks until the file system is unmounted.
func (s *Server) Wait() { <-s.done }

// Perfmon returns the current performance report.
func (s *Server) Perfmon() string { return s.report() }

// Unmount unmounts the file system and waits for serving to stop. If the
// mount is busy it is detached lazily and the FUSE connection aborted, so
// open files fail instead of keeping the server alive.
func (s *Server) Unmount() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	var err error
	if s.helper != nil {
		err = unmountDir(s.dir)
	} else {
		err = s.fuse.Unmount()
	}
	if err != nil {
		if ferr := s.forceUnmount(); ferr != nil {
			return fmt.Errorf("unmount %s: %w (forced: %v)", s.dir, err, ferr)
		}
	}
	select {
	case <-s.done:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("unmount %s: server did not stop", s.dir)
	}
}

func fusermount(args ...string) error {
	for _, bin := range []string{"fusermount3", "fusermount"} {
		path, err := exec.LookPath(bin)
		if err != nil {
			continue
		}
		out, err := exec.Command(path, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %w: %s", bin, err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	return errors.New("fusermount3 not found")
}

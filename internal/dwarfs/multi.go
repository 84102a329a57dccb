//go:build !windows && !(linux && (386 || arm))

package dwarfs

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/control"
	"github.com/godwarfs/godwarfs/internal/mountopts"
	"github.com/godwarfs/godwarfs/ociartifact"
	"github.com/godwarfs/godwarfs/source"
)

// subcommands are the first words that make dwarfs serve or control a
// mount of several images.
var subcommands = map[string]bool{"multi": true, "add": true, "remove": true, "config": true}

// daemonURLsEnv hands the image URLs that carry credentials to the
// background child of dwarfs multi, one a line.
const daemonURLsEnv = "GODWARFS_DWARFS_IMAGE_URLS"

// imageSpec is one [NAME:]IMAGE argument.
type imageSpec struct {
	Name, Image string
}

func (s imageSpec) String() string { return s.Name + ":" + s.Image }

// parseSpec splits a [NAME:]IMAGE argument. The name is what precedes
// the first colon, unless that is a URL's scheme ("https://...") or
// contains a slash (a path such as "./a:b.dwarfs"); without a name the
// image's file name without ".dwarfs" is the name.
func parseSpec(arg string) (imageSpec, error) {
	s := imageSpec{Image: arg}
	if i := strings.IndexByte(arg, ':'); i > 0 {
		prefix, rest := arg[:i], arg[i+1:]
		if !strings.HasPrefix(rest, "//") && !strings.Contains(prefix, "/") {
			s = imageSpec{Name: prefix, Image: rest}
		}
	}
	if s.Image == "" {
		return s, cli.Usagef("%q names no image", arg)
	}
	if s.Name == "" {
		s.Name = defaultName(s.Image)
		if s.Name == "" {
			return s, cli.Usagef("cannot name the image %s after its file: give NAME:IMAGE", arg)
		}
	}
	if err := fusefs.ValidName(s.Name); err != nil {
		return s, cli.Usagef("%s: %v", arg, err)
	}
	return s, nil
}

// defaultName is an image's name in a mount of several: its file name
// (the last element of a URL's path) without ".dwarfs".
func defaultName(image string) string {
	base := filepath.Base(image)
	if r, err := ociartifact.ParseReference(image); err == nil {
		// docker://REGISTRY/NS/APP:TAG: the repository's last element.
		return path.Base(r.Context().RepositoryStr())
	}
	if source.IsRemote(image) {
		u, err := url.Parse(image)
		if err != nil {
			return ""
		}
		base = path.Base(u.Path)
		if base == "/" || base == "." {
			return ""
		}
	}
	base = strings.TrimSuffix(base, ".dwarfs")
	if base == "." || base == ".." || base == "/" {
		return ""
	}
	return base
}

// parseSpecs parses image arguments, refusing a name given twice; local
// paths are made absolute (the driver runs in "/").
func parseSpecs(args []string) ([]imageSpec, error) {
	var out []imageSpec
	seen := map[string]bool{}
	for _, a := range args {
		s, err := parseSpec(a)
		if err != nil {
			return nil, err
		}
		if seen[s.Name] {
			return nil, cli.Usagef("image name %q is given twice (use NAME:IMAGE)", s.Name)
		}
		seen[s.Name] = true
		if !source.IsRemote(s.Image) {
			if abs, err := filepath.Abs(s.Image); err == nil {
				s.Image = abs
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// multiArgs is a parsed dwarfs multi command line.
type multiArgs struct {
	Specs      []imageSpec
	MountPoint string
	Options    mountopts.Options
	Items      []string // the -o items
	Foreground bool
	Debug      bool
}

// perImageOptions are -o options that name one image's files, which a
// mount of several cannot apply to all.
var perImageOptions = []string{"analysis_file", "signature", "imagesize"}

// checkMultiOptions refuses the options a mount of several images has no
// use for.
func checkMultiOptions(items []string) error {
	for _, it := range items {
		name, _, _ := strings.Cut(it, "=")
		if slices.Contains(perImageOptions, name) {
			return &mountopts.Error{Option: name, Err: errors.New("applies to one image; not for dwarfs multi")}
		}
	}
	return nil
}

func multiArgsFrom(r *cli.Result) (*multiArgs, error) {
	a := &multiArgs{Options: mountopts.Defaults(), Foreground: r.Has("foreground")}
	if r.Has("debug") {
		a.Debug, a.Foreground = true, true
	}
	if r.Has("auto-mountpoint") {
		return nil, cli.Usagef("--auto-mountpoint is not for dwarfs multi")
	}
	if len(r.Args) < 2 {
		return nil, cli.Usagef("dwarfs multi needs at least one image and a mount point")
	}
	for _, o := range r.All("options") {
		a.Items = append(a.Items, mountopts.Split(o)...)
	}
	if err := checkMultiOptions(a.Items); err != nil {
		return nil, err
	}
	if err := a.Options.Parse(a.Items); err != nil {
		return nil, err
	}
	if a.Options.DebugLevel == "debug" || a.Options.DebugLevel == "trace" {
		a.Debug = true
	}
	specs, err := parseSpecs(r.Args[:len(r.Args)-1])
	if err != nil {
		return nil, err
	}
	a.Specs = specs
	a.MountPoint = r.Args[len(r.Args)-1]
	if abs, err := filepath.Abs(a.MountPoint); err == nil {
		a.MountPoint = abs
	}
	if a.Options.Verify != "" {
		if abs, err := filepath.Abs(a.Options.Verify); err == nil {
			a.Options.Verify = abs
		}
	}
	return a, nil
}

// escapeOption escapes an -o item so that mountopts.Split gives it back.
func escapeOption(s string) string {
	return strings.NewReplacer(`\`, `\\`, ",", `\,`).Replace(s)
}

// runSubcommand runs dwarfs multi, add, remove or config.
func (c *CLI) runSubcommand(argv []string) int {
	prog := Program()
	r, code, done := prog.Parse(argv[2:], c.Stdout, c.Stderr)
	if done {
		return code
	}
	fail := func(err error) int {
		if IsUsageError(err) {
			err = &cli.UsageError{Msg: err.Error()}
		}
		return prog.Fail(c.Stderr, err)
	}
	sub := argv[1]
	if sub != "multi" {
		if r.Has("options") || r.Has("foreground") || r.Has("debug") || r.Has("auto-mountpoint") {
			return fail(cli.Usagef("dwarfs %s takes no options", sub))
		}
		return c.runClient(sub, r.Args, fail)
	}
	a, err := multiArgsFrom(r)
	if err != nil {
		return fail(err)
	}
	if a.Options.Attach != "" {
		return c.attachMulti(a)
	}
	if fdStr := c.Getenv(daemonEnv); fdStr != "" {
		return c.runMultiDaemonChild(a, fdStr)
	}
	if a.Foreground {
		return c.runMulti(a, nil)
	}
	return c.daemonizeMulti(argv[0], a)
}

// runClient sends an add, remove or config request to the driver.
func (c *CLI) runClient(sub string, args []string, fail func(error) int) int {
	if len(args) == 0 {
		return fail(cli.Usagef("no mount point given"))
	}
	mnt, rest := args[0], args[1:]
	req := control.Request{Op: sub}
	switch sub {
	case "add":
		if len(rest) == 0 {
			return fail(cli.Usagef("no image given"))
		}
		specs, err := parseSpecs(rest)
		if err != nil {
			return fail(err)
		}
		for _, s := range specs {
			req.Images = append(req.Images, s.String())
		}
	case "remove":
		if len(rest) == 0 {
			return fail(cli.Usagef("no image name given"))
		}
		req.Names = rest
	case "config":
		req.Settings = rest
	}
	return c.call(mnt, req)
}

// call sends req to the driver of mnt and prints its answer.
func (c *CLI) call(mnt string, req control.Request) int {
	resp, err := control.Call(c.Getenv, mnt, req)
	if err != nil {
		fmt.Fprintf(c.Stderr, "dwarfs: error: %v\n", err)
		return ExitFail
	}
	fmt.Fprint(c.Stdout, resp.Output)
	if resp.Error != "" {
		fmt.Fprintf(c.Stderr, "dwarfs: error: %s\n", resp.Error)
		return ExitFail
	}
	return ExitOK
}

// attachMulti asks the driver of the attach= mount point to mount the
// images at the mount point too.
func (c *CLI) attachMulti(a *multiArgs) int {
	req := control.Request{Op: "attach", MountPoint: a.MountPoint}
	for _, s := range a.Specs {
		req.Images = append(req.Images, s.String())
	}
	for _, it := range a.Items {
		if name, _, _ := strings.Cut(it, "="); name != "attach" {
			req.Options = append(req.Options, it)
		}
	}
	return c.call(a.Options.Attach, req)
}

// daemonizeMulti starts the driver in the background.
func (c *CLI) daemonizeMulti(argv0 string, a *multiArgs) int {
	exe, err := c.Executable()
	if err != nil {
		fmt.Fprintf(c.Stderr, "dwarfs: cannot find own executable: %v\n", err)
		return ExitFail
	}
	args := []string{"multi"}
	var urls []string
	for _, s := range a.Specs {
		if r := source.Redact(s.Image); r != s.Image {
			// Keep credentials out of the daemon's argv, which every
			// user can read.
			urls = append(urls, s.Image)
			s.Image = r
		}
		args = append(args, s.String())
	}
	args = append(args, a.MountPoint)
	for _, it := range a.Items {
		args = append(args, "-o", escapeOption(it))
	}
	var env []string
	if len(urls) > 0 {
		env = append(env, daemonURLsEnv+"="+strings.Join(urls, "\n"))
	}
	return c.spawnDaemon(exe, argv0, args, env, func() {})
}

func (c *CLI) runMultiDaemonChild(a *multiArgs, fdStr string) int {
	var fd int
	if _, err := fmt.Sscan(fdStr, &fd); err != nil || fd < 3 {
		fmt.Fprintf(c.Stderr, "dwarfs: bad %s=%q\n", daemonEnv, fdStr)
		return ExitFail
	}
	ready := os.NewFile(uintptr(fd), "ready")
	_ = os.Chdir("/")
	_ = os.Unsetenv(daemonEnv)
	if urls := os.Getenv(daemonURLsEnv); urls != "" {
		for _, u := range strings.Split(urls, "\n") {
			for i := range a.Specs {
				if a.Specs[i].Image == source.Redact(u) {
					a.Specs[i].Image = u
				}
			}
		}
	}
	_ = os.Unsetenv(daemonURLsEnv)
	return c.runMulti(a, ready)
}

// multiDriver is a process serving mounts of several images, all on one
// block cache and decode pool.
type multiDriver struct {
	c      *CLI
	sc     *block.SharedCache
	debug  bool
	stderr io.Writer
	ended  chan *multiMount

	mu     sync.Mutex
	mounts []*multiMount
}

// multiMount is one mount point of a multiDriver.
type multiMount struct {
	dir    string
	o      mountopts.Options
	m      *fusefs.Multi
	srv    *fusefs.Server
	ctl    *control.Server
	images map[string]string // name -> image (credentials removed)
}

// runMulti mounts a.Specs at a.MountPoint, reports readiness on ready
// (if non-nil), and serves until every mount of the process has ended or
// a signal ends them.
func (c *CLI) runMulti(a *multiArgs, ready *os.File) int {
	daemon := ready != nil
	st := &startup{c: c, ready: ready, daemon: daemon}
	report, fail := st.report, st.fail
	workers := a.Options.Workers
	for _, s := range a.Specs {
		if source.IsRemote(s.Image) {
			// Cache workers fetch as well as decode.
			workers = max(workers, RemoteOptions(a.Options).Workers)
		}
	}
	capacity := a.Options.CacheSize
	if capacity <= 0 {
		capacity = godwarfs.DefaultCacheSize
	}
	d := &multiDriver{
		c:      c,
		sc:     block.NewSharedCache(block.CacheOptions{Capacity: capacity, Workers: workers}),
		debug:  a.Debug,
		stderr: c.Stderr,
		ended:  make(chan *multiMount, 1),
	}
	// Before mounting: once the mount is visible, a signal must unmount
	// rather than kill the process.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if _, err := d.mount(a.MountPoint, a.Specs, a.Options, a.Items); err != nil {
		return fail(err)
	}
	if err := applyMlock(a.Options.Mlock); err != nil {
		d.unmountAll()
		return fail(err)
	}
	report(nil)
	if daemon {
		c.detachStdio()
		d.mu.Lock()
		d.stderr = c.Stderr
		d.mu.Unlock()
	}
	code := ExitOK
	for {
		select {
		case <-d.ended:
			if d.live() == 0 {
				return code
			}
		case <-sigs:
			if err := d.unmountAll(); err != nil {
				fmt.Fprintf(c.Stderr, "dwarfs: %v\n", err)
				code = ExitFail
			}
			return code
		}
	}
}

// live is how many mounts the process serves.
func (d *multiDriver) live() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.mounts)
}

// unmountAll unmounts every mount of the process.
func (d *multiDriver) unmountAll() error {
	d.mu.Lock()
	all := slices.Clone(d.mounts)
	d.mu.Unlock()
	var errs []error
	for _, mm := range all {
		if err := mm.srv.Unmount(); err != nil {
			errs = append(errs, err)
		}
		mm.ctl.Close()
	}
	return errors.Join(errs...)
}

// openAll opens the images on the shared cache, several at once; on
// error the ones opened are closed again.
func (d *multiDriver) openAll(specs []imageSpec, o mountopts.Options) ([]fusefs.Source, []io.Closer, error) {
	srcs := make([]fusefs.Source, len(specs))
	closers := make([]io.Closer, len(specs))
	errs := make([]error, len(specs))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, s := range specs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			src, cl, err := openImage(s.Image, o, d.sc)
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", s.Name, err)
				return
			}
			srcs[i], closers[i] = src, cl
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, cl := range closers {
			if cl != nil {
				cl.Close()
			}
		}
		return nil, nil, err
	}
	return srcs, closers, nil
}

// mount mounts the images at dir with the -o items, on the process's
// cache, with a control socket.
func (d *multiDriver) mount(dir string, specs []imageSpec, o mountopts.Options, items []string) (*multiMount, error) {
	d.mu.Lock()
	for _, mm := range d.mounts {
		if mm.dir == dir {
			d.mu.Unlock()
			return nil, fmt.Errorf("%s is already mounted by this driver", dir)
		}
	}
	stderr := d.stderr
	d.mu.Unlock()
	srcs, closers, err := d.openAll(specs, o)
	if err != nil {
		return nil, err
	}
	sc := d.sc
	m := fusefs.NewMulti(fusefs.MultiConfig{
		Config: fusefs.Config{
			Options: o.MountOptions, Debug: d.debug, Stderr: stderr,
			FsName: "dwarfs-multi", LimitMemory: true,
		},
		SharedStats: func() fusefs.CacheStats { return fuseCacheStats(sc.Stats()) },
	})
	mm := &multiMount{dir: dir, o: o, m: m, images: map[string]string{}}
	for i, s := range specs {
		if err := m.Add(s.Name, srcs[i], closers[i]); err != nil {
			for _, cl := range closers[i:] {
				cl.Close()
			}
			for _, im := range m.Images() {
				m.Remove(im.Name)
			}
			return nil, err
		}
		mm.images[s.Name] = source.Redact(s.Image)
	}
	srv, err := m.Mount(dir)
	if err != nil {
		for _, im := range m.Images() {
			m.Remove(im.Name)
		}
		return nil, err
	}
	mm.srv = srv
	path, err := control.SocketPath(control.Dir(d.c.Getenv), dir)
	if err == nil {
		mm.ctl, err = control.Listen(path, func(req control.Request) (string, error) { return d.handle(mm, req) })
	}
	if err != nil {
		srv.Unmount()
		return nil, err
	}
	m.SetControl(path)
	d.mu.Lock()
	d.mounts = append(d.mounts, mm)
	d.mu.Unlock()
	go func() {
		<-srv.Done()
		mm.ctl.Close()
		d.mu.Lock()
		d.mounts = slices.DeleteFunc(d.mounts, func(x *multiMount) bool { return x == mm })
		d.mu.Unlock()
		d.ended <- mm
	}()
	return mm, nil
}

func fuseCacheStats(st block.CacheStats) fusefs.CacheStats {
	return fusefs.CacheStats{
		Hits: st.Hits, Misses: st.Misses, Decoded: st.Decoded, DecodedBytes: st.DecodedBytes,
		Evictions: st.Evictions, CurrentBytes: st.CurrentBytes, PeakBytes: st.PeakBytes, Capacity: st.Capacity,
		LoadingBytes: st.LoadingBytes, PinnedBytes: st.PinnedBytes, Overcommits: st.Overcommits,
		Reused: st.Reused, Spent: st.Spent,
	}
}

// handle answers a control request for the mount mm.
func (d *multiDriver) handle(mm *multiMount, req control.Request) (string, error) {
	switch req.Op {
	case "add":
		return d.add(mm, req.Images)
	case "remove":
		return d.remove(mm, req.Names)
	case "config":
		return d.config(mm, req.Settings)
	case "attach":
		return d.attach(req)
	}
	return "", fmt.Errorf("unknown request %q", req.Op)
}

// specsOf parses the image arguments of a request.
func specsOf(args []string) ([]imageSpec, error) {
	var out []imageSpec
	for _, a := range args {
		s, err := parseSpec(a)
		if err != nil {
			return nil, err
		}
		if !source.IsRemote(s.Image) && !filepath.IsAbs(s.Image) {
			return nil, fmt.Errorf("%s: the driver needs an absolute path", a)
		}
		out = append(out, s)
	}
	return out, nil
}

func (d *multiDriver) add(mm *multiMount, args []string) (string, error) {
	specs, err := specsOf(args)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	var errs []error
	for _, s := range specs {
		src, cl, err := openImage(s.Image, mm.o, d.sc)
		if err == nil {
			if err = mm.m.Add(s.Name, src, cl); err != nil {
				cl.Close()
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
			continue
		}
		d.mu.Lock()
		mm.images[s.Name] = source.Redact(s.Image)
		d.mu.Unlock()
		fmt.Fprintf(&b, "added %s: %s\n", s.Name, source.Redact(s.Image))
	}
	return b.String(), errors.Join(errs...)
}

func (d *multiDriver) remove(mm *multiMount, names []string) (string, error) {
	var b strings.Builder
	var errs []error
	for _, n := range names {
		open, _, err := mm.m.Remove(n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d.mu.Lock()
		delete(mm.images, n)
		d.mu.Unlock()
		if open > 0 {
			fmt.Fprintf(&b, "removed %s (%d files or directories of it still open: it is closed when they are)\n", n, open)
		} else {
			fmt.Fprintf(&b, "removed %s\n", n)
		}
	}
	return b.String(), errors.Join(errs...)
}

// liveSettings are the options config can change while mounted.
var liveSettings = []string{"cachesize"}

func (d *multiDriver) config(mm *multiMount, settings []string) (string, error) {
	for _, s := range settings {
		name, val, _ := strings.Cut(s, "=")
		switch name {
		case "cachesize":
			n, err := cli.ParseSize(val)
			if err != nil || n <= 0 {
				return "", fmt.Errorf("cachesize=%s: not a size", val)
			}
			d.sc.SetCapacity(n)
		default:
			var o mountopts.Options
			if err := o.Parse([]string{s}); err != nil {
				return "", err
			}
			return "", fmt.Errorf("%s cannot be changed while mounted (only %s can)", name, strings.Join(liveSettings, ", "))
		}
	}
	st := d.sc.Stats()
	var b strings.Builder
	fmt.Fprintf(&b, "driver pid: %d\n", os.Getpid())
	fmt.Fprintf(&b, "cachesize: %d (in use %d, peak %d; shared by all images and mounts of the driver)\n", st.Capacity, st.CurrentBytes, st.PeakBytes)
	fmt.Fprintf(&b, "workers: %d\n", d.sc.Workers())
	d.mu.Lock()
	mounts := slices.Clone(d.mounts)
	d.mu.Unlock()
	for _, x := range mounts {
		fmt.Fprintf(&b, "mount %s:\n", x.dir)
		fmt.Fprintf(&b, "  control socket: %s\n", x.ctl.Path())
		for _, im := range x.m.Images() {
			d.mu.Lock()
			img := x.images[im.Name]
			d.mu.Unlock()
			cs := im.Source.CacheStats()
			state := ""
			if im.Detached {
				state = ", removed (closed when its open files are)"
			}
			fmt.Fprintf(&b, "  %s: %s (%d open, %d bytes cached%s)\n", im.Name, img, im.Open, cs.CurrentBytes, state)
		}
	}
	return b.String(), nil
}

// attach mounts more images at another mount point, served by this
// process on its cache.
func (d *multiDriver) attach(req control.Request) (string, error) {
	if !filepath.IsAbs(req.MountPoint) {
		return "", fmt.Errorf("attach: the mount point %s is not an absolute path", req.MountPoint)
	}
	o := mountopts.Defaults()
	if err := checkMultiOptions(req.Options); err != nil {
		return "", err
	}
	for _, it := range req.Options {
		if name, _, _ := strings.Cut(it, "="); name == "cachesize" || name == "workers" {
			return "", fmt.Errorf("attach: %s is the driver's, shared by its mounts (change cachesize with dwarfs config)", name)
		}
	}
	if err := o.Parse(req.Options); err != nil {
		return "", err
	}
	specs, err := specsOf(req.Images)
	if err != nil {
		return "", err
	}
	if len(specs) == 0 {
		return "", errors.New("attach: no image given")
	}
	if _, err := d.mount(req.MountPoint, specs, o, req.Options); err != nil {
		return "", err
	}
	return fmt.Sprintf("mounted %d images at %s (driver pid %d)\n", len(specs), req.MountPoint, os.Getpid()), nil
}

//go:build !windows && !(linux && (386 || arm))

package dwarfs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/mountopts"
	"github.com/godwarfs/godwarfs/source"
	"golang.org/x/sys/unix"
)

// Exit codes of the dwarfs command (those of every tool; see package cli).
const (
	ExitOK   = cli.ExitOK
	ExitFail = cli.ExitError // a bad command line or option, or mounting failed
)

// daemonEnv marks the re-executed background child; its value is the
// number of the inherited readiness pipe fd.
const daemonEnv = "GODWARFS_DWARFS_DAEMON_FD"

// daemonAutoEnv tells the background child that the --auto-mountpoint
// directory was created for this mount, so it removes it at unmount.
const daemonAutoEnv = "GODWARFS_DWARFS_AUTO_MOUNTPOINT"

// daemonURLEnv hands an image URL that carries credentials to the
// background child.
const daemonURLEnv = "GODWARFS_DWARFS_IMAGE_URL"

// Opener opens an image for mounting according to the options.
type Opener func(image string, o mountopts.Options) (fusefs.Source, io.Closer, error)

// CLI is the dwarfs command line front end.
type CLI struct {
	Open   Opener // OpenImage if nil
	Stdout io.Writer
	Stderr io.Writer
	// Getenv and Executable default to os.Getenv and os.Executable.
	Getenv     func(string) string
	Executable func() (string, error)
}

// Args is a parsed command line.
type Args struct {
	Image, MountPoint string
	Options           mountopts.Options
	Foreground        bool
	Debug             bool
	Fake              bool // mount(8) -f: do everything but mount
	Help, Version     bool
	// AutoMountPoint: mount on IMAGE without its extension
	// (--auto-mountpoint); removeMountPoint: that directory was
	// created for this mount and goes when it ends.
	AutoMountPoint   bool
	removeMountPoint bool
	helper           bool
}

// ParseArgs parses argv (including argv[0]). Invoked as mount.dwarfs or
// mount.fuse.dwarfs it follows the mount(8) helper convention
// "SPEC DIR [-sfnv] [-o OPTS]".
func ParseArgs(argv []string) (*Args, error) {
	r, err := cli.Parse(Program().AllOptions(), argv[min(1, len(argv)):])
	if err != nil {
		return nil, err
	}
	name := ""
	if len(argv) > 0 {
		name = argv[0]
	}
	return argsFrom(name, r)
}

// argsFrom interprets the parsed command line of the program named argv0.
func argsFrom(argv0 string, r *cli.Result) (*Args, error) {
	a := &Args{Options: mountopts.Defaults(), helper: isHelper(argv0)}
	a.Help, a.Version = r.Has("help"), r.Has("version")
	if a.Help || a.Version || r.Has("man") {
		return a, nil
	}
	if r.Has("foreground") {
		// mount(8) passes -f for a fake mount.
		a.Fake = a.helper
		a.Foreground = !a.helper
	}
	if r.Has("debug") {
		a.Debug, a.Foreground = true, true
	}
	var opts []string
	for _, o := range r.All("options") {
		opts = append(opts, mountopts.Split(o)...)
	}
	a.AutoMountPoint = r.Has("auto-mountpoint") && !a.helper
	switch {
	case len(r.Args) == 0:
		return nil, cli.Usagef("no image given")
	case len(r.Args) == 1 && !a.AutoMountPoint:
		return nil, cli.Usagef("no mount point given")
	case len(r.Args) == 2 && a.AutoMountPoint:
		return nil, cli.Usagef("cannot combine <mountpoint> with --auto-mountpoint")
	case len(r.Args) > 2:
		return nil, cli.Unexpected(r.Args[2])
	}
	a.Image = r.Args[0]
	if a.AutoMountPoint {
		mp, err := autoMountPoint(a.Image)
		if err != nil {
			return nil, err
		}
		a.MountPoint = mp
	} else {
		a.MountPoint = r.Args[1]
	}
	if a.helper {
		// Old-style fstab entries name the source "dwarfs#IMAGE".
		a.Image = strings.TrimPrefix(a.Image, "dwarfs#")
	}
	if err := a.Options.Parse(opts); err != nil {
		return nil, err
	}
	if a.Options.Attach != "" {
		return nil, &mountopts.Error{Option: "attach", Err: errors.New("is an option of dwarfs multi")}
	}
	// The daemon changes to "/" before it opens these files.
	for _, f := range []*string{&a.Options.AnalysisFile, &a.Options.Verify, &a.Options.Signature, &a.Options.Upper, &a.Options.Work} {
		if *f != "" && !source.IsRemote(*f) {
			if abs, err := filepath.Abs(*f); err == nil {
				*f = abs
			}
		}
	}
	if a.Options.DebugLevel == "debug" || a.Options.DebugLevel == "trace" {
		a.Debug = true
	}
	return a, nil
}

// isHelper reports whether argv0 names the mount(8) helper.
func isHelper(argv0 string) bool {
	switch filepath.Base(argv0) {
	case "mount.dwarfs", "mount.fuse.dwarfs", "mount.fuse3.dwarfs":
		return true
	}
	return false
}

// autoMountPoint is the --auto-mountpoint directory for image: its path
// without the extension ("fs.dwarfs" mounts on "fs").
func autoMountPoint(image string) (string, error) {
	if source.IsRemote(image) {
		return "", cli.Usagef("--auto-mountpoint needs an image file, not a URL")
	}
	ext := filepath.Ext(image)
	if ext == "" || ext == filepath.Base(image) {
		return "", cli.Usagef("cannot select mountpoint directory for file with no extension: %s", image)
	}
	return strings.TrimSuffix(image, ext), nil
}

// prepareAutoMountPoint makes sure dir is an empty directory, creating
// it if it does not exist; created says whether it did.
func prepareAutoMountPoint(dir string) (created bool, err error) {
	fi, err := os.Stat(dir)
	if err == nil {
		if fi.IsDir() {
			if ents, err := os.ReadDir(dir); err == nil && len(ents) == 0 {
				return false, nil
			}
		}
		return false, fmt.Errorf("cannot find a suitable empty mountpoint directory: %s exists and is not an empty directory", dir)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("mount point: %w", err)
	}
	if err := os.Mkdir(dir, 0o777); err != nil {
		return false, fmt.Errorf("unable to create mountpoint directory: %w", err)
	}
	return true, nil
}

// Run runs the command and returns its exit code.
func (c *CLI) Run(argv []string) int {
	if c.Stdout == nil {
		c.Stdout = os.Stdout
	}
	if c.Stderr == nil {
		c.Stderr = os.Stderr
	}
	if c.Getenv == nil {
		c.Getenv = os.Getenv
	}
	if c.Executable == nil {
		c.Executable = os.Executable
	}
	if len(argv) > 1 && subcommands[argv[1]] && !isHelper(argv[0]) {
		return c.runSubcommand(argv)
	}
	prog := Program()
	r, code, done := prog.Parse(argv[min(1, len(argv)):], c.Stdout, c.Stderr)
	if done {
		return code
	}
	name := ""
	if len(argv) > 0 {
		name = argv[0]
	}
	a, err := argsFrom(name, r)
	if err != nil {
		if IsUsageError(err) {
			err = &cli.UsageError{Msg: err.Error()}
		}
		return prog.Fail(c.Stderr, err)
	}
	if a.Fake {
		return ExitOK
	}
	if fdStr := c.Getenv(daemonEnv); fdStr != "" {
		a.removeMountPoint = a.AutoMountPoint && c.Getenv(daemonAutoEnv) == "1"
		return c.runDaemonChild(a, fdStr)
	}
	if a.AutoMountPoint {
		created, err := prepareAutoMountPoint(a.MountPoint)
		if err != nil {
			fmt.Fprintf(c.Stderr, "dwarfs: error: %v\n", err)
			return ExitFail
		}
		a.removeMountPoint = created
	}
	if a.Foreground {
		return c.runForeground(a, nil)
	}
	return c.daemonize(argv, a)
}

// daemonize re-executes the binary in the background and waits until the
// child reports that the mount is ready (or why it failed).
func (c *CLI) daemonize(argv []string, a *Args) int {
	exe, err := c.Executable()
	if err != nil {
		fmt.Fprintf(c.Stderr, "dwarfs: cannot find own executable: %v\n", err)
		return ExitFail
	}
	// The child changes to "/", so hand it absolute paths.
	args := append([]string(nil), argv[1:]...)
	var env []string
	for i, s := range args {
		if s == a.Image && source.IsRemote(s) {
			if r := source.Redact(s); r != s {
				// Keep credentials in a URL out of the daemon's argv,
				// which every user can read.
				args[i] = r
				env = append(env, daemonURLEnv+"="+s)
			}
			continue
		}
		if s == a.Image || s == a.MountPoint {
			if abs, err := filepath.Abs(s); err == nil {
				args[i] = abs
			}
		}
	}
	if a.removeMountPoint {
		env = append(env, daemonAutoEnv+"=1")
	}
	return c.spawnDaemon(exe, argv[0], args, env, func() {
		if a.removeMountPoint {
			_ = os.Remove(a.MountPoint)
		}
	})
}

// spawnDaemon starts exe with args (argv[0] set to argv0) and env added
// to ours in the background and waits until the child reports that the
// mount is ready (or why it failed, after which cleanup runs).
func (c *CLI) spawnDaemon(exe, argv0 string, args, env []string, cleanup func()) int {
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(c.Stderr, "dwarfs: %v\n", err)
		return ExitFail
	}
	defer r.Close()
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintf(c.Stderr, "dwarfs: %v\n", err)
		return ExitFail
	}
	defer devnull.Close()
	cmd := exec.Command(exe, args...)
	cmd.Args[0] = argv0
	cmd.Env = append(append(os.Environ(), env...), daemonEnv+"=3")
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	if f, ok := c.Stderr.(*os.File); ok {
		// Until it is ready the child shares our stderr, so messages
		// from helpers such as fusermount3 reach the user; it detaches
		// from it once mounted.
		cmd.Stderr = f
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		fmt.Fprintf(c.Stderr, "dwarfs: starting daemon: %v\n", err)
		return ExitFail
	}
	w.Close()
	line, _ := bufio.NewReader(r).ReadString('\n')
	line = strings.TrimSpace(line)
	if line == "ok" {
		_ = cmd.Process.Release()
		return ExitOK
	}
	werr := cmd.Wait()
	cleanup()
	msg := strings.TrimPrefix(line, "error: ")
	if msg == "" {
		msg = fmt.Sprintf("daemon exited before the mount was ready: %v", werr)
	}
	fmt.Fprintf(c.Stderr, "dwarfs: error: %s\n", msg)
	return ExitFail
}

func (c *CLI) runDaemonChild(a *Args, fdStr string) int {
	var fd int
	if _, err := fmt.Sscan(fdStr, &fd); err != nil || fd < 3 {
		fmt.Fprintf(c.Stderr, "dwarfs: bad %s=%q\n", daemonEnv, fdStr)
		return ExitFail
	}
	ready := os.NewFile(uintptr(fd), "ready")
	_ = os.Chdir("/")
	// Keep the marker out of anything we might exec later.
	_ = os.Unsetenv(daemonEnv)
	if u := os.Getenv(daemonURLEnv); u != "" && source.Redact(u) == a.Image {
		a.Image = u
	}
	_ = os.Unsetenv(daemonURLEnv)
	_ = os.Unsetenv(daemonAutoEnv)
	return c.runForeground(a, ready)
}

// startup reports how a driver's start went: on standard error, or, for a
// daemon, on the pipe its parent waits on (ready), as one line, "ok" or
// "error: ...", after which the pipe is closed. The parent prints the
// error.
type startup struct {
	c      *CLI
	ready  *os.File // nil: not a daemon, or already reported
	daemon bool
}

func (s *startup) report(err error) {
	if s.ready == nil {
		return
	}
	if err != nil {
		fmt.Fprintf(s.ready, "error: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
	} else {
		fmt.Fprint(s.ready, "ok\n")
	}
	s.ready.Close()
	s.ready = nil
}

// fail reports err and returns the exit code.
func (s *startup) fail(err error) int {
	if !s.daemon {
		fmt.Fprintf(s.c.Stderr, "dwarfs: error: %v\n", err)
	}
	s.report(err)
	return ExitFail
}

// runForeground mounts, reports readiness on ready (if non-nil), and
// serves until unmounted or signalled.
func (c *CLI) runForeground(a *Args, ready *os.File) int {
	daemon := ready != nil
	if a.removeMountPoint {
		defer func() {
			if err := os.Remove(a.MountPoint); err != nil && !errors.Is(err, fs.ErrNotExist) {
				fmt.Fprintf(c.Stderr, "dwarfs: failed to remove mount point %s: %v\n", a.MountPoint, err)
			}
		}()
	}
	st := &startup{c: c, ready: ready, daemon: daemon}
	report, fail := st.report, st.fail
	open := c.Open
	if open == nil {
		open = OpenImage
	}
	src, closer, err := open(a.Image, a.Options)
	if err != nil {
		return fail(err)
	}
	defer closer.Close()
	// After opening, so a cache_image copy is locked too.
	if err := applyMlock(a.Options.Mlock); err != nil {
		return fail(err)
	}
	fsname := source.Redact(a.Image)
	if source.IsRemote(fsname) {
		// /proc/mounts splits on commas and spaces; keep the URL whole.
		fsname = strings.NewReplacer(",", "%2C", " ", "%20").Replace(fsname)
	} else if abs, err := filepath.Abs(fsname); err == nil {
		fsname = abs
	}
	// Before mounting: once the mount is visible, a signal must unmount
	// rather than kill the process.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	dopts := a.Options.MountOptions
	if a.Options.AnalysisFile != "" {
		// Written line by line as files are first opened, so the list
		// is complete up to the moment the mount goes away, however
		// that happens.
		f, err := os.Create(a.Options.AnalysisFile)
		if err != nil {
			return fail(fmt.Errorf("analysis_file: %w", err))
		}
		defer f.Close()
		dopts.Analysis = f
	}
	mnt := a.MountPoint
	var ov *overlay
	if a.Options.Upper != "" {
		// Writable: the image goes on a private mount, the overlay on
		// the mount point.
		if ov, err = newOverlay(a.MountPoint, a.Options.Upper, a.Options.Work); err != nil {
			return fail(err)
		}
		mnt = ov.lower
	}
	srv, err := fusefs.Mount(mnt, src, fusefs.Config{Options: dopts, Debug: a.Debug, Stderr: c.Stderr, FsName: fsname, LimitMemory: true})
	if err != nil {
		if ov != nil {
			ov.cleanup()
		}
		return fail(err)
	}
	if ov != nil {
		if err := ov.mount(); err != nil {
			_ = srv.Unmount()
			ov.cleanup()
			return fail(err)
		}
	}
	report(nil)
	if daemon {
		c.detachStdio()
	}

	select {
	case <-srv.Done():
	case <-sigs:
		if ov != nil {
			// The image's mount goes with the overlay's.
			if err := ov.unmount(); err != nil {
				fmt.Fprintf(c.Stderr, "dwarfs: %v\n", err)
				return ExitFail
			}
			<-srv.Done()
			return ExitOK
		}
		if err := srv.Unmount(); err != nil {
			fmt.Fprintf(c.Stderr, "dwarfs: %v\n", err)
			return ExitFail
		}
	}
	return ExitOK
}

// detachStdio points fds 0-2 at /dev/null so the daemon holds no terminal
// or pipe of the process that started it.
func (c *CLI) detachStdio() {
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer devnull.Close()
	for fd := 0; fd <= 2; fd++ {
		_ = unix.Dup2(int(devnull.Fd()), fd)
	}
	c.Stderr = io.Discard
}

// IsUsageError reports whether err is a command line or option error.
func IsUsageError(err error) bool {
	var oe *mountopts.Error
	return cli.IsUsage(err) || errors.As(err, &oe)
}

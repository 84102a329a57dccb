package fusefs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/godwarfs/godwarfs/internal/mountopts"
	"golang.org/x/sys/unix"
)

// Exit codes of the dwarfs command.
const (
	ExitOK    = 0
	ExitFail  = 1 // mounting failed
	ExitUsage = 2 // bad command line or option
)

// daemonEnv marks the re-executed background child; its value is the
// number of the inherited readiness pipe fd.
const daemonEnv = "GODWARFS_DWARFS_DAEMON_FD"

// Opener opens an image for mounting according to the options.
type Opener func(image string, o mountopts.Options) (Source, io.Closer, error)

// CLI is the dwarfs command line front end.
type CLI struct {
	Open   Opener
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
	helper            bool
}

// usageError is a command line problem (exit code 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// ParseArgs parses argv (including argv[0]). Invoked as mount.dwarfs or
// mount.fuse.dwarfs it follows the mount(8) helper convention
// "SPEC DIR [-sfnv] [-o OPTS]".
func ParseArgs(argv []string) (*Args, error) {
	a := &Args{Options: mountopts.Defaults()}
	if len(argv) > 0 {
		switch filepath.Base(argv[0]) {
		case "mount.dwarfs", "mount.fuse.dwarfs", "mount.fuse3.dwarfs":
			a.helper = true
		}
	}
	var pos []string
	var opts []string
	args := argv[min(1, len(argv)):]
	for i := 0; i < len(args); i++ {
		s := args[i]
		switch {
		case s == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case s == "-o":
			if i+1 >= len(args) {
				return nil, &usageError{"option -o needs an argument"}
			}
			i++
			opts = append(opts, mountopts.Split(args[i])...)
		case strings.HasPrefix(s, "-o"):
			opts = append(opts, mountopts.Split(s[2:])...)
		case s == "-h" || s == "--help":
			a.Help = true
		case s == "-V" || s == "--version":
			a.Version = true
		case len(s) > 1 && s[0] == '-' && s[1] != '-':
			for _, c := range s[1:] {
				switch {
				case c == 'f' && a.helper:
					a.Fake = true
				case c == 'f':
					a.Foreground = true
				case c == 'd':
					a.Debug, a.Foreground = true, true
				case c == 's', c == 'n', c == 'v':
					// single-threaded / no-mtab / verbose: nothing to do
				default:
					return nil, &usageError{fmt.Sprintf("unknown command line option -%c", c)}
				}
			}
		case strings.HasPrefix(s, "--"):
			return nil, &usageError{fmt.Sprintf("unknown command line option %s", s)}
		default:
			pos = append(pos, s)
		}
	}
	if a.Help || a.Version {
		return a, nil
	}
	if len(pos) != 2 {
		return nil, &usageError{"expected IMAGE and MOUNTPOINT"}
	}
	a.Image, a.MountPoint = pos[0], pos[1]
	if a.helper {
		// Old-style fstab entries name the source "dwarfs#IMAGE".
		a.Image = strings.TrimPrefix(a.Image, "dwarfs#")
	}
	if err := a.Options.Parse(opts); err != nil {
		return nil, err
	}
	if a.Options.DebugLevel == "debug" || a.Options.DebugLevel == "trace" {
		a.Debug = true
	}
	return a, nil
}

const usageText = `usage: dwarfs IMAGE MOUNTPOINT [-f] [-d] [-o OPTION[,OPTION...]]
       mount.dwarfs IMAGE MOUNTPOINT [-sfnv] [-o OPTIONS]

  -f                     stay in the foreground
  -d                     foreground with FUSE debug output
  -o cachesize=SIZE      block cache size (512m)
  -o blocksize=SIZE      st_blksize / I/O size hint (512k)
  -o readahead=SIZE      bytes to prefetch for sequential readers (one block)
  -o workers=N           decompression workers (2)
  -o mlock=none|try|must lock memory
  -o decratio=R          ratio to keep partially decompressed blocks (0.8)
  -o offset=auto|N       image offset in file (auto)
  -o imagesize=SIZE      image size in file
  -o enable_nlink        report hard link counts
  -o readonly            read-only mount (always the case)
  -o (no_)cache_image    read the whole image into memory (no)
  -o (no_)cache_files    keep file data in the page cache (yes)
  -o tidy_strategy=none|time|swap, tidy_interval=TIME (5m), tidy_max_age=TIME (10m)
  -o seq_detector=N      sequential reads before prefetching (4)
  -o uid=N,gid=N         override owner and group
  -o preload_category=NAME, preload_all
  -o perfmon             print performance statistics at unmount
  -o allow_other,allow_root,default_permissions,fsname=NAME,subtype=NAME
`

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
	a, err := ParseArgs(argv)
	if err != nil {
		fmt.Fprintf(c.Stderr, "dwarfs: %v\n", err)
		fmt.Fprint(c.Stderr, "try 'dwarfs --help'\n")
		return ExitUsage
	}
	if a.Help {
		fmt.Fprint(c.Stdout, usageText)
		return ExitOK
	}
	if a.Version {
		fmt.Fprintln(c.Stdout, "dwarfs (godwarfs FUSE driver)")
		return ExitOK
	}
	if a.Fake {
		return ExitOK
	}
	if fdStr := c.Getenv(daemonEnv); fdStr != "" {
		return c.runDaemonChild(a, fdStr)
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
	for i, s := range args {
		if s == a.Image || s == a.MountPoint {
			if abs, err := filepath.Abs(s); err == nil {
				args[i] = abs
			}
		}
	}
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
	cmd.Args[0] = argv[0]
	cmd.Env = append(os.Environ(), daemonEnv+"=3")
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
	msg := strings.TrimPrefix(line, "error: ")
	if msg == "" {
		msg = fmt.Sprintf("daemon exited before the mount was ready: %v", werr)
	}
	fmt.Fprintf(c.Stderr, "dwarfs: %s\n", msg)
	code := ExitFail
	if ee, ok := werr.(*exec.ExitError); ok && ee.ExitCode() == ExitUsage {
		code = ExitUsage
	}
	return code
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
	return c.runForeground(a, ready)
}

// runForeground mounts, reports readiness on ready (if non-nil), and
// serves until unmounted or signalled.
func (c *CLI) runForeground(a *Args, ready *os.File) int {
	daemon := ready != nil
	report := func(err error) {
		if ready == nil {
			return
		}
		if err != nil {
			fmt.Fprintf(ready, "error: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		} else {
			fmt.Fprint(ready, "ok\n")
		}
		ready.Close()
		ready = nil
	}
	fail := func(err error) int {
		if !daemon {
			fmt.Fprintf(c.Stderr, "dwarfs: %v\n", err)
		}
		report(err) // the parent prints it
		return ExitFail
	}
	src, closer, err := c.Open(a.Image, a.Options)
	if err != nil {
		return fail(err)
	}
	defer closer.Close()
	// After opening, so a cache_image copy is locked too.
	if err := applyMlock(a.Options.Mlock); err != nil {
		return fail(err)
	}
	fsname := a.Image
	if abs, err := filepath.Abs(fsname); err == nil {
		fsname = abs
	}
	srv, err := Mount(a.MountPoint, src, Config{Options: a.Options, Debug: a.Debug, Stderr: c.Stderr, FsName: fsname})
	if err != nil {
		return fail(err)
	}
	report(nil)
	if daemon {
		c.detachStdio()
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	select {
	case <-srv.Done():
	case <-sigs:
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

// applyMlock locks the process memory. MCL_FUTURE is only used when the
// lock limit cannot be hit: with a finite RLIMIT_MEMLOCK it would make
// later Go heap growth fail fatally instead of returning an error.
func applyMlock(m mountopts.MlockMode) error {
	if m == mountopts.MlockNone || m == "" {
		return nil
	}
	flags := unix.MCL_CURRENT
	var rl unix.Rlimit
	if os.Geteuid() == 0 || (unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl) == nil && rl.Cur == unix.RLIM_INFINITY) {
		// ONFAULT: lock pages as they are touched instead of populating
		// every reserved heap arena up front.
		flags |= unix.MCL_FUTURE | unix.MCL_ONFAULT
	}
	err := unix.Mlockall(flags)
	if err != nil && m == mountopts.MlockMust {
		return fmt.Errorf("mlock=must: %w", err)
	}
	return nil
}

// IsUsageError reports whether err is a command line or option error.
func IsUsageError(err error) bool {
	var ue *usageError
	var oe *mountopts.Error
	return errors.As(err, &ue) || errors.As(err, &oe)
}

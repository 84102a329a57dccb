//go:build linux && !386 && !arm

// Package apprun is the runtime of self-mounting executables
// (cmd/dwarfs-run): an ELF program with a DwarFS image appended to it,
// as mkdwarfs --runtime writes them. Run, it mounts the image on a
// private mount point, runs the entry program in it (AppRun, or the
// one mkdwarfs --entry recorded) with the arguments, and unmounts when
// the program exits. Without FUSE it extracts the image to a cache
// directory and runs the program from there.
//
// It links only local reading: the root package, fusefs, block and
// metadata, so that every packed application carries a small copy.
package apprun

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/glob"
	"github.com/godwarfs/godwarfs/internal/version"
)

// Exit statuses of the runtime itself; otherwise it exits with the
// entry's status.
const (
	exitError = 1
	// exitBadImage: the appended image is missing, truncated or corrupt,
	// or the entry cannot be started (as a shell's "command not found").
	exitBadImage = 127
	// exitNoExec: the entry exists but cannot be executed.
	exitNoExec = 126
)

// ExtractEnv forces running from an extracted copy (value 1).
const ExtractEnv = "DWARFS_RUN_EXTRACT"

// ExtractDir is where --appimage-extract writes, in the current
// directory: the name AppImage's runtime uses, which scripts expect.
const ExtractDir = "squashfs-root"

// selfPath is the runtime's own file.
const selfPath = "/proc/self/exe"

const help = `Usage: %[1]s [ARGS...]
Runs the application packed into this file with ARGS.

Options, taken only as the first argument (everything else goes to the
application):
  --appimage-extract [PATTERN]  extract the files (matching PATTERN: * and ?
                                stay in a directory, ** crosses them) to
                                ./` + ExtractDir + `
  --appimage-mount              mount the image, print the mount point and
                                wait until interrupted
  --appimage-offset             print where the image starts in this file
  --appimage-help               show this help
  --appimage-version            show the runtime's version

The application runs with APPDIR (the mounted tree), APPIMAGE (this file),
ARGV0 (how it was called) and OWD (the working directory) set. Without FUSE
(no /dev/fuse or fusermount3), or with ` + ExtractEnv + `=1, the image is
extracted to $XDG_CACHE_HOME/dwarfs-run/DIGEST (default ~/.cache) once, and
the application runs from there.
`

// Main runs the runtime with args (os.Args) and returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	argv0 := "dwarfs-run"
	if len(args) > 0 {
		argv0, args = args[0], args[1:]
	}
	self, err := os.Executable()
	if err != nil {
		self = selfPath
	}
	switch {
	case argv0 == launchArg0 && len(args) > 0:
		return launch(self, args[0], args[1:], stderr)
	case argv0 == guardArg0 && len(args) == 2:
		return guardMain(args[0], args[1])
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "dwarfs-run: %v\n", err)
		var bad *badImageError
		if errors.As(err, &bad) {
			return exitBadImage
		}
		return exitError
	}
	var opt string
	if len(args) > 0 && strings.HasPrefix(args[0], "--appimage-") {
		opt = args[0]
	}
	switch opt {
	case "":
	case "--appimage-help":
		fmt.Fprintf(stdout, help, filepath.Base(argv0))
		return 0
	case "--appimage-version":
		fmt.Fprintln(stdout, version.Get().Text("dwarfs-run"))
		return 0
	case "--appimage-offset":
		a, err := openApp(selfPath, self)
		if err != nil {
			return fail(err)
		}
		a.Close()
		fmt.Fprintln(stdout, a.offset)
		return 0
	case "--appimage-extract":
		if len(args) > 2 {
			return fail(fmt.Errorf("--appimage-extract takes at most one pattern, got %d", len(args)-1))
		}
		var pattern string
		if len(args) == 2 {
			pattern = args[1]
		}
		if err := extractHere(self, pattern, stdout); err != nil {
			return fail(err)
		}
		return 0
	case "--appimage-mount":
		if err := mountAndWait(self, stdout); err != nil {
			return fail(err)
		}
		return 0
	default:
		return fail(fmt.Errorf("unknown option %s (see --appimage-help)", opt))
	}
	code, err := run(self, argv0, args, stderr)
	if err != nil {
		return fail(err)
	}
	return code
}

// open opens the runtime's image and finds its entry.
func open(self string) (*appFile, *godwarfs.Image, string, error) {
	a, err := openApp(selfPath, self)
	if err != nil {
		return nil, nil, "", err
	}
	im, err := a.image()
	if err != nil {
		a.Close()
		return nil, nil, "", err
	}
	bi, err := a.sections()
	if err == nil {
		var e string
		if e, err = entry(bi); err == nil {
			return a, im, e, nil
		}
		err = a.bad(err)
	}
	im.Close()
	a.Close()
	return nil, nil, "", err
}

// run runs the entry with args from the mounted image, or from an
// extracted copy where FUSE is not available.
func run(self, argv0 string, args []string, stderr io.Writer) (int, error) {
	a, im, ent, err := open(self)
	if err != nil {
		return 0, err
	}
	defer a.Close()
	defer im.Close()
	var why error
	if os.Getenv(ExtractEnv) == "1" {
		why = fmt.Errorf("%s=1", ExtractEnv)
	} else if why = fuseUsable(); why == nil {
		m, err := mount(im, self)
		if err == nil {
			code, err := runEntry(m.dir, ent, self, argv0, args)
			if uerr := m.close(); err == nil && uerr != nil {
				fmt.Fprintf(stderr, "dwarfs-run: %v\n", uerr)
			}
			return code, err
		}
		why = err
	}
	if os.Getenv("DWARFS_RUN_DEBUG") != "" {
		fmt.Fprintf(stderr, "dwarfs-run: not mounting (%v): running from an extracted copy\n", why)
	}
	dir, err := cached(a, im)
	if err != nil {
		return 0, err
	}
	return runEntry(dir, ent, self, argv0, args)
}

// extractHere is --appimage-extract: the files matching pattern (all if
// it is empty) go to ./squashfs-root, and their paths to list.
func extractHere(self, pattern string, list io.Writer) error {
	a, err := openApp(selfPath, self)
	if err != nil {
		return err
	}
	defer a.Close()
	im, err := a.image()
	if err != nil {
		return err
	}
	defer im.Close()
	var match func(string) bool
	if pattern != "" {
		p, err := glob.Compile(pattern)
		if err != nil {
			return fmt.Errorf("pattern %q: %w", pattern, err)
		}
		match = p.Match
	}
	if err := extract(im, ExtractDir, match, list); err != nil {
		return fmt.Errorf("%s: %w", self, err)
	}
	return nil
}

// mountAndWait is --appimage-mount: mount, print the mount point and
// keep serving until SIGINT, SIGTERM or SIGHUP.
func mountAndWait(self string, stdout io.Writer) error {
	a, err := openApp(selfPath, self)
	if err != nil {
		return err
	}
	defer a.Close()
	im, err := a.image()
	if err != nil {
		return err
	}
	defer im.Close()
	if err := fuseUsable(); err != nil {
		return err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	m, err := mount(im, self)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, m.dir)
	select {
	case <-sigs:
	case <-m.srv.Done(): // unmounted from outside
	}
	return m.close()
}

//go:build linux && !386 && !arm

package apprun

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// forwarded are the signals passed on to the entry.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// runEntry runs the entry ent of the tree at appdir with args, with the
// environment AppImage's runtime sets, and returns its exit status: its
// exit code, or 128 plus the signal that killed it, as shells report it.
func runEntry(appdir, ent, self, argv0 string, args []string) (int, error) {
	owd, err := os.Getwd()
	if err != nil {
		owd = os.Getenv("PWD")
	}
	prog := filepath.Join(appdir, filepath.FromSlash(ent))
	// The runtime starts itself, which then executes the entry: a Go
	// program's fork waits, holding its thread, for the child's exec,
	// and an exec from the mount needs this process to serve it, which a
	// garbage collection stopping the world in between would prevent.
	cmd := &exec.Cmd{Path: selfPath, Args: append([]string{launchArg0, prog}, args...)}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "APPDIR="+appdir, "APPIMAGE="+self, "ARGV0="+argv0, "OWD="+owd)
	// Registered before the entry starts, so that no signal between its
	// start and the forwarding is lost (nor kills the runtime).
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return exitError, fmt.Errorf("%s: starting the entry %s: %w", self, ent, err)
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				if ttySent(s) {
					continue
				}
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case ok && st.Signaled():
		return 128 + int(st.Signal()), nil
	case cmd.ProcessState != nil && cmd.ProcessState.Exited():
		return cmd.ProcessState.ExitCode(), nil
	}
	return exitError, fmt.Errorf("%s: waiting for the entry: %w", self, err)
}

// launchArg0 is the argv[0] with which the runtime, started by itself,
// executes the entry (see runEntry).
const launchArg0 = "dwarfs-run:exec"

// launch executes the entry prog with args in place of this process.
func launch(self, prog string, args []string, stderr io.Writer) int {
	err := syscall.Exec(prog, append([]string{prog}, args...), os.Environ())
	code := exitBadImage
	if errors.Is(err, fs.ErrPermission) {
		code = exitNoExec
	}
	fmt.Fprintf(stderr, "dwarfs-run: %s: cannot run the entry %s: %v\n", self, prog, err)
	return code
}

// ttySent reports whether s is a signal the terminal sends to the whole
// foreground process group (Ctrl-C, Ctrl-\) while the runtime, and so
// the entry, is in it: the entry then has it already, and a second copy
// could make a program that takes a repeated Ctrl-C as "quit now" do so.
func ttySent(s os.Signal) bool {
	if s != syscall.SIGINT && s != syscall.SIGQUIT {
		return false
	}
	tty, err := os.Open("/dev/tty")
	if err != nil {
		return false // no controlling terminal
	}
	defer tty.Close()
	pgrp, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

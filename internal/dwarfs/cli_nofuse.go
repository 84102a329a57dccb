//go:build windows || (linux && (386 || arm))

package dwarfs

import (
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/godwarfs/godwarfs/internal/cli"
)

// Exit codes of the dwarfs command (those of every tool; see package cli).
const (
	ExitOK   = cli.ExitOK
	ExitFail = cli.ExitError
)

// NotSupported is what dwarfs says where it cannot mount: on Windows,
// and on 32-bit Linux, where the FUSE library does not build.
func NotSupported() string {
	if runtime.GOOS == "windows" {
		return "mounting is not supported in this build for Windows: go-fuse has no Windows port and " +
			"no WinFsp binding is included; use dwarfsextract to unpack the image, dwarfsck to inspect it, " +
			"or the godwarfs library to read it"
	}
	return "mounting is not supported in this build for " + runtime.GOOS + "/" + runtime.GOARCH + ": go-fuse does not " +
		"build for 32-bit Linux; use dwarfsextract to unpack the image, dwarfsck to inspect it, " +
		"or the godwarfs library to read it"
}

// CLI is the dwarfs command line front end. Here it answers --help
// and --version, and otherwise says that it cannot mount.
type CLI struct {
	Stdout io.Writer
	Stderr io.Writer
}

// Run runs the command and returns its exit status.
func (c *CLI) Run(argv []string) int {
	if c.Stdout == nil {
		c.Stdout = os.Stdout
	}
	if c.Stderr == nil {
		c.Stderr = os.Stderr
	}
	prog := Program()
	_, code, done := prog.Parse(argv[min(1, len(argv)):], c.Stdout, c.Stderr)
	if done {
		return code
	}
	fmt.Fprintf(c.Stderr, "dwarfs: error: %s\n", NotSupported())
	return ExitFail
}

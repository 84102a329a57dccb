package dwarfs

import (
	"context"

	"github.com/godwarfs/godwarfs/internal/cli"
)

// Tool is dwarfs for the commands. SIGINT and SIGTERM keep their default
// action until the driver has mounted; then it catches them to unmount.
var Tool = cli.Tool{Name: "dwarfs", Main: Main}

// Main runs dwarfs with the command line args and returns the exit
// status. Run as mount.dwarfs or mount.fuse.dwarfs (args[0]) it is a
// mount(8) helper.
func Main(_ context.Context, args []string, stdio cli.Stdio) int {
	return (&CLI{Stdout: stdio.Out, Stderr: stdio.Err}).Run(args)
}

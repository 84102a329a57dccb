package cli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Stdio is where a tool reads and writes.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

// Main is the entry point every tool has. args is the whole command line,
// args[0] the name the tool runs as (dwarfs is a mount(8) helper as
// mount.dwarfs); the result is the exit status.
type Main func(ctx context.Context, args []string, stdio Stdio) int

// Tool is a tool's entry point and how it takes signals.
type Tool struct {
	Name string
	Main Main
	// CancelOnSignal: SIGINT and SIGTERM cancel ctx instead of ending the
	// process, so the tool removes what it has not finished. Without it
	// they keep their default action (the dwarfs driver catches them
	// itself once it has mounted).
	CancelOnSignal bool
}

// Run runs the tool with args and stdio as the process would, signal
// handling included, and returns its exit status.
func (t Tool) Run(args []string, stdio Stdio) int {
	ctx := context.Background()
	if t.CancelOnSignal {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	return t.Main(ctx, args, stdio)
}

// Exit runs the tool as the process: with its arguments and standard
// streams, then exits with the tool's status.
func (t Tool) Exit() {
	os.Exit(t.Run(os.Args, Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}

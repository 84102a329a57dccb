// Command mkdwarfs creates DwarFS images; see internal/mkdwarfs.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/godwarfs/godwarfs/internal/mkdwarfs"
)

func main() {
	// Cancellation on SIGINT/SIGTERM lets the builder remove its temp file.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := mkdwarfs.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

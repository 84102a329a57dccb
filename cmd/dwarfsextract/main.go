// Command dwarfsextract extracts a DwarFS image to a directory or a tar
// archive.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/godwarfs/godwarfs/internal/dwarfsextract"
)

func main() {
	// Cancellation on SIGINT/SIGTERM lets the extraction remove the files
	// and the archive it has not finished.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dwarfsextract.MainContext(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

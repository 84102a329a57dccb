package dwarfsck

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/ociartifact"
	"github.com/godwarfs/godwarfs/source"
)

// runPush checks every section of the local image img (SHA-512/256, as
// --check-integrity does) and, when all are sound, pushes it to the
// registry reference ref as an OCI artifact (package ociartifact), so
// that a damaged file is never published.
func runPush(img, ref string, opts godwarfs.Options, quiet bool, stdout io.Writer) error {
	if source.IsRemote(img) {
		return cli.Usagef("--push needs a local image, not a URL")
	}
	if _, err := ociartifact.ParseReference(ref); err != nil {
		return cli.Usagef("--push: %v", err)
	}
	opts.NoCheck = true
	opts.EagerHeaders = true
	im, err := godwarfs.Open(img, &opts)
	if err != nil {
		return err
	}
	err = verifySections(im, true, true)
	im.Close()
	if err != nil {
		return fmt.Errorf("not pushed: %w", err)
	}
	tr := source.NewHTTPTransport(4)
	defer tr.CloseIdleConnections()
	d, err := ociartifact.Push(context.Background(), img, ref, ociartifact.PushOptions{Transport: tr, Title: filepath.Base(img)})
	if err != nil {
		return err
	}
	if !quiet {
		fmt.Fprintf(stdout, "pushed %s to %s (manifest %s)\n", img, ref, d)
	}
	return nil
}

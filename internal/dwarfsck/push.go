package dwarfsck

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/ociartifact"
	"github.com/godwarfs/godwarfs/source"
	"github.com/godwarfs/godwarfs/source/httpsource"
)

// runPush checks every section of the local image img (SHA-512/256, as
// --check-integrity does) and, when all are sound, pushes it to the
// registry reference ref as an OCI artifact (package ociartifact), so
// that a damaged file is never published. Its signature (sig, or
// IMAGE.sig when it exists) follows under the tags
// ociartifact.PushSignature gives it.
func runPush(img, ref, sig string, opts godwarfs.Options, quiet bool, stdout io.Writer) error {
	if source.IsRemote(img) {
		return cli.Usagef("--push needs a local image, not a URL")
	}
	if _, err := ociartifact.ParseReference(ref); err != nil {
		return cli.Usagef("--push: %v", err)
	}
	if sig == "" {
		if _, err := os.Stat(img + ".sig"); err == nil {
			sig = img + ".sig"
		}
	} else if source.IsRemote(sig) {
		return cli.Usagef("--push takes a local signature file, not a URL")
	} else if _, err := os.Stat(sig); err != nil {
		return err
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
	tr := httpsource.NewTransport(4)
	defer tr.CloseIdleConnections()
	ctx := context.Background()
	d, err := ociartifact.Push(ctx, img, ref, ociartifact.PushOptions{Transport: tr, Title: filepath.Base(img)})
	if err != nil {
		return err
	}
	if !quiet {
		fmt.Fprintf(stdout, "pushed %s to %s (manifest %s)\n", img, ref, d)
	}
	if sig == "" {
		return nil
	}
	if err := ociartifact.PushSignature(ctx, sig, ref, d, ociartifact.PushOptions{Transport: tr, Title: filepath.Base(sig)}); err != nil {
		return fmt.Errorf("the image was pushed, but not %w", err)
	}
	if !quiet {
		sr, _ := ociartifact.SignatureRef(ref)
		fmt.Fprintf(stdout, "pushed %s to %s\n", sig, sr)
	}
	return nil
}

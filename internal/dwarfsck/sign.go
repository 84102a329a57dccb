package dwarfsck

import (
	"context"
	"fmt"
	"io"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/imagesig"
	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/source"
)

// signModes are the options that make dwarfsck sign, verify or push
// instead of checking and describing the image.
var signModes = []string{"sign", "verify", "print-signed-digest", "push"}

// signMode reports which of signModes res asks for ("" for none), refusing
// combinations that make no sense.
func signMode(res *cli.Result) (string, error) {
	mode := ""
	for _, m := range signModes {
		if !res.Has(m) {
			continue
		}
		if mode != "" {
			return "", cli.Conflict(mode, m)
		}
		mode = m
	}
	if mode == "" {
		if res.Has("signature") {
			return "", cli.Usagef("option '--signature' needs '--sign' or '--verify'")
		}
		return "", nil
	}
	for _, o := range []string{"print-header", "json", "export-metadata", "list", "checksum", "check-integrity", "no-check", "verbose"} {
		if res.Has(o) {
			return "", cli.Conflict(mode, o)
		}
	}
	if mode == "print-signed-digest" && res.Has("signature") {
		return "", cli.Conflict(mode, "signature")
	}
	return mode, nil
}

// runSign performs a signing mode on img. It reads the section container
// only: the metadata is not decoded, so that damage anywhere is reported
// by the verification, naming the section.
func runSign(mode, img string, off int64, workers int, quiet bool, res *cli.Result, stdout io.Writer) error {
	if mode == "sign" && source.IsRemote(img) {
		return cli.Usagef("--sign needs a local image, not a URL")
	}
	sigPath := res.Get("signature", "")
	if mode == "sign" && source.IsRemote(sigPath) {
		return cli.Usagef("--sign writes the signature to a local file, not a URL")
	}
	if sigPath == "" {
		// Beside the image, wherever it is stored (for s3://B/KEY, the
		// object KEY.sig).
		sigPath = source.Sibling(img, ".sig")
	}
	ctx := context.Background()
	src, err := source.Open(ctx, img, source.Options{})
	if err != nil {
		return err
	}
	defer src.Close()
	// Lazy headers are read by the digest all at once, in parallel: a
	// cold image of thousands of blocks then takes a fraction of the
	// time of reading them one by one.
	bi, err := block.OpenImage(src, src.Size(), block.Options{ImageOffset: off, Name: src.Name(), LazyHeaders: true})
	if err != nil {
		return err
	}
	switch mode {
	case "print-signed-digest":
		d, err := imagesig.Digest(bi, workers)
		if err != nil {
			return err
		}
		_, err = stdout.Write(d)
		return err
	case "sign":
		signer, err := imagesig.LoadSigner(res.Get("sign", ""))
		if err != nil {
			return err
		}
		sf, err := imagesig.SignImage(bi, signer, nil)
		if err != nil {
			return err
		}
		if err := imagesig.WriteFileAtomic(sigPath, sf.Marshal()); err != nil {
			return err
		}
		if !quiet {
			fmt.Fprintf(stdout, "%s: signed with %s key %s\n", sigPath, signer.PublicKey().Type(), ssh.FingerprintSHA256(signer.PublicKey()))
		}
		return nil
	}
	as, err := imagesig.ReadAllowedSigners(res.Get("verify", ""))
	if err != nil {
		return err
	}
	// The same connections as the image; bounded by what a signature of
	// this many sections can need.
	b, err := source.ReadSmall(ctx, sigPath, imagesig.MaxFileSize(len(bi.Sections())), source.Options{}, src)
	if err != nil {
		return fmt.Errorf("%s: signature: %w", src.Name(), err)
	}
	sf, err := imagesig.ParseFile(b)
	if err != nil {
		return fmt.Errorf("%s: %w", source.Redact(sigPath), err)
	}
	r, err := imagesig.VerifyImage(bi, sf, as, time.Now(), workers)
	if err != nil {
		return &integrityError{prefix: src.Name() + ": ", err: err}
	}
	if !quiet {
		fmt.Fprintf(stdout, "%s: %s\n", src.Name(), r)
	}
	return nil
}

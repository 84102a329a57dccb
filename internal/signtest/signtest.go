// Package signtest signs test images: a new ed25519 key, the detached
// signature beside the image and an allowed signers file naming the key,
// as the tools' --sign and --verify options expect them.
package signtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/godwarfs/godwarfs/imagesig"
)

// SignImage signs the image file img with a new key, writing the
// signature to sig ("" for img+".sig"), and writes an allowed signers
// file naming the key as principal beside the image. It returns that
// file's path and the signer.
func SignImage(tb testing.TB, img, sig, principal string) (allowed string, signer ssh.Signer) {
	tb.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	if signer, err = ssh.NewSignerFromKey(priv); err != nil {
		tb.Fatal(err)
	}
	if err := imagesig.SignPath(img, sig, signer, nil); err != nil {
		tb.Fatal(err)
	}
	allowed = filepath.Join(filepath.Dir(img), "allowed_signers")
	line := append([]byte(principal+" "), ssh.MarshalAuthorizedKey(signer.PublicKey())...)
	if err := os.WriteFile(allowed, line, 0o644); err != nil {
		tb.Fatal(err)
	}
	return allowed, signer
}

package imagesig

import (
	"time"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/block"
)

// AllowedSigners is the verifier godwarfs.Verify takes: the reader knows
// no signature format and links none of its code.
var _ godwarfs.SignatureVerifier = AllowedSigners(nil)

// MaxSignatureSize is MaxFileSize.
func (as AllowedSigners) MaxSignatureSize(sections int) int64 { return MaxFileSize(sections) }

// ParseSignature decodes a signature file (ParseFile); its Verify is
// VerifyLazy with as.
func (as AllowedSigners) ParseSignature(sigFile []byte) (godwarfs.Signature, error) {
	f, err := ParseFile(sigFile)
	if err != nil {
		return nil, err
	}
	return lazyCheck{f, as}, nil
}

// lazyCheck is a signature file and the signers it may be by.
type lazyCheck struct {
	f  *File
	as AllowedSigners
}

func (c lazyCheck) Verify(im *block.Image, now time.Time) (*godwarfs.Signer, error) {
	r, err := VerifyLazy(im, c.f, c.as, now)
	if err != nil {
		return nil, err
	}
	return &godwarfs.Signer{Principals: r.Signer.Principals, KeyType: r.KeyType, Fingerprint: r.Fingerprint, DigestVersion: r.Manifest.Version}, nil
}

package imagesig

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// FuzzParse feeds signature files, allowed signers files and signed
// digests to their parsers: none may panic, and what parses must survive
// a round trip.
func FuzzParse(f *testing.F) {
	img := testImage(f)
	signer := newSigner(f, "ed25519")
	sf, err := SignImage(mustOpen(f, img), signer, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sf.Marshal())
	f.Add(sf.Digest)
	m1, err := ManifestOf(mustOpen(f, img))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(m1.Marshal()) // a version 1 digest
	f.Add(sf.Signature.Marshal())
	f.Add([]byte(allowedLine(`"a,b*"`, `namespaces="x,!y",valid-after="20260101Z"`, signer.PublicKey())))
	f.Add([]byte(allowedLine("a", "cert-authority", newSigner(f, "ecdsa-p256").PublicKey())))
	f.Add([]byte("-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if fi, err := ParseFile(b); err == nil {
			again, err := ParseFile(fi.Marshal())
			if err != nil {
				t.Fatalf("re-parse of a parsed signature file: %v", err)
			}
			if !bytes.Equal(again.Marshal(), fi.Marshal()) || !bytes.Equal(again.Digest, fi.Digest) {
				t.Fatal("signature file does not round-trip")
			}
			_ = fi.Signature.Verify(Namespace, b)
			if fi.Digest != nil {
				_, _ = ParseDigest(fi.Digest)
			}
		}
		if s, err := ParseSignature(b); err == nil && !bytes.Equal(s.Marshal(), b) {
			t.Fatal("SSHSIG blob does not round-trip")
		}
		if m, err := ParseDigest(b); err == nil && !bytes.Equal(m.Marshal(), b) {
			t.Fatal("signed digest does not round-trip")
		}
		if as, err := ParseAllowedSigners(strings.NewReader(string(b)), time.UTC); err == nil {
			for _, a := range as {
				if a.Key == nil || a.Principals == "" {
					t.Fatalf("line %d parsed without key or principals", a.Line)
				}
				_ = matchList(Namespace, a.Namespaces)
			}
		}
	})
}

package imagesig

import (
	"bytes"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/godwarfs/godwarfs/internal/tamper"
)

// sshKeygen returns the path of ssh-keygen. The interoperability tests
// fail without it: they are the only check that the format is OpenSSH's.
func sshKeygen(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Skipf("skipped: ssh-keygen (Debian's openssh-client) is not installed: %v", err)
	}
	return p
}

// writeKey writes signer's private key (of kind) as an OpenSSH key file.
func writeKey(t *testing.T, dir string, kind keyKind) (ssh.Signer, string) {
	t.Helper()
	key := genKey(t, kind)
	blk, err := ssh.MarshalPrivateKey(key, "test key")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "id_"+string(kind))
	if err := os.WriteFile(path, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	return signer, path
}

func TestSSHKeygenInterop(t *testing.T) {
	keygen := sshKeygen(t)
	img := testImage(t)
	for _, kind := range []keyKind{"ed25519", "ecdsa-p256", "rsa"} {
		t.Run(string(kind), func(t *testing.T) {
			dir := t.TempDir()
			signer, keyPath := writeKey(t, dir, kind)
			allowed := filepath.Join(dir, "allowed_signers")
			if err := os.WriteFile(allowed, []byte(allowedLine("alice@example.org", `namespaces="`+Namespace+`"`, signer.PublicKey())), 0o644); err != nil {
				t.Fatal(err)
			}
			as := mustAllowed(t, allowedLine("alice@example.org", "", signer.PublicKey()))
			d, err := Digest(mustOpen(t, img), 1)
			if err != nil {
				t.Fatal(err)
			}
			digestPath := filepath.Join(dir, "digest")
			if err := os.WriteFile(digestPath, d, 0o644); err != nil {
				t.Fatal(err)
			}

			// ssh-keygen accepts our signature file, digest block and all.
			sf, err := SignImage(mustOpen(t, img), signer, nil)
			if err != nil {
				t.Fatal(err)
			}
			sigPath := filepath.Join(dir, "image.sig")
			if err := WriteFileAtomic(sigPath, sf.Marshal()); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(keygen, "-Y", "verify", "-f", allowed, "-I", "alice@example.org", "-n", Namespace, "-s", sigPath)
			cmd.Stdin = bytes.NewReader(d)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "Good") {
				t.Fatalf("ssh-keygen -Y verify: %v\n%s", err, out)
			}
			// ... and rejects it over another message.
			cmd = exec.Command(keygen, "-Y", "verify", "-f", allowed, "-I", "alice@example.org", "-n", Namespace, "-s", sigPath)
			cmd.Stdin = bytes.NewReader(append(bytes.Clone(d), 0))
			if out, err := cmd.CombinedOutput(); err == nil {
				t.Fatalf("ssh-keygen -Y verify accepted a changed digest:\n%s", out)
			}

			// We accept ssh-keygen's signature over the digest.
			theirs := keygenSign(t, keygen, keyPath, digestPath)
			if theirs.Digest != nil {
				t.Fatal("ssh-keygen's file parsed with a digest block")
			}
			res, err := VerifyImage(mustOpen(t, img), theirs, as, time.Now(), 1)
			if err != nil {
				t.Fatal(err)
			}
			if res.Fingerprint != ssh.FingerprintSHA256(signer.PublicKey()) {
				t.Fatalf("fingerprint %s", res.Fingerprint)
			}
			// ... also with hash sha256.
			os.Remove(digestPath + ".sig")
			sf256 := keygenSign(t, keygen, keyPath, digestPath, "-O", "hashalg=sha256")
			if sf256.Signature.HashAlg != "sha256" {
				t.Fatalf("hash %s", sf256.Signature.HashAlg)
			}
			if _, err := VerifyHeaders(mustOpen(t, img), sf256, as, time.Now()); err != nil {
				t.Fatal(err)
			}
			// ... and over a version 1 digest, which earlier releases
			// printed and signed.
			m1, err := ManifestOf(mustOpen(t, img))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(digestPath+"1", m1.Marshal(), 0o644); err != nil {
				t.Fatal(err)
			}
			sf1 := keygenSign(t, keygen, keyPath, digestPath+"1")
			if res, err := VerifyImage(mustOpen(t, img), sf1, as, time.Now(), 1); err != nil || res.Manifest.Version != 1 {
				t.Fatalf("ssh-keygen signature over a version 1 digest: %v", err)
			}
			if res.Manifest.Version != 2 {
				t.Fatalf("ssh-keygen signature over the printed digest verified as version %d", res.Manifest.Version)
			}
			// Their signature over another image's digest fails.
			bad := bytes.Clone(img)
			bad[100] ^= 1
			tamper.Rehash(bad, 0)
			if _, err := VerifyHeaders(mustOpen(t, bad), theirs, as, time.Now()); err == nil {
				t.Fatal("ssh-keygen signature verified over a changed image")
			}
		})
	}
}

// keygenSign signs the file at path with ssh-keygen -Y sign (extra
// options added) and returns the signature file it wrote.
func keygenSign(t *testing.T, keygen, keyPath, path string, extra ...string) *File {
	t.Helper()
	args := append([]string{"-Y", "sign", "-f", keyPath, "-n", Namespace}, extra...)
	out, err := exec.Command(keygen, append(args, path)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh-keygen %q: %v\n%s", args, err, out)
	}
	b, err := os.ReadFile(path + ".sig")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseFile(b)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

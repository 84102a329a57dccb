package dwarfsck

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/godwarfs/godwarfs/imagesig"
	"github.com/godwarfs/godwarfs/internal/tamper"
	"github.com/godwarfs/godwarfs/internal/testimage"
)

// signFixture writes a small image, an ed25519 key and an allowed signers
// file naming it (principal alice@example.org) into a temporary directory.
func signFixture(t *testing.T) (dir, img, key, allowed string, signer ssh.Signer) {
	t.Helper()
	dir = t.TempDir()
	s, err := testimage.NewSpread("null", 3000)
	if err != nil {
		t.Fatal(err)
	}
	img = filepath.Join(dir, "test.dwarfs")
	if err := os.WriteFile(img, s.Image, 0o644); err != nil {
		t.Fatal(err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	key = filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(key, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	if signer, err = ssh.NewSignerFromKey(priv); err != nil {
		t.Fatal(err)
	}
	allowed = filepath.Join(dir, "allowed_signers")
	line := "alice@example.org " + string(ssh.MarshalAuthorizedKey(signer.PublicKey()))
	if err := os.WriteFile(allowed, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, img, key, allowed, signer
}

func TestSignVerify(t *testing.T) {
	dir, img, key, allowed, signer := signFixture(t)
	rc, out, errs := runck("--sign="+key, img)
	if rc != 0 {
		t.Fatalf("--sign: exit %d: %s", rc, errs)
	}
	fp := ssh.FingerprintSHA256(signer.PublicKey())
	if !strings.Contains(out, img+".sig: signed with ssh-ed25519 key "+fp) {
		t.Fatalf("--sign said %q", out)
	}
	rc, out, errs = runck("--verify="+allowed, img)
	if rc != 0 {
		t.Fatalf("--verify: exit %d: %s", rc, errs)
	}
	if want := "good signature by alice@example.org with ssh-ed25519 key " + fp; !strings.Contains(out, want) {
		t.Fatalf("--verify said %q, want %q", out, want)
	}
	if rc, out, _ := runck("-q", "--verify="+allowed, img); rc != 0 || out != "" {
		t.Fatalf("-q --verify: exit %d, said %q", rc, out)
	}

	// --signature names the file, for both.
	other := filepath.Join(dir, "other.sig")
	if rc, _, errs := runck("-q", "--sign="+key, "--signature="+other, img); rc != 0 {
		t.Fatalf("--sign --signature: %s", errs)
	}
	if rc, _, errs := runck("--verify="+allowed, "--signature="+other, img); rc != 0 {
		t.Fatalf("--verify --signature: %s", errs)
	}

	// --print-signed-digest prints what was signed.
	rc, out, errs = runck("--print-signed-digest", img)
	if rc != 0 {
		t.Fatalf("--print-signed-digest: %s", errs)
	}
	b, _ := os.ReadFile(img + ".sig")
	sf, err := imagesig.ParseFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal([]byte(out), sf.Digest) {
		t.Fatal("--print-signed-digest differs from the digest in the signature file")
	}
}

// TestVerifyWithSSHKeygen checks the command against ssh-keygen both ways,
// through --print-signed-digest; it fails without ssh-keygen.
func TestVerifyWithSSHKeygen(t *testing.T) {
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Skipf("skipped: ssh-keygen (Debian's openssh-client) is not installed: %v", err)
	}
	dir, img, key, allowed, _ := signFixture(t)
	rc, digest, errs := runck("--print-signed-digest", img)
	if rc != 0 {
		t.Fatal(errs)
	}
	dpath := filepath.Join(dir, "digest")
	if err := os.WriteFile(dpath, []byte(digest), 0o644); err != nil {
		t.Fatal(err)
	}
	if rc, _, errs := runck("-q", "--sign="+key, img); rc != 0 {
		t.Fatal(errs)
	}
	cmd := exec.Command(keygen, "-Y", "verify", "-f", allowed, "-I", "alice@example.org", "-n", imagesig.Namespace, "-s", img+".sig")
	cmd.Stdin = strings.NewReader(digest)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -Y verify of dwarfsck --sign: %v\n%s", err, out)
	}
	if out, err := exec.Command(keygen, "-Y", "sign", "-f", key, "-n", imagesig.Namespace, dpath).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -Y sign: %v\n%s", err, out)
	}
	if rc, out, errs := runck("--verify="+allowed, "--signature="+dpath+".sig", img); rc != 0 || !strings.Contains(out, "good signature by alice@example.org") {
		t.Fatalf("--verify of ssh-keygen's signature: exit %d: %s%s", rc, out, errs)
	}
}

// TestVerifyFails runs the shared table of changes to a signed image
// (package tamper) through --verify on a local file; the same table runs
// over HTTP and S3 in the fusefs tests.
func TestVerifyFails(t *testing.T) {
	dir, img, key, allowed, _ := signFixture(t)
	if rc, _, errs := runck("-q", "--sign="+key, img); rc != 0 {
		t.Fatal(errs)
	}
	orig, _ := os.ReadFile(img)
	strangers := filepath.Join(dir, "strangers")
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(priv.Public())
	os.WriteFile(strangers, append([]byte("mallory "), ssh.MarshalAuthorizedKey(pub)...), 0o644)
	cases, err := tamper.Cases(orig)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			if err := os.WriteFile(img, tc.Change(bytes.Clone(orig)), 0o644); err != nil {
				t.Fatal(err)
			}
			as, want := allowed, tc.Want
			if tc.Stranger {
				as = strangers
			}
			if want == "" {
				want = "section "
			}
			rc, _, errs := runck("--verify="+as, img)
			if rc != ExitImage || !strings.Contains(errs, want) {
				t.Fatalf("exit %d, stderr %q, want %q", rc, errs, want)
			}
		})
	}
	os.WriteFile(img, orig, 0o644)
	os.Remove(img + ".sig")
	if rc, _, errs := runck("--verify="+allowed, img); rc != ExitImage || !strings.Contains(errs, "test.dwarfs.sig") {
		t.Fatalf("unsigned image: exit %d, %q", rc, errs)
	}
}

func TestSignOptionConflicts(t *testing.T) {
	for _, args := range [][]string{
		{"--sign=k", "--verify=a", "x"},
		{"--sign=k", "--list", "x"},
		{"--verify=a", "--json", "x"},
		{"--print-signed-digest", "--signature=s", "x"},
		{"--signature=s", "x"},
		{"--sign=k", "--signature=https://h/x.sig", "x"},
		{"--sign=k", "https://h/x.dwarfs"},
	} {
		if rc, _, errs := runck(args...); rc != ExitImage || errs == "" {
			t.Errorf("%q: exit %d, %q", args, rc, errs)
		}
	}
}

// TestSignFixtures signs and verifies every good fixture image (made by
// the reference tools and by godwarfs, with every compression, with and
// without a section index or a header before the image); images of
// formats 2.0 and 2.1, which have no SHA-512/256, are refused.
func TestSignFixtures(t *testing.T) {
	_, _, key, allowed, _ := signFixture(t)
	for _, fx := range good(t) {
		t.Run(fx.Name, func(t *testing.T) {
			sig := filepath.Join(t.TempDir(), "image.sig")
			rc, _, errs := runck("-q", "--sign="+key, "--signature="+sig, fx.Path)
			if strings.Contains(errs, "no section hashes") {
				// Formats 2.0 and 2.1: refused, as they must be.
				if rc != ExitImage {
					t.Fatalf("exit %d: %s", rc, errs)
				}
				return
			}
			if rc != 0 {
				t.Fatalf("--sign: exit %d: %s", rc, errs)
			}
			if rc, _, errs := runck("-q", "--verify="+allowed, "--signature="+sig, fx.Path); rc != 0 {
				t.Fatalf("--verify: exit %d: %s", rc, errs)
			}
		})
	}
}

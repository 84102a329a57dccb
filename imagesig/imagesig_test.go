package imagesig

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zeebo/blake3"
	"golang.org/x/crypto/ssh"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/tamper"
	"github.com/godwarfs/godwarfs/internal/testimage"
)

const blockLen = 3000

// testImage returns a small image of three stored blocks of equal length,
// schema, metadata and section index.
func testImage(t testing.TB) []byte {
	t.Helper()
	s, err := testimage.NewSpread("null", blockLen)
	if err != nil {
		t.Fatal(err)
	}
	return s.Image
}

func openBytes(t testing.TB, b []byte) (*block.Image, error) {
	t.Helper()
	return block.OpenImage(bytes.NewReader(b), int64(len(b)), block.Options{ImageOffset: -1, Name: "test.dwarfs"})
}

func mustOpen(t testing.TB, b []byte) *block.Image {
	t.Helper()
	im, err := openBytes(t, b)
	if err != nil {
		t.Fatal(err)
	}
	return im
}

type keyKind string

func newSigner(t testing.TB, kind keyKind) ssh.Signer {
	t.Helper()
	s, err := ssh.NewSignerFromKey(genKey(t, kind))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// genKey returns a new private key of kind.
func genKey(t testing.TB, kind keyKind) any {
	t.Helper()
	var key any
	var err error
	switch kind {
	case "ed25519":
		_, key, err = ed25519.GenerateKey(rand.Reader)
	case "ecdsa-p256":
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ecdsa-p384":
		key, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "ecdsa-p521":
		key, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case "rsa":
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	default:
		t.Fatalf("unknown key kind %s", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func allowedLine(principals, opts string, pub ssh.PublicKey) string {
	k := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
	if opts != "" {
		return principals + " " + opts + " " + k + "\n"
	}
	return principals + " " + k + "\n"
}

func mustAllowed(t testing.TB, text string) AllowedSigners {
	t.Helper()
	as, err := ParseAllowedSigners(strings.NewReader(text), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return as
}

// TestDigestLayout checks both digest versions byte by byte against the
// documented layout, the BLAKE3 of version 2 against its definition over
// the image file's own bytes.
func TestDigestLayout(t *testing.T) {
	img := testImage(t)
	file := img
	im := mustOpen(t, img)
	v1, err := ManifestOf(im)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := Digest(im, 2)
	if err != nil {
		t.Fatal(err)
	}
	secs := im.Sections()
	for _, tc := range []struct {
		d       []byte
		version string
		record  int
	}{{v1.Marshal(), "1", 52}, {v2, "2", 84}} {
		d := tc.d
		if want := 40 + len(secs)*tc.record; len(d) != want || digestHeaderSize != 40 {
			t.Fatalf("version %s: digest is %d bytes, want %d for %d sections", tc.version, len(d), want, len(secs))
		}
		if !bytes.HasPrefix(d, []byte("godwarfs-image-digest/"+tc.version+"\n")) {
			t.Fatalf("digest starts %q", d[:24])
		}
		if d[24] != 2 || d[26] != 1 || binary.LittleEndian.Uint32(d[28:]) != uint32(len(secs)) {
			t.Fatalf("digest header % x", d[24:40])
		}
		last := secs[len(secs)-1]
		if last.Type != block.SectionIndex || binary.LittleEndian.Uint64(d[32:]) != uint64(last.End()) {
			t.Fatalf("end %d, last section %v ends at %d", binary.LittleEndian.Uint64(d[32:]), last, last.End())
		}
		for i, s := range secs {
			r := d[40+i*tc.record:]
			if binary.LittleEndian.Uint16(r) != uint16(s.Type) || binary.LittleEndian.Uint16(r[2:]) != uint16(s.Compression) ||
				binary.LittleEndian.Uint64(r[4:]) != uint64(s.DataOffset) || binary.LittleEndian.Uint64(r[12:]) != uint64(s.Length) ||
				!bytes.Equal(r[20:52], s.SHA512_256[:]) {
				t.Fatalf("version %s: record %d: % x, section %+v", tc.version, i, r[:52], s)
			}
			if tc.record == 84 {
				// Header bytes 0x28..0x3f, then the payload.
				want := blake3.Sum256(file[s.HeaderOffset+0x28 : s.End()])
				if !bytes.Equal(r[52:84], want[:]) {
					t.Fatalf("record %d: blake3 %x, want %x", i, r[52:84], want)
				}
			}
		}
		m, err := ParseDigest(d)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(m.Marshal(), d) || strconv.Itoa(m.Version) != tc.version {
			t.Fatalf("version %s: ParseDigest/Marshal do not round-trip", tc.version)
		}
	}
	if _, err := ParseDigest(append([]byte("godwarfs-image-digest/3\n"), v2[24:]...)); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "unsupported version") {
		t.Fatalf("version 3: %v", err)
	}
}

func TestSignVerifyRoundTrip(t *testing.T) {
	img := testImage(t)
	for _, kind := range []keyKind{"ed25519", "ecdsa-p256", "ecdsa-p384", "ecdsa-p521", "rsa"} {
		t.Run(string(kind), func(t *testing.T) {
			signer := newSigner(t, kind)
			sf, err := SignImage(mustOpen(t, img), signer, nil)
			if err != nil {
				t.Fatal(err)
			}
			if kind == "rsa" && sf.Signature.Signature.Format != ssh.KeyAlgoRSASHA512 {
				t.Fatalf("RSA signature format %s, want %s", sf.Signature.Signature.Format, ssh.KeyAlgoRSASHA512)
			}
			text := sf.Marshal()
			parsed, err := ParseFile(text)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(parsed.Marshal(), text) {
				t.Fatal("ParseFile/Marshal do not round-trip")
			}
			as := mustAllowed(t, "# comment\n\n"+allowedLine("other@example.org", "", newSigner(t, "ed25519").PublicKey())+
				allowedLine(`"alice@example.org,bob@*"`, `namespaces="dwarfs-*"`, signer.PublicKey()))
			res, err := VerifyImage(mustOpen(t, img), parsed, as, time.Now(), 2)
			if err != nil {
				t.Fatal(err)
			}
			if res.Signer.Principals != "alice@example.org,bob@*" || res.Fingerprint != ssh.FingerprintSHA256(signer.PublicKey()) {
				t.Fatalf("result %v", res)
			}
			// Without the carried digest the image's own is verified.
			parsed.Digest = nil
			if _, err := VerifyImage(mustOpen(t, img), parsed, as, time.Now(), 1); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestTamper runs the shared table of changes to a signed image (package
// tamper, which the tools' tests over local files, HTTP and S3 run too).
// TestTamper runs the tampering table against a signature over each
// digest version: version 1 (headers only, as earlier releases signed)
// catches a changed payload by the header's SHA-512/256, version 2 by the
// signed BLAKE3.
func TestTamper(t *testing.T) {
	for _, version := range []int{1, 2} {
		t.Run(fmt.Sprintf("digest %d", version), func(t *testing.T) { testTamper(t, version) })
	}
}

func testTamper(t *testing.T, version int) {
	img := testImage(t)
	signer := newSigner(t, "ed25519")
	sf, err := SignImage(mustOpen(t, img), signer, nil)
	if err != nil {
		t.Fatal(err)
	}
	if version == 1 {
		m, err := ManifestOf(mustOpen(t, img))
		if err != nil {
			t.Fatal(err)
		}
		sig, err := Sign(signer, Namespace, m.Marshal())
		if err != nil {
			t.Fatal(err)
		}
		sf = &File{Signature: sig, Digest: m.Marshal()}
	}
	as := mustAllowed(t, allowedLine("alice", "", signer.PublicKey()))
	if res, err := VerifyImage(mustOpen(t, img), sf, as, time.Now(), 2); err != nil || res.Manifest.Version != version {
		t.Fatalf("untouched image: %v", err)
	}
	strangers := mustAllowed(t, allowedLine("mallory", "", newSigner(t, "ed25519").PublicKey()))
	cases, err := tamper.Cases(img)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			b := tc.Change(bytes.Clone(img))
			allowed := as
			if tc.Stranger {
				allowed = strangers
			}
			im, err := openBytes(t, b)
			if err == nil {
				_, err = VerifyImage(im, sf, allowed, time.Now(), 2)
			}
			if err == nil {
				t.Fatal("tampered image verified")
			}
			t.Logf("%v", err)
			if !tc.Stranger && !strings.Contains(err.Error(), "section ") {
				t.Fatalf("error names no section: %v", err)
			}
			want := tc.Want
			if version == 1 {
				want = strings.Replace(want, "(blake3", "(sha512/256", 1)
			}
			if want != "" && !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not say %q", err, want)
			}
			if tc.Checksum && !errors.Is(err, block.ErrChecksum) {
				t.Fatalf("error %v is not %v", err, block.ErrChecksum)
			}
			if tc.Mismatch && !errors.Is(err, ErrMismatch) {
				t.Fatalf("error %v is not %v", err, ErrMismatch)
			}
			if tc.Stranger && !errors.Is(err, ErrSignature) {
				t.Fatalf("error %v is not %v", err, ErrSignature)
			}
		})
	}
}

func TestSignerNotAllowed(t *testing.T) {
	img := testImage(t)
	signer, other := newSigner(t, "ed25519"), newSigner(t, "ecdsa-p256")
	sf, err := SignImage(mustOpen(t, img), signer, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name, allowed, want string
	}{
		{"other key", allowedLine("bob", "", other.PublicKey()), "not an allowed signer"},
		{"namespace", allowedLine("alice", `namespaces="git,file"`, signer.PublicKey()), "may not sign namespace"},
		{"negated namespace", allowedLine("alice", `namespaces="*,!dwarfs-image@*"`, signer.PublicKey()), "may not sign namespace"},
		{"not yet valid", allowedLine("alice", `valid-after="20260602Z"`, signer.PublicKey()), "valid only after"},
		{"expired", allowedLine("alice", `valid-before="202606011200Z"`, signer.PublicKey()), "valid only before"},
		{"empty", "# nobody\n", "not an allowed signer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := VerifyHeaders(mustOpen(t, img), sf, mustAllowed(t, tc.allowed), now)
			if !errors.Is(err, ErrSignature) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	ok := allowedLine("alice", `valid-after="20260101",valid-before="20270101000000Z",namespaces="dwarfs-image@godwarfs"`, signer.PublicKey())
	if _, err := VerifyHeaders(mustOpen(t, img), sf, mustAllowed(t, ok), now); err != nil {
		t.Fatal(err)
	}
	// A signature under another namespace is refused.
	d, _ := Digest(mustOpen(t, img), 1)
	sig, err := Sign(signer, "file", d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyHeaders(mustOpen(t, img), &File{Signature: sig}, mustAllowed(t, ok), now); !errors.Is(err, ErrSignature) {
		t.Fatalf("signature in namespace file: got %v", err)
	}
}

func TestParseAllowedSignersErrors(t *testing.T) {
	pub := newSigner(t, "ed25519").PublicKey()
	tests := []struct{ name, text, want string }{
		{"cert-authority", allowedLine("*@example.org", "cert-authority", pub), "cert-authority"},
		{"unknown option", allowedLine("a", "no-touch-required", pub), "unknown option"},
		{"unquoted", allowedLine("a", "namespaces=file", pub), "must be quoted"},
		{"bad time", allowedLine("a", `valid-after="2026-01-01"`, pub), "YYYYMMDD"},
		{"inverted times", allowedLine("a", `valid-after="20270101",valid-before="20260101"`, pub), "not after"},
		{"no key", "alice\n", "no key"},
		{"bad key", "alice ssh-ed25519 AAAA\n", "key"},
		{"unterminated quote", "\"alice ssh-ed25519 AAAA\n", "unterminated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseAllowedSigners(strings.NewReader(tc.text), time.UTC)
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "line 1") {
				t.Fatalf("got %v, want %q on line 1", err, tc.want)
			}
		})
	}
}

func TestMatchList(t *testing.T) {
	tests := []struct {
		s, list string
		want    bool
	}{
		{"dwarfs-image@godwarfs", "dwarfs-image@godwarfs", true},
		{"dwarfs-image@godwarfs", "file,dwarfs-*", true},
		{"dwarfs-image@godwarfs", "dwarfs-image@godwarf?", true},
		{"dwarfs-image@godwarfs", "dwarfs-image@", false},
		{"dwarfs-image@godwarfs", "*,!dwarfs*", false},
		{"x", "?", true},
		{"", "*", true},
		{"", "?", false},
	}
	for _, tc := range tests {
		if got := matchList(tc.s, tc.list); got != tc.want {
			t.Errorf("matchList(%q, %q) = %v", tc.s, tc.list, got)
		}
	}
}

// TestRSASHA1Refused: an RSA signature made with SHA-1 (ssh-rsa) is not
// accepted, as OpenSSH does not accept it for SSHSIG either.
func TestRSASHA1Refused(t *testing.T) {
	signer := newSigner(t, "rsa")
	msg := []byte("message")
	data, err := signedData(Namespace, "sha512", msg)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := signer.(ssh.AlgorithmSigner).SignWithAlgorithm(rand.Reader, data, ssh.KeyAlgoRSA)
	if err != nil {
		t.Fatal(err)
	}
	sig := &Signature{PublicKey: signer.PublicKey(), Namespace: Namespace, HashAlg: "sha512", Signature: raw}
	if err := sig.Verify(Namespace, msg); !errors.Is(err, ErrSignature) || !strings.Contains(err.Error(), "SHA-1") {
		t.Fatalf("ssh-rsa signature: got %v", err)
	}
	good, err := Sign(signer, Namespace, msg)
	if err != nil {
		t.Fatal(err)
	}
	if err := good.Verify(Namespace, msg); err != nil {
		t.Fatal(err)
	}
}

package imagesig

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/ssh"
)

// The SSHSIG framing (OpenSSH's PROTOCOL.sshsig). Only the framing and the
// armor are here; keys, signing and signature checks are x/crypto/ssh's.
const (
	sshsigMagic   = "SSHSIG"
	sshsigVersion = 1
	armorBegin    = "-----BEGIN SSH SIGNATURE-----"
	armorEnd      = "-----END SSH SIGNATURE-----"
	digestBegin   = "-----BEGIN GODWARFS SIGNED DIGEST-----"
	digestEnd     = "-----END GODWARFS SIGNED DIGEST-----"
	// armorWidth is the line length ssh-keygen uses.
	armorWidth = 70
	// maxSigFile bounds what ParseSignatureFile accepts.
	maxSigFile = 1 << 26
)

// Signature is a decoded SSHSIG signature.
type Signature struct {
	PublicKey ssh.PublicKey
	Namespace string
	HashAlg   string // "sha512" or "sha256"
	Signature *ssh.Signature
}

// signedData is what the key signs: the magic, namespace, reserved field,
// hash algorithm and the hash of the message.
func signedData(namespace, hashAlg string, msg []byte) ([]byte, error) {
	var h []byte
	switch hashAlg {
	case "sha512":
		s := sha512.Sum512(msg)
		h = s[:]
	case "sha256":
		s := sha256.Sum256(msg)
		h = s[:]
	default:
		return nil, fmt.Errorf("ssh signature: hash algorithm %q not supported: %w", hashAlg, ErrFormat)
	}
	b := []byte(sshsigMagic)
	b = appendString(b, []byte(namespace))
	b = appendString(b, nil) // reserved
	b = appendString(b, []byte(hashAlg))
	b = appendString(b, h)
	return b, nil
}

func appendString(b, s []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// Sign signs msg with signer under namespace, hashing with sha512. RSA
// keys sign with rsa-sha2-512, as ssh-keygen does.
func Sign(signer ssh.Signer, namespace string, msg []byte) (*Signature, error) {
	if namespace == "" {
		return nil, fmt.Errorf("ssh signature: empty namespace: %w", ErrFormat)
	}
	data, err := signedData(namespace, "sha512", msg)
	if err != nil {
		return nil, err
	}
	var sig *ssh.Signature
	if signer.PublicKey().Type() == ssh.KeyAlgoRSA {
		as, ok := signer.(ssh.AlgorithmSigner)
		if !ok {
			return nil, fmt.Errorf("ssh signature: RSA signer cannot sign with %s", ssh.KeyAlgoRSASHA512)
		}
		sig, err = as.SignWithAlgorithm(rand.Reader, data, ssh.KeyAlgoRSASHA512)
	} else {
		sig, err = signer.Sign(rand.Reader, data)
	}
	if err != nil {
		return nil, fmt.Errorf("ssh signature: %w", err)
	}
	return &Signature{PublicKey: signer.PublicKey(), Namespace: namespace, HashAlg: "sha512", Signature: sig}, nil
}

// Verify checks that s is a good signature over msg by its own public key
// under namespace. Whether that key may sign is the caller's question (see
// AllowedSigners.Verify).
func (s *Signature) Verify(namespace string, msg []byte) error {
	if s.Namespace != namespace {
		return fmt.Errorf("ssh signature: namespace %q, want %q: %w", s.Namespace, namespace, ErrSignature)
	}
	// As OpenSSH: an RSA signature must not use SHA-1.
	if s.Signature.Format == ssh.KeyAlgoRSA {
		return fmt.Errorf("ssh signature: %s (SHA-1) signatures are not accepted: %w", s.Signature.Format, ErrSignature)
	}
	data, err := signedData(s.Namespace, s.HashAlg, msg)
	if err != nil {
		return err
	}
	if err := s.PublicKey.Verify(data, s.Signature); err != nil {
		return fmt.Errorf("ssh signature: %v: %w", err, ErrSignature)
	}
	return nil
}

// Marshal returns the binary SSHSIG blob of s.
func (s *Signature) Marshal() []byte {
	b := []byte(sshsigMagic)
	b = binary.BigEndian.AppendUint32(b, sshsigVersion)
	b = appendString(b, s.PublicKey.Marshal())
	b = appendString(b, []byte(s.Namespace))
	b = appendString(b, nil)
	b = appendString(b, []byte(s.HashAlg))
	b = appendString(b, ssh.Marshal(s.Signature))
	return b
}

// reader takes SSH wire strings off a byte slice.
type reader struct {
	b   []byte
	err error
}

func (r *reader) string(what string) []byte {
	if r.err != nil {
		return nil
	}
	if len(r.b) < 4 {
		r.err = fmt.Errorf("ssh signature: %s: truncated: %w", what, ErrFormat)
		return nil
	}
	n := binary.BigEndian.Uint32(r.b)
	if uint64(n) > uint64(len(r.b)-4) {
		r.err = fmt.Errorf("ssh signature: %s: length %d past the end: %w", what, n, ErrFormat)
		return nil
	}
	s := r.b[4 : 4+n]
	r.b = r.b[4+n:]
	return s
}

// ParseSignature decodes a binary SSHSIG blob.
func ParseSignature(b []byte) (*Signature, error) {
	if len(b) < len(sshsigMagic)+4 || string(b[:len(sshsigMagic)]) != sshsigMagic {
		return nil, fmt.Errorf("ssh signature: no SSHSIG magic: %w", ErrFormat)
	}
	if v := binary.BigEndian.Uint32(b[len(sshsigMagic):]); v != sshsigVersion {
		return nil, fmt.Errorf("ssh signature: version %d not supported: %w", v, ErrFormat)
	}
	r := &reader{b: b[len(sshsigMagic)+4:]}
	pub, ns, reserved, alg, sigBlob := r.string("public key"), r.string("namespace"), r.string("reserved"), r.string("hash algorithm"), r.string("signature")
	if r.err != nil {
		return nil, r.err
	}
	if len(reserved) != 0 {
		return nil, fmt.Errorf("ssh signature: reserved field is not empty: %w", ErrFormat)
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("ssh signature: %d bytes of trailing data: %w", len(r.b), ErrFormat)
	}
	key, err := ssh.ParsePublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("ssh signature: public key: %v: %w", err, ErrFormat)
	}
	if _, ok := key.(*ssh.Certificate); ok {
		return nil, fmt.Errorf("ssh signature: signed by a certificate, which is not supported: %w", ErrFormat)
	}
	s := &Signature{PublicKey: key, Namespace: string(ns), HashAlg: string(alg), Signature: new(ssh.Signature)}
	if s.HashAlg != "sha512" && s.HashAlg != "sha256" {
		return nil, fmt.Errorf("ssh signature: hash algorithm %q not supported: %w", s.HashAlg, ErrFormat)
	}
	// ssh.Signature is two wire strings (format, blob), possibly followed
	// by the rest of a security-key signature, which is not supported.
	sr := &reader{b: sigBlob}
	f, blob := sr.string("signature format"), sr.string("signature blob")
	if sr.err != nil {
		return nil, sr.err
	}
	if len(sr.b) != 0 {
		return nil, fmt.Errorf("ssh signature: %s signature has %d extra bytes (security keys are not supported): %w", f, len(sr.b), ErrFormat)
	}
	s.Signature.Format, s.Signature.Blob = string(f), blob
	return s, nil
}

// armor encodes b between begin and end lines, base64 in lines of armorWidth.
func armor(w *bytes.Buffer, begin, end string, b []byte) {
	w.WriteString(begin + "\n")
	e := base64.StdEncoding.EncodeToString(b)
	for len(e) > armorWidth {
		w.WriteString(e[:armorWidth] + "\n")
		e = e[armorWidth:]
	}
	if e != "" {
		w.WriteString(e + "\n")
	}
	w.WriteString(end + "\n")
}

// dearmor finds the block between begin and end in text and decodes it;
// ok is false if there is no begin line.
func dearmor(text, begin, end string) (b []byte, rest string, ok bool, err error) {
	i := strings.Index(text, begin)
	if i < 0 {
		return nil, text, false, nil
	}
	body := text[i+len(begin):]
	j := strings.Index(body, end)
	if j < 0 {
		return nil, "", true, fmt.Errorf("%s without %s: %w", begin, end, ErrFormat)
	}
	rest = body[j+len(end):]
	body = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, body[:j])
	b, err = base64.StdEncoding.DecodeString(body)
	if err != nil {
		return nil, "", true, fmt.Errorf("%s: bad base64: %v: %w", begin, err, ErrFormat)
	}
	return b, rest, true, nil
}

// File is a signature file: the SSH signature and, if it carries one, the
// signed digest.
type File struct {
	Signature *Signature
	Digest    []byte // nil if the file has none
}

// Marshal returns the text of f: the armored signature, then the armored
// digest if f has one.
func (f *File) Marshal() []byte {
	var b bytes.Buffer
	armor(&b, armorBegin, armorEnd, f.Signature.Marshal())
	if f.Digest != nil {
		armor(&b, digestBegin, digestEnd, f.Digest)
	}
	return b.Bytes()
}

// ParseFile decodes a signature file. The armored signature must come
// first; an armored signed digest may follow.
func ParseFile(b []byte) (*File, error) {
	if len(b) > maxSigFile {
		return nil, fmt.Errorf("signature file: %d bytes is too large: %w", len(b), ErrFormat)
	}
	text := string(b)
	if !strings.HasPrefix(strings.TrimLeft(text, " \t\r\n"), armorBegin) {
		return nil, fmt.Errorf("signature file: does not start with %s: %w", armorBegin, ErrFormat)
	}
	blob, rest, _, err := dearmor(text, armorBegin, armorEnd)
	if err != nil {
		return nil, fmt.Errorf("signature file: %w", err)
	}
	sig, err := ParseSignature(blob)
	if err != nil {
		return nil, err
	}
	f := &File{Signature: sig}
	d, rest, ok, err := dearmor(rest, digestBegin, digestEnd)
	if err != nil {
		return nil, fmt.Errorf("signature file: %w", err)
	}
	if ok {
		if strings.TrimSpace(rest) != "" {
			return nil, fmt.Errorf("signature file: text after the signed digest: %w", ErrFormat)
		}
		if d == nil {
			d = []byte{}
		}
		f.Digest = d
	}
	return f, nil
}

// MaxFileSize is the largest signature file that can belong to an image
// of the given number of sections: 64 KiB for the armored SSH signature
// (a 16384-bit RSA one takes under 4 KiB) and twice the signed digest,
// which the file carries in base64. Readers of signatures fetched from
// where the image is stored bound what they read with it.
func MaxFileSize(sections int) int64 {
	return 64<<10 + 2*int64(digestHeaderSize+digestRecordSize2*max(sections, 0))
}

// ReadFile reads and decodes a signature file from r.
func ReadFile(r io.Reader) (*File, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxSigFile+1))
	if err != nil {
		return nil, fmt.Errorf("signature file: %w", err)
	}
	return ParseFile(b)
}

package imagesig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/godwarfs/godwarfs/block"
)

// LoadSigner reads an unencrypted private key file in any format
// ssh.ParsePrivateKey reads (OpenSSH, PKCS#1, PKCS#8, SEC 1).
func LoadSigner(path string) (ssh.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	s, err := ssh.ParsePrivateKey(b)
	if err != nil {
		var pm *ssh.PassphraseMissingError
		if errors.As(err, &pm) {
			return nil, fmt.Errorf("signing key %s is encrypted, which is not supported (sign with ssh-keygen -Y sign instead): %w", path, err)
		}
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	return s, nil
}

// SignImage signs im's digest with signer and returns the signature file,
// which carries the digest. Computing the digest reads every section
// whose sum known does not hold (see ManifestWithSums), on GOMAXPROCS
// goroutines.
func SignImage(im *block.Image, signer ssh.Signer, known map[[32]byte][32]byte) (*File, error) {
	m, err := ManifestWithSums(im, runtime.GOMAXPROCS(0), known)
	if err != nil {
		return nil, err
	}
	d := m.Marshal()
	sig, err := Sign(signer, Namespace, d)
	if err != nil {
		return nil, err
	}
	return &File{Signature: sig, Digest: d}, nil
}

// SignPath signs the image file at path (searching for it behind any
// header) and writes the signature file to sigPath (path+".sig" if empty),
// atomically; known are sums computed when the image was written, if any
// (see ManifestWithSums).
func SignPath(path, sigPath string, signer ssh.Signer, known map[[32]byte][32]byte) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	// The digest reads the lazy headers in parallel.
	im, err := block.OpenImage(f, st.Size(), block.Options{ImageOffset: -1, Name: path, LazyHeaders: true})
	if err != nil {
		return err
	}
	sf, err := SignImage(im, signer, known)
	if err != nil {
		return err
	}
	if sigPath == "" {
		sigPath = path + ".sig"
	}
	return WriteFileAtomic(sigPath, sf.Marshal())
}

// WriteFileAtomic writes data to a temporary file beside path and renames
// it into place, so that path is either the old file or the whole new one.
func WriteFileAtomic(path string, data []byte) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Result says who signed a verified image.
type Result struct {
	Signer      *AllowedSigner
	Fingerprint string // SHA256:... of the signing key
	KeyType     string
	// Manifest is the signed (and, after VerifyImage, checked) description
	// of the image's sections.
	Manifest *Manifest
}

func (r *Result) String() string {
	return fmt.Sprintf("good signature by %s with %s key %s", r.Signer.Principals, r.KeyType, r.Fingerprint)
}

// VerifyHeaders checks the signature file f over im's section headers: the
// signature must be good and by a key as allows at now, and the headers
// must match the signed digest. When f carries the digest, no section
// data is read; when it does not (a signature made by ssh-keygen), the
// digest of the image is computed to check the signature against: the
// version 1 digest from the headers, and if the signature is not over
// that one, the version 2 digest, which reads every section. A version 2
// digest's sums are given to im (block.Image.ExpectSums), which must not
// be shared yet.
func VerifyHeaders(im *block.Image, f *File, as AllowedSigners, now time.Time) (*Result, error) {
	got, err := ManifestOf(im)
	if err != nil {
		return nil, err
	}
	msg := f.Digest
	if msg == nil {
		msg = got.Marshal()
		if f.Signature.Verify(Namespace, msg) != nil && as.hasKey(f.Signature.PublicKey) {
			// Perhaps over the version 2 digest: worth reading the
			// image for only when the key could be allowed.
			got2, err := ManifestWithSums(im, runtime.GOMAXPROCS(0), nil)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", im.Name(), err)
			}
			if m2 := got2.Marshal(); f.Signature.Verify(Namespace, m2) == nil {
				got, msg = got2, m2
			}
		}
	}
	a, err := as.Verify(f.Signature, Namespace, msg, now)
	if err != nil {
		if f.Digest == nil {
			return nil, fmt.Errorf("%s: %w (the signature file carries no signed digest, so the differing section cannot be named)", im.Name(), err)
		}
		return nil, fmt.Errorf("%s: %w", im.Name(), err)
	}
	want := got
	if f.Digest != nil {
		if want, err = ParseDigest(f.Digest); err != nil {
			return nil, fmt.Errorf("%s: %w", im.Name(), err)
		}
		if err := Compare(want, got); err != nil {
			if ie := im.IndexError(); ie != nil && want.HasIndex && len(want.Sections) == len(got.Sections) {
				// The index was unreadable and the sections were found by
				// walking the headers: that is the damage to report.
				n := len(want.Sections) - 1
				return nil, fmt.Errorf("%s: section %d (%s): %w, signed with a valid index (%w)", im.Name(), n, block.SectionIndex, ie, ErrMismatch)
			}
			return nil, fmt.Errorf("%s: %w", im.Name(), err)
		}
	}
	if err := expectSums(im, want); err != nil {
		return nil, err
	}
	return &Result{Signer: a, Fingerprint: ssh.FingerprintSHA256(f.Signature.PublicKey), KeyType: f.Signature.PublicKey.Type(), Manifest: want}, nil
}

// expectSums gives im the sums of a version 2 digest, once it matched.
func expectSums(im *block.Image, m *Manifest) error {
	if sums := m.Sums(); sums != nil {
		if err := im.ExpectSums(sums); err != nil {
			return fmt.Errorf("%w: %w", err, ErrMismatch)
		}
	}
	return nil
}

// VerifyLazy is VerifyHeaders for an image opened with lazy headers
// (block.Options.LazyHeaders) that reads none of the pending ones: when f
// carries the signed digest, the signature is checked over it and what is
// known at open (the format, the section index, the offsets and lengths
// of all sections, the headers already read) is compared with it, and
// each pending header is compared with its signed record when it is first
// read (block.Image.ExpectHeaders), failing that section. Opening a large
// image then reads no more than without a signature. Without the digest
// (a signature made by ssh-keygen) it is VerifyHeaders. im must not be
// shared yet.
func VerifyLazy(im *block.Image, f *File, as AllowedSigners, now time.Time) (*Result, error) {
	if f.Digest == nil || im.V1() {
		return VerifyHeaders(im, f, as, now)
	}
	a, err := as.Verify(f.Signature, Namespace, f.Digest, now)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", im.Name(), err)
	}
	want, err := ParseDigest(f.Digest)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", im.Name(), err)
	}
	secs := im.Sections()
	got := &Manifest{Major: im.Major(), Minor: im.Minor(), HasIndex: im.HasSectionIndex()}
	for i, s := range secs {
		r := recordOf(s)
		if s.Pending() && i < len(want.Sections) {
			// Checked when read; the rest is the index's, known now.
			r.Compression, r.SHA512_256 = want.Sections[i].Compression, want.Sections[i].SHA512_256
		} else if s, err = im.Header(s); err != nil {
			return nil, err
		} else {
			r = recordOf(s)
		}
		got.Sections = append(got.Sections, r)
		got.End = max(got.End, s.End())
	}
	if err := Compare(want, got); err != nil {
		if ie := im.IndexError(); ie != nil && want.HasIndex && len(want.Sections) == len(got.Sections) {
			n := len(want.Sections) - 1
			return nil, fmt.Errorf("%s: section %d (%s): %w, signed with a valid index (%w)", im.Name(), n, block.SectionIndex, ie, ErrMismatch)
		}
		return nil, fmt.Errorf("%s: %w", im.Name(), err)
	}
	im.ExpectHeaders(func(s block.Section) error {
		if err := compareRecord(s.Index, want.Sections[s.Index], recordOf(s)); err != nil {
			return fmt.Errorf("%s: %w", im.Name(), err)
		}
		return nil
	})
	if err := expectSums(im, want); err != nil {
		return nil, err
	}
	return &Result{Signer: a, Fingerprint: ssh.FingerprintSHA256(f.Signature.PublicKey), KeyType: f.Signature.PublicKey.Type(), Manifest: want}, nil
}

// VerifyImage is VerifyHeaders followed by a check of every section's data
// against its SHA-512/256, on workers goroutines; an error names the first
// bad section.
func VerifyImage(im *block.Image, f *File, as AllowedSigners, now time.Time, workers int) (*Result, error) {
	res, err := VerifyHeaders(im, f, as, now)
	if err != nil {
		return nil, err
	}
	if err := VerifyData(im, workers); err != nil {
		return nil, err
	}
	return res, nil
}

// VerifyData hashes every section of im and compares it with the
// signed BLAKE3 (a version 2 digest) or else the SHA-512/256 in its
// header; the error names the first bad section.
func VerifyData(im *block.Image, workers int) error {
	secs := im.Sections()
	errs := make([]error, len(secs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(secs) {
					return
				}
				if errs[i] = im.VerifyFull(secs[i]); errs[i] != nil {
					next.Store(int64(len(secs)))
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

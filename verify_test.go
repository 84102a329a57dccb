package godwarfs_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/imagesig"
	"github.com/godwarfs/godwarfs/internal/tamper"
	"github.com/godwarfs/godwarfs/internal/testimage"
)

// mutableReader is an image in memory that a test may change after it is
// opened, as a file could be changed under a reader.
type mutableReader struct {
	mu sync.Mutex
	b  []byte
}

func (m *mutableReader) ReadAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if off >= int64(len(m.b)) {
		return 0, io.EOF
	}
	n := copy(p, m.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// signedSpread returns a Spread image (stored blocks), its signature file
// and allowed signers naming the key.
func signedSpread(t *testing.T) (*testimage.Spread, []byte, imagesig.AllowedSigners) {
	t.Helper()
	sp, err := testimage.NewSpread("null", 3000)
	if err != nil {
		t.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	bi, err := block.OpenImage(bytes.NewReader(sp.Image), int64(len(sp.Image)), block.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sf, err := imagesig.SignImage(bi, signer, nil)
	if err != nil {
		t.Fatal(err)
	}
	as, err := imagesig.ParseAllowedSigners(strings.NewReader("owner "+string(ssh.MarshalAuthorizedKey(signer.PublicKey()))), nil)
	if err != nil {
		t.Fatal(err)
	}
	return sp, sf.Marshal(), as
}

func TestOpenVerified(t *testing.T) {
	sp, sig, as := signedSpread(t)
	for _, lazy := range []bool{false, true} {
		im, err := godwarfs.OpenReaderAt(bytes.NewReader(sp.Image), int64(len(sp.Image)), "signed.dwarfs",
			&godwarfs.Options{LazyBlockCheck: lazy, Verify: &godwarfs.Verify{AllowedSigners: as, Signature: sig}})
		if err != nil {
			t.Fatal(err)
		}
		s := im.Signer()
		if s == nil || s.Principals != "owner" || s.KeyType != ssh.KeyAlgoED25519 || s.DigestVersion != imagesig.DigestVersion ||
			!strings.HasPrefix(s.String(), "good signature by owner with ssh-ed25519 key SHA256:") {
			t.Fatalf("Signer() = %+v", s)
		}
		for name, want := range sp.Files {
			got, err := im.ReadFile(name)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: %v", name, err)
			}
		}
		im.Close()
	}
}

func TestOpenVerifiedRefuses(t *testing.T) {
	sp, sig, as := signedSpread(t)
	_, _, others := signedSpread(t)
	meta := func() block.Section {
		bi, _ := block.OpenImage(bytes.NewReader(sp.Image), int64(len(sp.Image)), block.Options{})
		return bi.Find(block.SectionMetadata)[0]
	}()
	for _, tc := range []struct {
		name    string
		img     func([]byte) []byte
		sig     []byte
		allowed godwarfs.SignatureVerifier
		want    string
		is      error // nil: the error need only say want
	}{
		{"unsigned", nil, nil, as, "no signature", imagesig.ErrUnsigned},
		{"garbage signature", nil, []byte("not a signature"), as, "signature", imagesig.ErrFormat},
		{"other signers", nil, sig, others, "not an allowed signer", imagesig.ErrSignature},
		{"no verifier", nil, sig, nil, "no allowed signers were given", nil},
		{"metadata changed", func(b []byte) []byte { b[meta.DataOffset+1] ^= 1; return b }, sig, as, "(METADATA_V2)", block.ErrChecksum},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := bytes.Clone(sp.Image)
			if tc.img != nil {
				img = tc.img(img)
			}
			_, err := godwarfs.OpenReaderAt(bytes.NewReader(img), int64(len(img)), "signed.dwarfs",
				&godwarfs.Options{Verify: &godwarfs.Verify{AllowedSigners: tc.allowed, Signature: tc.sig}})
			if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q (%v)", err, tc.want, tc.is)
			}
		})
	}
}

// TestVerifiedReadsNoChangedBytes: a stored block changed after open (the
// file rewritten under the reader) fails the reads that need it, naming
// the section, where an unverified image returns the changed bytes.
func TestVerifiedReadsNoChangedBytes(t *testing.T) {
	sp, sig, as := signedSpread(t)
	bi, _ := block.OpenImage(bytes.NewReader(sp.Image), int64(len(sp.Image)), block.Options{})
	b1 := bi.Blocks()[1]
	for _, verify := range []bool{false, true} {
		m := &mutableReader{b: bytes.Clone(sp.Image)}
		o := &godwarfs.Options{NoCheck: true}
		if verify {
			o.Verify = &godwarfs.Verify{AllowedSigners: as, Signature: sig}
		}
		im, err := godwarfs.OpenReaderAt(m, int64(len(m.b)), "signed.dwarfs", o)
		if err != nil {
			t.Fatal(err)
		}
		m.mu.Lock()
		m.b[b1.DataOffset+5] ^= 0x20
		m.mu.Unlock()
		got, err := im.ReadFile("b") // b lives in block 1
		switch {
		case verify && (err == nil || !strings.Contains(err.Error(), "section 1 (BLOCK)")):
			t.Fatalf("verified: read gave %v", err)
		case !verify && (err != nil || bytes.Equal(got, sp.Files["b"])):
			t.Fatalf("unverified: expected the changed bytes, got err %v", err)
		}
		if got, err := im.ReadFile("a"); err != nil || !bytes.Equal(got, sp.Files["a"]) {
			t.Fatalf("file a (block 0) after block 1 changed: %v", err)
		}
		im.Close()
	}
}

// TestOpenVerifiedTampered runs the shared table of changes (package
// tamper) through OpenReaderAt with Verify, reading every block's header
// at open and, as mounts and remote opens do, when the block is first
// used: the image is refused, or the files that need a changed block fail
// naming it and the others read unchanged.
func TestOpenVerifiedTampered(t *testing.T) {
	sp, sig, as := signedSpread(t)
	_, _, strangers := signedSpread(t)
	cases, err := tamper.Cases(sp.Image)
	if err != nil {
		t.Fatal(err)
	}
	for _, lazy := range []bool{false, true} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("lazy=%v/%s", lazy, tc.Name), func(t *testing.T) {
				img := tc.Change(bytes.Clone(sp.Image))
				v := &godwarfs.Verify{AllowedSigners: as, Signature: sig}
				if tc.Stranger {
					v.AllowedSigners = strangers
				}
				im, err := godwarfs.OpenReaderAt(bytes.NewReader(img), int64(len(img)), "signed.dwarfs",
					&godwarfs.Options{LazyBlockCheck: lazy, Verify: v})
				bad := tc.BadBlocks
				if lazy && tc.LazyBadBlocks != nil {
					bad = tc.LazyBadBlocks
				} else if tc.OpenFails {
					if err == nil {
						im.Close()
						t.Fatal("opened")
					}
					if tc.Want != "" && !strings.Contains(err.Error(), tc.Want) {
						t.Fatalf("error %q does not say %q", err, tc.Want)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				defer im.Close()
				for name, want := range sp.Files {
					broken := false
					for _, b := range bad {
						broken = broken || sp.NeedsBlock(name, b)
					}
					got, err := im.ReadFile(name)
					switch {
					case broken && (err == nil || !strings.Contains(err.Error(), "section ")):
						t.Errorf("%s needs a changed block: %v", name, err)
					case !broken && (err != nil || !bytes.Equal(got, want)):
						t.Errorf("%s: %v", name, err)
					}
				}
			})
		}
	}
}

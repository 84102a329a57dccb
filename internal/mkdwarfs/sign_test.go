package mkdwarfs

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/imagesig"
	"github.com/godwarfs/godwarfs/internal/cli"
)

// TestSignOutput: --sign signs what every kind of run writes (build,
// recompress, append, merge), and the signature verifies.
func TestSignOutput(t *testing.T) {
	dir := t.TempDir()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "key")
	if err := os.WriteFile(key, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	as, err := imagesig.ParseAllowedSigners(strings.NewReader("ci "+string(ssh.MarshalAuthorizedKey(signer.PublicKey()))), nil)
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "src")
	os.MkdirAll(filepath.Join(src, "d"), 0o755)
	os.WriteFile(filepath.Join(src, "a.txt"), []byte(strings.Repeat("hello signed world\n", 1000)), 0o644)
	os.WriteFile(filepath.Join(src, "d", "b.bin"), bytes.Repeat([]byte{1, 2, 3, 5, 8}, 4000), 0o644)
	more := filepath.Join(dir, "more")
	os.MkdirAll(more, 0o755)
	os.WriteFile(filepath.Join(more, "c.txt"), []byte("appended\n"), 0o644)

	img := filepath.Join(dir, "img.dwarfs")
	header := filepath.Join(dir, "header")
	os.WriteFile(header, []byte("#!/bin/sh\nexit 0\n"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		out  string
	}{
		{"build", []string{"-i", src, "-o", img, "-l", "1", "--header", header}, img},
		{"recompress", []string{"-i", img, "-o", filepath.Join(dir, "re.dwarfs"), "--recompress", "-l", "0"}, filepath.Join(dir, "re.dwarfs")},
		{"append", []string{"-i", img, "--append", more, "-o", filepath.Join(dir, "app.dwarfs")}, filepath.Join(dir, "app.dwarfs")},
		{"merge", []string{"--merge", img, filepath.Join(dir, "re.dwarfs"), "-o", filepath.Join(dir, "merged.dwarfs")}, filepath.Join(dir, "merged.dwarfs")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			args := append(tc.args, "--sign", key, "--log-level", "info", "--progress", "none")
			if code := Main(context.Background(), append([]string{"mkdwarfs"}, args...), cli.Stdio{Out: &bytes.Buffer{}, Err: &stderr}); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), "signed "+tc.out+" with ecdsa-sha2-nistp256 key") {
				t.Errorf("no signing message in %q", stderr.String())
			}
			b, err := os.ReadFile(tc.out + ".sig")
			if err != nil {
				t.Fatal(err)
			}
			sf, err := imagesig.ParseFile(b)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(tc.out)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, _ := f.Stat()
			im, err := block.OpenImage(f, st.Size(), block.Options{ImageOffset: -1})
			if err != nil {
				t.Fatal(err)
			}
			// The sums the writer computed are the ones read back.
			if d, err := imagesig.Digest(im, 2); err != nil || !bytes.Equal(d, sf.Digest) {
				t.Fatalf("signed digest differs from the image's (%v)", err)
			}
			if res, err := imagesig.VerifyImage(im, sf, as, time.Now(), 2); err != nil || res.Manifest.Version != 2 {
				t.Fatalf("verify: %v", err)
			}
		})
	}
}

func TestSignOptionErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-i", dir, "-o", "-", "--sign", "key"}, "standard output"},
		{[]string{"-i", dir, "-o", filepath.Join(dir, "x.dwarfs"), "--sign", filepath.Join(dir, "missing")}, "signing key"},
	} {
		var stderr bytes.Buffer
		if code := Main(context.Background(), append([]string{"mkdwarfs"}, tc.args...), cli.Stdio{Out: &bytes.Buffer{}, Err: &stderr}); code != 1 || !strings.Contains(stderr.String(), tc.msg) {
			t.Errorf("%q: exit %d, %q", tc.args, code, stderr.String())
		}
		if _, err := os.Stat(filepath.Join(dir, "x.dwarfs")); err == nil {
			t.Errorf("%q: an image was written", tc.args)
		}
	}
}

//go:build linux && !386 && !arm

package fusefs_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/dwarfs"
	"github.com/godwarfs/godwarfs/internal/dwarfsck"
	"github.com/godwarfs/godwarfs/internal/mountopts"
	"github.com/godwarfs/godwarfs/internal/remotetest"
	"github.com/godwarfs/godwarfs/internal/signtest"
	"github.com/godwarfs/godwarfs/internal/tamper"
	"github.com/godwarfs/godwarfs/internal/testimage"
)

// signedSources is a signed Spread image, and changed copies of it, each
// with the signature beside it (NAME.sig), stored in a directory, served
// by nginx and uploaded to SeaweedFS.
type signedSources struct {
	sp                 *testimage.Spread
	dir                string
	allowed, strangers string
	srcs               []imageSource
}

type imageSource struct {
	name string
	loc  func(file string) string // where file (a name in dir) is
}

const sigBucket = "signed"

func newSignedSources(t *testing.T) *signedSources {
	t.Helper()
	sp, err := testimage.NewSpread("null", 3000)
	if err != nil {
		t.Fatal(err)
	}
	s := &signedSources{sp: sp, dir: t.TempDir()}
	img := filepath.Join(s.dir, "signed.dwarfs")
	if err := os.WriteFile(img, sp.Image, 0o644); err != nil {
		t.Fatal(err)
	}
	s.allowed, _ = signtest.SignImage(t, img, "", "builder@example.org")
	// Another key's allowed signers file, made the same way.
	other := filepath.Join(t.TempDir(), "other.dwarfs")
	os.WriteFile(other, sp.Image, 0o644)
	s.strangers, _ = signtest.SignImage(t, other, "", "mallory")
	return s
}

// add stores a copy of the signed image as name, changed by change, with
// the signature beside it.
func (s *signedSources) add(t *testing.T, name string, change func([]byte) []byte) {
	t.Helper()
	sig, err := os.ReadFile(filepath.Join(s.dir, "signed.dwarfs.sig"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, name), change(bytes.Clone(s.sp.Image)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, name+".sig"), sig, 0o644); err != nil {
		t.Fatal(err)
	}
}

// serve starts nginx and SeaweedFS over the directory as it is now.
func (s *signedSources) serve(t *testing.T) {
	t.Helper()
	ng := remotetest.Nginx(t, s.dir)
	w := remotetest.SeaweedFS(t)
	w.Bucket(t, sigBucket)
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".dwarfs") || strings.HasSuffix(e.Name(), ".sig") {
			w.Upload(t, sigBucket, e.Name(), filepath.Join(s.dir, e.Name()))
		}
	}
	w.Env(t)
	s.srcs = []imageSource{
		{"local", func(f string) string { return filepath.Join(s.dir, f) }},
		{"http", func(f string) string { return ng.URL + "/" + f }},
		{"s3", func(f string) string { return "s3://" + sigBucket + "/" + f }},
	}
}

// mountVerified opens loc as dwarfs -o verify=allowed,OPTS does and mounts
// it; the error is the open's.
func mountVerified(t *testing.T, loc, allowed, opts string) (string, error) {
	t.Helper()
	all := "verify=" + allowed
	if opts != "" {
		all += "," + opts
	}
	o := mountopts.Defaults()
	if err := o.ParseString(all); err != nil {
		t.Fatal(err)
	}
	src, closer, err := dwarfs.OpenImage(loc, o)
	if err != nil {
		return "", err
	}
	t.Cleanup(func() { closer.Close() })
	return mountSrc(t, src, all).Dir(), nil
}

// checkReads reads every file of the Spread image at mnt: files that need
// a block of bad fail with EIO, the others read back unchanged.
func (s *signedSources) checkReads(t *testing.T, mnt string, bad []int) {
	t.Helper()
	for name, want := range s.sp.Files {
		got, err := os.ReadFile(filepath.Join(mnt, name))
		broken := false
		for _, b := range bad {
			broken = broken || s.sp.NeedsBlock(name, b)
		}
		switch {
		case broken && !errors.Is(err, syscall.EIO):
			t.Errorf("%s needs a changed block: read gave %d bytes, error %v, want EIO", name, len(got), err)
		case !broken && err != nil:
			t.Errorf("%s: %v", name, err)
		case !broken && !bytes.Equal(got, want):
			t.Errorf("%s: content differs", name)
		}
	}
}

// TestVerifyTamperedSources runs the shared table of changes to a signed
// image (package tamper) with the image stored locally, served by nginx
// and in SeaweedFS, the signature beside it (IMAGE.sig, the default for
// every source): dwarfsck --verify fails with exit 1 naming the section,
// and a -o verify mount either refuses the image or reads every file that
// needs no changed block unchanged and fails the others with EIO (a
// changed block header too: the mount compares it with the signed digest
// when it first reads it).
func TestVerifyTamperedSources(t *testing.T) {
	requireFuse(t)
	s := newSignedSources(t)
	cases, err := tamper.Cases(s.sp.Image)
	if err != nil {
		t.Fatal(err)
	}
	file := func(i int) string { return fmt.Sprintf("case%02d.dwarfs", i) }
	for i, tc := range cases {
		s.add(t, file(i), tc.Change)
	}
	s.serve(t)
	for _, src := range s.srcs {
		t.Run(src.name, func(t *testing.T) {
			loc := src.loc("signed.dwarfs")
			// Unchanged: verified, every file reads.
			rc, out, errs := runDwarfsck("--verify="+s.allowed, loc)
			if rc != 0 || !strings.Contains(out, "good signature by builder@example.org") {
				t.Fatalf("dwarfsck --verify %s: exit %d: %s%s", loc, rc, out, errs)
			}
			mnt, err := mountVerified(t, loc, s.allowed, "")
			if err != nil {
				t.Fatalf("-o verify %s: %v", loc, err)
			}
			s.checkReads(t, mnt, nil)

			for i, tc := range cases {
				t.Run(strings.ReplaceAll(tc.Name, " ", "_"), func(t *testing.T) {
					loc := src.loc(file(i))
					allowed, want := s.allowed, tc.Want
					if tc.Stranger {
						allowed = s.strangers
					}
					if want == "" {
						want = "section "
					}
					rc, _, errs := runDwarfsck("--verify="+allowed, loc)
					if rc != dwarfsck.ExitImage || !strings.Contains(errs, want) {
						t.Errorf("dwarfsck --verify: exit %d, stderr %q, want exit %d and %q", rc, errs, dwarfsck.ExitImage, want)
					}
					mnt, err := mountVerified(t, loc, allowed, "")
					bad := tc.BadBlocks
					if tc.LazyBadBlocks != nil {
						// Mounts read block headers when they first
						// use the block.
						bad = tc.LazyBadBlocks
					} else if tc.OpenFails {
						if err == nil {
							t.Fatal("-o verify mounted the changed image")
						}
						if tc.Want != "" && !strings.Contains(err.Error(), tc.Want) {
							t.Errorf("-o verify refused it, but the error does not say %q: %v", tc.Want, err)
						}
						return
					}
					if err != nil {
						t.Fatalf("-o verify: %v", err)
					}
					s.checkReads(t, mnt, bad)
				})
			}
		})
	}
}

func runDwarfsck(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	rc := dwarfsck.Main(context.Background(), append([]string{"dwarfsck"}, args...), cli.Stdio{Out: &out, Err: &errb})
	return rc, out.String(), errb.String()
}

// TestVerifySignatureLocation: a missing IMAGE.sig is an error naming
// where it was looked for, on every source, never an unverified mount;
// signature= and --signature take a path or a URL of any source.
func TestVerifySignatureLocation(t *testing.T) {
	requireFuse(t)
	s := newSignedSources(t)
	s.add(t, "unsigned.dwarfs", func(b []byte) []byte { return b })
	os.Remove(filepath.Join(s.dir, "unsigned.dwarfs.sig"))
	// The signature under another name, beside a copy without one.
	sig, _ := os.ReadFile(filepath.Join(s.dir, "signed.dwarfs.sig"))
	os.WriteFile(filepath.Join(s.dir, "elsewhere.sig"), sig, 0o644)
	// Too large to be a signature of this image.
	os.WriteFile(filepath.Join(s.dir, "huge.sig"), bytes.Repeat(sig, 200), 0o644)
	s.serve(t)
	for _, src := range s.srcs {
		t.Run(src.name, func(t *testing.T) {
			loc := src.loc("unsigned.dwarfs")
			want := src.loc("unsigned.dwarfs.sig")
			_, err := mountVerified(t, loc, s.allowed, "")
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("-o verify without a signature: %v, want an error naming %s", err, want)
			} else if src.name != "local" && !strings.Contains(err.Error(), "404") {
				t.Errorf("-o verify without a signature: %v does not say the server answered 404", err)
			}
			if rc, _, errs := runDwarfsck("--verify="+s.allowed, loc); rc != dwarfsck.ExitImage || !strings.Contains(errs, want) {
				t.Errorf("dwarfsck --verify without a signature: exit %d: %s", rc, errs)
			}
			// The signature named, on each source, for an image on this one.
			for _, sigSrc := range s.srcs {
				sl := sigSrc.loc("elsewhere.sig")
				mnt, err := mountVerified(t, loc, s.allowed, "signature="+sl)
				if err != nil {
					t.Errorf("signature=%s: %v", sl, err)
					continue
				}
				s.checkReads(t, mnt, nil)
				if rc, out, errs := runDwarfsck("--verify="+s.allowed, "--signature="+sl, loc); rc != 0 {
					t.Errorf("dwarfsck --signature=%s: exit %d: %s%s", sl, rc, out, errs)
				}
			}
			huge := src.loc("huge.sig")
			if _, err := mountVerified(t, loc, s.allowed, "signature="+huge); err == nil || !strings.Contains(err.Error(), "too large") {
				t.Errorf("signature=%s (%d bytes): %v, want too large", huge, 200*len(sig), err)
			}
		})
	}
}

// TestVerifyDiskCache: a block served from the disk cache is checked
// like one fetched: a cache entry changed (its own checksum recomputed,
// as by someone who can write the cache directory) fails the reads of
// that block with EIO, and the other files read unchanged.
func TestVerifyDiskCache(t *testing.T) {
	requireFuse(t)
	s := newSignedSources(t)
	s.serve(t)
	cache := t.TempDir()
	loc := s.srcs[1].loc("signed.dwarfs") // http
	opts := "disk_cache=" + cache
	mnt, err := mountVerified(t, loc, s.allowed, opts)
	if err != nil {
		t.Fatal(err)
	}
	s.checkReads(t, mnt, nil) // fills the cache

	bi, err := block.OpenImage(bytes.NewReader(s.sp.Image), int64(len(s.sp.Image)), block.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The image is smaller than the tail fetched at open, so one entry
	// holds it all, and block 0 is read from it.
	b0 := bi.Blocks()[0]
	ents, _ := filepath.Glob(filepath.Join(cache, "*", "*-*-*"))
	changed := 0
	for _, p := range ents {
		var id string
		var off, n int64
		if _, err := fmt.Sscanf(strings.ReplaceAll(filepath.Base(p), "-", " "), "%s %x %x", &id, &off, &n); err != nil {
			continue
		}
		if off > b0.DataOffset || off+n < b0.End() {
			continue
		}
		e, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// The block changed with its header's XXH3, which the signature
		// does not cover, and the entry's own checksum (the last 8 bytes
		// of its 64-byte header) made to match.
		const hdr = 64
		data := e[hdr:]
		data[b0.DataOffset-off+10] ^= 1
		tamper.RehashXXH3(data[:b0.End()-off], b0.HeaderOffset-off)
		binary.LittleEndian.PutUint64(e[hdr-8:], xxh3.Hash(data))
		if err := os.WriteFile(p, e, 0o600); err != nil {
			t.Fatal(err)
		}
		changed++
	}
	if changed != 1 {
		t.Fatalf("%d disk cache entries hold block 0 (bytes %d+%d), want 1: %q", changed, b0.DataOffset, b0.Length, ents)
	}
	mnt, err = mountVerified(t, loc, s.allowed, opts)
	if err != nil {
		t.Fatal(err)
	}
	s.checkReads(t, mnt, []int{0})
	if st := remoteStats(t, mnt); st.DiskHits == 0 {
		t.Errorf("the second mount did not read the disk cache: %+v", st)
	}
	// Unverified, the changed block is served: the check above is the
	// signature's doing.
	o := mountopts.Defaults()
	if err := o.ParseString(opts); err != nil {
		t.Fatal(err)
	}
	src, closer, err := dwarfs.OpenImage(loc, o)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	got, err := os.ReadFile(filepath.Join(mountSrc(t, src, opts).Dir(), "a"))
	if err != nil || bytes.Equal(got, s.sp.Files["a"]) {
		t.Errorf("unverified mount of the changed cache: %v; want the changed bytes", err)
	}
}

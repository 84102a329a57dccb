// Package ociinput reads a container image as the input tree of a build:
// an OCI image layout (oci:DIR[:REF]), a docker save / podman save
// archive (docker-archive:FILE) or an image in a registry
// (docker://REGISTRY/REPO:TAG or @DIGEST). The image's layers apply one
// over the other (tarinput.Layers); each layer's blob digest and its
// uncompressed digest (the config's diff ID) are checked as it is read.
//
// Manifests, indexes, archives and registry access (anonymous, basic and
// bearer-token auth, credentials from the docker or podman auth files)
// are go-containerregistry's; the layers' tar streams are decoded here,
// once, by the same decoders as a tar input.
package ociinput

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/godwarfs/godwarfs/tarinput"
)

// Options configure Open.
type Options struct {
	// Platform is OS/ARCH[/VARIANT], picked from a multi-platform index
	// ("": the host's).
	Platform string
	// Tar configures the spill of decoded layer data.
	Tar tarinput.Options
	// Transport carries registry requests (nil: go-containerregistry's
	// default, which honours the proxy variables).
	Transport http.RoundTripper
}

// Is tells whether an input names a container image.
func Is(input string) bool {
	return strings.HasPrefix(input, "oci:") || strings.HasPrefix(input, "docker-archive:") || strings.HasPrefix(input, "docker://")
}

// Image is an open container image. Close it after the build.
type Image struct {
	name    string
	config  []byte
	layers  []tarinput.Layer
	src     *tarinput.Layers
	closers []io.Closer
}

// Source is the image's tree, for dedup.Options.Tree.
func (im *Image) Source() *tarinput.Layers { return im.src }

// Config is the image's config blob (JSON: entrypoint, env, user,
// working dir, labels, history, rootfs).
func (im *Image) Config() []byte { return im.config }

// Layers is the number of layers.
func (im *Image) Layers() int { return len(im.layers) }

// Close releases the image's files and decoded data.
func (im *Image) Close() error {
	err := im.src.Close()
	for _, c := range im.closers {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// Open opens the image input names.
func Open(ctx context.Context, input string, opt Options) (*Image, error) {
	want, err := platform(opt.Platform)
	if err != nil {
		return nil, err
	}
	im := &Image{name: input}
	switch {
	case strings.HasPrefix(input, "oci:"):
		err = im.openLayout(ctx, strings.TrimPrefix(input, "oci:"), want, opt.Platform != "")
	case strings.HasPrefix(input, "docker-archive:"):
		err = im.openArchive(strings.TrimPrefix(input, "docker-archive:"), want, opt.Platform != "")
	case strings.HasPrefix(input, "docker://"):
		err = im.openRemote(ctx, strings.TrimPrefix(input, "docker://"), want, opt.Platform != "", opt.Transport)
	default:
		err = errors.New("not a container image (oci:, docker-archive: or docker://)")
	}
	if err != nil {
		for _, c := range im.closers {
			c.Close()
		}
		return nil, fmt.Errorf("input %s: %w", input, err)
	}
	im.src = tarinput.NewLayers(im.layers, opt.Tar)
	return im, nil
}

func platform(s string) (*v1.Platform, error) {
	if s == "" {
		return &v1.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}, nil
	}
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return nil, fmt.Errorf("invalid platform %q (OS/ARCH[/VARIANT])", s)
	}
	p := &v1.Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}

// pick chooses the manifest of platform want from an index.
func pick(m *v1.IndexManifest, want *v1.Platform) (v1.Descriptor, error) {
	var have []string
	for _, d := range m.Manifests {
		if d.Platform == nil {
			continue
		}
		if d.Platform.Satisfies(*want) {
			return d, nil
		}
		have = append(have, d.Platform.String())
	}
	return v1.Descriptor{}, fmt.Errorf("no image for platform %s (the index has: %s)", want, strings.Join(have, ", "))
}

const refName = "org.opencontainers.image.ref.name"

func (im *Image) openLayout(ctx context.Context, spec string, want *v1.Platform, explicit bool) error {
	// As in skopeo, DIR ends at the first colon: REF may be a digest,
	// which has one of its own.
	dir, ref, _ := strings.Cut(spec, ":")
	p, err := layout.FromPath(dir)
	if err != nil {
		return fmt.Errorf("not an OCI image layout: %w", err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return fmt.Errorf("index.json: %w", err)
	}
	var desc v1.Descriptor
	switch {
	case ref != "":
		found := false
		var refs []string
		for _, d := range m.Manifests {
			if d.Digest.String() == ref || d.Annotations[refName] == ref {
				desc, found = d, true
				break
			}
			if r := d.Annotations[refName]; r != "" {
				refs = append(refs, r)
			}
		}
		if !found {
			return fmt.Errorf("no manifest named %q in index.json (it has: %s)", ref, strings.Join(refs, ", "))
		}
	case len(m.Manifests) == 1:
		desc = m.Manifests[0]
	case len(m.Manifests) == 0:
		return errors.New("index.json lists no manifest")
	default:
		if desc, err = pick(m, want); err != nil {
			return fmt.Errorf("index.json has %d manifests; name one (oci:DIR:REF): %w", len(m.Manifests), err)
		}
	}
	var img v1.Image
	if desc.MediaType.IsIndex() {
		sub, err := idx.ImageIndex(desc.Digest)
		if err != nil {
			return fmt.Errorf("index %s: %w", desc.Digest, err)
		}
		sm, err := sub.IndexManifest()
		if err != nil {
			return fmt.Errorf("index %s: %w", desc.Digest, err)
		}
		if desc, err = pick(sm, want); err != nil {
			return err
		}
		img, err = sub.Image(desc.Digest)
		if err != nil {
			return fmt.Errorf("manifest %s: %w", desc.Digest, err)
		}
	} else if img, err = idx.Image(desc.Digest); err != nil {
		return fmt.Errorf("manifest %s: %w", desc.Digest, err)
	}
	blobFile := func(h v1.Hash) string { return filepath.Join(dir, "blobs", h.Algorithm, h.Hex) }
	return im.fromImage(img, want, explicit, func(i int, d v1.Descriptor, diffID v1.Hash, l v1.Layer) error {
		f, err := os.Open(blobFile(d.Digest))
		if err != nil {
			return fmt.Errorf("layer %s: blob missing from the layout: %w", d.Digest, err)
		}
		var head [8]byte
		n, _ := f.ReadAt(head[:], 0)
		if compressed(head[:n]) {
			return f.Close()
		}
		im.closers = append(im.closers, f)
		st, err := f.Stat()
		if err != nil {
			return err
		}
		im.layers[i].File, im.layers[i].Size = f, st.Size()
		return nil
	})
}

func (im *Image) openRemote(ctx context.Context, ref string, want *v1.Platform, explicit bool, tr http.RoundTripper) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithUserAgent("godwarfs")}
	if tr != nil {
		opts = append(opts, remote.WithTransport(tr))
	}
	desc, err := remote.Get(r, opts...)
	if err != nil {
		return err
	}
	var img v1.Image
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return err
		}
		m, err := idx.IndexManifest()
		if err != nil {
			return err
		}
		d, err := pick(m, want)
		if err != nil {
			return err
		}
		if img, err = idx.Image(d.Digest); err != nil {
			return fmt.Errorf("manifest %s: %w", d.Digest, err)
		}
	} else if img, err = desc.Image(); err != nil {
		return err
	}
	return im.fromImage(img, want, explicit, nil)
}

// fromImage sets up the layers of img (a layout's or a registry's),
// checking the config's digest and that it names a diff ID per layer.
func (im *Image) fromImage(img v1.Image, want *v1.Platform, explicit bool, local func(i int, d v1.Descriptor, diffID v1.Hash, l v1.Layer) error) error {
	m, err := img.Manifest()
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	raw, err := img.RawConfigFile()
	if err != nil {
		return fmt.Errorf("config %s: %w", m.Config.Digest, err)
	}
	if sum := sha256.Sum256(raw); m.Config.Digest.Algorithm != "sha256" || m.Config.Digest.Hex != hex.EncodeToString(sum[:]) {
		return fmt.Errorf("config %s: digest mismatch (sha256:%x)", m.Config.Digest, sum)
	}
	cfg, err := v1.ParseConfigFile(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("config %s: %w", m.Config.Digest, err)
	}
	if err := checkPlatform(cfg, want, explicit); err != nil {
		return err
	}
	if len(cfg.RootFS.DiffIDs) != len(m.Layers) {
		return fmt.Errorf("the manifest has %d layers, the config %d diff IDs", len(m.Layers), len(cfg.RootFS.DiffIDs))
	}
	im.config = raw
	for i, d := range m.Layers {
		l, err := img.LayerByDigest(d.Digest)
		if err != nil {
			return fmt.Errorf("layer %s: %w", d.Digest, err)
		}
		d, diffID := d, cfg.RootFS.DiffIDs[i]
		im.layers = append(im.layers, tarinput.Layer{Name: d.Digest.String(), Open: func(context.Context) (io.ReadCloser, error) {
			rc, err := l.Compressed()
			if err != nil {
				return nil, err
			}
			return decode(rc, &d.Digest, d.Size, diffID)
		}})
		if local != nil {
			if err := local(i, d, diffID, l); err != nil {
				return err
			}
		}
	}
	return nil
}

// openArchive reads a docker save archive: manifest.json, the config and
// the layers are members of one tar file; uncompressed layers (as docker
// and podman write them) are read in place.
func (im *Image) openArchive(path string, want *v1.Platform, explicit bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	im.closers = append(im.closers, f)
	members, err := tarMembers(f)
	if err != nil {
		return err
	}
	man, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return io.NopCloser(io.NewSectionReader(f, 0, 1<<62)), nil })
	if err != nil {
		return err
	}
	if len(man) != 1 {
		return fmt.Errorf("manifest.json lists %d images, not one", len(man))
	}
	d := man[0]
	cm, ok := members[clean(d.Config)]
	if !ok {
		return fmt.Errorf("config %s missing from the archive", d.Config)
	}
	raw := make([]byte, cm.size)
	if _, err := f.ReadAt(raw, cm.off); err != nil {
		return fmt.Errorf("config %s: %w", d.Config, err)
	}
	cfg, err := v1.ParseConfigFile(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("config %s: %w", d.Config, err)
	}
	if err := checkPlatform(cfg, want, explicit); err != nil {
		return err
	}
	if len(cfg.RootFS.DiffIDs) != len(d.Layers) {
		return fmt.Errorf("manifest.json has %d layers, the config %d diff IDs", len(d.Layers), len(cfg.RootFS.DiffIDs))
	}
	im.config = raw
	for i, lp := range d.Layers {
		diffID := cfg.RootFS.DiffIDs[i]
		lm, ok := members[clean(lp)]
		if !ok {
			return fmt.Errorf("layer %s (%s) missing from the archive", diffID, lp)
		}
		sec := io.NewSectionReader(f, lm.off, lm.size)
		l := tarinput.Layer{Name: diffID.String(), Open: func(context.Context) (io.ReadCloser, error) {
			return decode(io.NopCloser(io.NewSectionReader(sec, 0, lm.size)), nil, 0, diffID)
		}}
		var head [8]byte
		n, _ := sec.ReadAt(head[:], 0)
		if !compressed(head[:n]) {
			l.File, l.Offset, l.Size = f, lm.off, lm.size
		}
		im.layers = append(im.layers, l)
	}
	return nil
}

// checkPlatform refuses a single-platform image of another platform than
// an explicit --platform (without one, any image is taken).
func checkPlatform(cfg *v1.ConfigFile, want *v1.Platform, explicit bool) error {
	if explicit && (cfg.OS != want.OS || cfg.Architecture != want.Architecture || want.Variant != "" && cfg.Variant != want.Variant) {
		return fmt.Errorf("the image is for %s/%s, not %s", cfg.OS, cfg.Architecture, want)
	}
	return nil
}

func clean(p string) string { return strings.TrimPrefix(filepath.ToSlash(filepath.Clean(p)), "./") }

type member struct{ off, size int64 }

// tarMembers lists the regular members of a tar file with where their
// data is.
func tarMembers(f *os.File) (map[string]member, error) {
	out := map[string]member{}
	pos := &countReader{r: bufio.NewReaderSize(f, 64<<10)}
	tr := tar.NewReader(pos)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the archive: %w", err)
		}
		if hdr.Typeflag == '0' || hdr.Typeflag == 0 {
			out[clean(hdr.Name)] = member{pos.n, hdr.Size}
		}
	}
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func compressed(head []byte) bool {
	return bytes.HasPrefix(head, []byte{0x1f, 0x8b}) || bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd})
}

// checkReader hashes what passes through it and, at the end, fails
// unless the digest (and size, if known) is what it should be.
type checkReader struct {
	r    io.Reader
	h    hash.Hash
	want v1.Hash
	size int64 // -1: unknown
	n    int64
	what string
}

func newCheck(r io.Reader, want v1.Hash, size int64, what string) (*checkReader, error) {
	if want.Algorithm != "sha256" {
		return nil, fmt.Errorf("%s digest %s: unsupported algorithm", what, want)
	}
	return &checkReader{r: r, h: sha256.New(), want: want, size: size, what: what}, nil
}

func (c *checkReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	c.n += int64(n)
	if err == io.EOF {
		if got := hex.EncodeToString(c.h.Sum(nil)); got != c.want.Hex {
			return n, fmt.Errorf("%s digest mismatch: sha256:%s, want %s", c.what, got, c.want)
		}
		if c.size >= 0 && c.n != c.size {
			return n, fmt.Errorf("%s is %d bytes, the manifest says %d", c.what, c.n, c.size)
		}
	}
	return n, err
}

// stream is a layer's decoded tar, checked against its diff ID and, when
// it ends, the blob against its digest.
type stream struct {
	out     io.Reader
	raw     io.Reader
	closers []func() error
}

func (s *stream) Read(p []byte) (int, error) {
	n, err := s.out.Read(p)
	if err != nil {
		// The blob may hold more than the decoder wanted (padding,
		// trailing frames): all of it is the digest's. And a blob that
		// does not decode is better named by its digest check.
		if _, derr := io.Copy(io.Discard, s.raw); derr != nil {
			return n, derr
		}
	}
	return n, err
}

func (s *stream) Close() error {
	var err error
	for _, c := range s.closers {
		if cerr := c(); err == nil {
			err = cerr
		}
	}
	return err
}

// decode returns the decoded stream of a layer blob (gzip, zstd or
// none, told by its first bytes), checked against digest (nil: no blob
// digest, as in a docker save archive) and diffID.
func decode(rc io.ReadCloser, digest *v1.Hash, size int64, diffID v1.Hash) (io.ReadCloser, error) {
	s := &stream{closers: []func() error{rc.Close}}
	var raw io.Reader = rc
	if digest != nil {
		c, err := newCheck(rc, *digest, size, "blob")
		if err != nil {
			rc.Close()
			return nil, err
		}
		raw = c
	}
	br := bufio.NewReaderSize(raw, 1<<20)
	head, _ := br.Peek(4)
	var dec io.Reader = br
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		z, err := gzip.NewReader(br)
		if err != nil {
			rc.Close()
			return nil, fmt.Errorf("gzip: %w", err)
		}
		dec = z
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		z, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(2))
		if err != nil {
			rc.Close()
			return nil, fmt.Errorf("zstd: %w", err)
		}
		dec = z
		s.closers = append(s.closers, func() error { z.Close(); return nil })
	}
	c, err := newCheck(dec, diffID, -1, "uncompressed content (diff ID)")
	if err != nil {
		s.Close()
		return nil, err
	}
	s.out = c
	// What the decoder left in the buffer is still the blob's.
	s.raw = br
	return s, nil
}

// Package ociartifact stores a DwarFS image in a container registry as
// an OCI artifact (image-spec 1.1): a manifest whose artifactType and
// only layer have the media type MediaType, with the empty descriptor
// (application/vnd.oci.empty.v1+json, the two bytes "{}") as its config.
// The layer blob is the image file, byte for byte, so a reader fetches
// ranges of it from /v2/REPO/blobs/DIGEST as it would from a file served
// over HTTP (package source).
//
// Registry access (authentication, uploads, manifests) is
// go-containerregistry's; this package only lays out the artifact and
// finds the image in a manifest.
package ociartifact

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// MediaType is the media type of a DwarFS image blob, and the
// artifactType of a manifest that holds one.
const MediaType = "application/vnd.godwarfs.image.v1+dwarfs"

// SignatureMediaType is the media type of an image's signature file
// (package imagesig), stored as an artifact of its own under the tag
// SignatureRef names.
const SignatureMediaType = "application/vnd.godwarfs.signature.v1"

// what names a media type in messages.
func what(mediaType string) string {
	if mediaType == SignatureMediaType {
		return "DwarFS image signature"
	}
	return "DwarFS image"
}

// Scheme prefixes an image reference: docker://REGISTRY/REPO:TAG or
// docker://REGISTRY/REPO@sha256:DIGEST, as skopeo and podman write it.
const Scheme = "docker://"

// emptyConfig is the OCI empty descriptor's content.
var emptyConfig = []byte("{}")

// ParseReference parses a docker://REGISTRY/REPO:TAG|@DIGEST reference.
// A registry on localhost or a loopback or private address is spoken to
// over plain HTTP, as go-containerregistry decides.
func ParseReference(s string) (name.Reference, error) {
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return nil, fmt.Errorf("%s: not a registry reference (docker://REGISTRY/REPO:TAG or @DIGEST)", s)
	}
	ref, err := name.ParseReference(rest)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	return ref, nil
}

// Image picks the DwarFS image blob of a manifest: its only layer of
// MediaType, or the only layer of a manifest whose artifactType is
// MediaType. The error says what the manifest is instead.
func Image(m *v1.Manifest) (v1.Descriptor, error) { return Find(m, MediaType) }

// Find picks the blob of mediaType from a manifest, as Image does.
func Find(m *v1.Manifest, mediaType string) (v1.Descriptor, error) {
	var found []v1.Descriptor
	for _, l := range m.Layers {
		if string(l.MediaType) == mediaType {
			found = append(found, l)
		}
	}
	switch {
	case len(found) == 1:
		return checkBlob(found[0])
	case len(found) > 1:
		return v1.Descriptor{}, fmt.Errorf("the manifest has %d %s layers, not one", len(found), what(mediaType))
	case m.ArtifactType == mediaType && len(m.Layers) == 1:
		return checkBlob(m.Layers[0])
	case m.ArtifactType != "":
		return v1.Descriptor{}, fmt.Errorf("not a %s: an artifact of type %s", what(mediaType), m.ArtifactType)
	}
	return v1.Descriptor{}, fmt.Errorf("not a %s: a container image with %d layers (convert it with mkdwarfs -i docker://...)", what(mediaType), len(m.Layers))
}

// SignatureRef returns the reference of the signature of the image at
// ref: SiblingRef(ref, ".sig").
func SignatureRef(ref string) (string, error) { return SiblingRef(ref, ".sig") }

// SiblingRef returns the reference of a companion of the image at ref in
// the same repository, tagged after ref with suffix appended: TAG+suffix
// for docker://R/REPO:TAG, and sha256-HEX+suffix for a manifest digest
// (as cosign names its signatures).
func SiblingRef(ref, suffix string) (string, error) {
	r, err := ParseReference(ref)
	if err != nil {
		return "", err
	}
	tag := r.Identifier()
	if d, ok := r.(name.Digest); ok {
		tag = strings.Replace(d.DigestStr(), ":", "-", 1)
	}
	return Scheme + r.Context().Name() + ":" + tag + suffix, nil
}

func checkBlob(d v1.Descriptor) (v1.Descriptor, error) {
	if d.Digest.Algorithm != "sha256" || len(d.Digest.Hex) != 64 {
		return v1.Descriptor{}, fmt.Errorf("layer: unsupported digest %q", d.Digest)
	}
	if d.Size <= 0 {
		return v1.Descriptor{}, fmt.Errorf("layer %s: invalid size %d", d.Digest, d.Size)
	}
	return d, nil
}

// ParseManifest decodes a manifest and picks its image blob; an index
// is refused with a message saying so.
func ParseManifest(raw []byte, contentType string) (*v1.Manifest, v1.Descriptor, error) {
	return ParseManifestOf(raw, contentType, MediaType)
}

// ParseManifestOf is ParseManifest for a blob of mediaType.
func ParseManifestOf(raw []byte, contentType, mediaType string) (*v1.Manifest, v1.Descriptor, error) {
	mt := types.MediaType(contentType)
	var probe struct {
		MediaType types.MediaType `json:"mediaType"`
		Manifests json.RawMessage `json:"manifests"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, v1.Descriptor{}, fmt.Errorf("manifest: %w", err)
	}
	if mt.IsIndex() || probe.MediaType.IsIndex() || probe.Manifests != nil {
		return nil, v1.Descriptor{}, fmt.Errorf("the reference names an image index, not a %s manifest", what(mediaType))
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, v1.Descriptor{}, fmt.Errorf("manifest: %w", err)
	}
	d, err := Find(m, mediaType)
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	return m, d, nil
}

// PushOptions configure Push.
type PushOptions struct {
	// Transport carries the requests (nil: go-containerregistry's
	// default). Credentials come from the docker and podman auth files
	// (authn.DefaultKeychain).
	Transport http.RoundTripper
	// Title is the org.opencontainers.image.title annotation of the
	// layer (default: the file's base name).
	Title string
	// MediaType is the blob's media type and the artifactType (default
	// MediaType).
	MediaType string
}

// Push uploads the image file at path to ref (docker://...), then the
// empty config, then the manifest: the tag moves only once everything
// it names is stored. It returns the manifest's digest.
func Push(ctx context.Context, path, ref string, o PushOptions) (v1.Hash, error) {
	r, err := ParseReference(ref)
	if err != nil {
		return v1.Hash{}, err
	}
	mt := o.MediaType
	if mt == "" {
		mt = MediaType
	}
	f, err := os.Open(path)
	if err != nil {
		return v1.Hash{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("%s: %w", path, err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return v1.Hash{}, fmt.Errorf("%s: %w", path, err)
	}
	digest := v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%x", h.Sum(nil))}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithUserAgent("godwarfs")}
	if o.Transport != nil {
		opts = append(opts, remote.WithTransport(o.Transport))
	}
	layer := &fileLayer{path: path, size: st.Size(), digest: digest, mediaType: types.MediaType(mt)}
	if err := remote.WriteLayer(r.Context(), layer, opts...); err != nil {
		return v1.Hash{}, fmt.Errorf("%s: uploading %s: %w", ref, path, err)
	}
	cfg := static.NewLayer(emptyConfig, types.OCIEmptyJSON)
	if err := remote.WriteLayer(r.Context(), cfg, opts...); err != nil {
		return v1.Hash{}, fmt.Errorf("%s: uploading the empty config: %w", ref, err)
	}
	cd, _ := cfg.Digest()
	title := o.Title
	if title == "" {
		title = filepath.Base(path)
	}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  mt,
		Config:        v1.Descriptor{MediaType: types.OCIEmptyJSON, Size: int64(len(emptyConfig)), Digest: cd},
		Layers: []v1.Descriptor{{
			MediaType: types.MediaType(mt), Size: st.Size(), Digest: digest,
			Annotations: map[string]string{"org.opencontainers.image.title": title},
		}},
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := remote.Put(r, rawManifest(raw), opts...); err != nil {
		return v1.Hash{}, fmt.Errorf("%s: storing the manifest: %w", ref, err)
	}
	md, _, err := v1.SHA256(bytes.NewReader(raw))
	return md, err
}

type rawManifest []byte

func (m rawManifest) RawManifest() ([]byte, error)        { return m, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

// fileLayer is the image file as a layer blob, read from disk when
// uploaded rather than held in memory.
type fileLayer struct {
	path      string
	size      int64
	digest    v1.Hash
	mediaType types.MediaType
}

func (l *fileLayer) Digest() (v1.Hash, error)             { return l.digest, nil }
func (l *fileLayer) DiffID() (v1.Hash, error)             { return l.digest, nil }
func (l *fileLayer) Compressed() (io.ReadCloser, error)   { return os.Open(l.path) }
func (l *fileLayer) Uncompressed() (io.ReadCloser, error) { return os.Open(l.path) }
func (l *fileLayer) Size() (int64, error)                 { return l.size, nil }
func (l *fileLayer) MediaType() (types.MediaType, error)  { return l.mediaType, nil }

// PushSignature pushes the signature file sig of the image just pushed
// to ref, whose manifest is manifest, under both of SignatureRef's
// names: that of ref, and that of ref's repository at the manifest's
// digest, so that the image read by tag or by digest finds it.
func PushSignature(ctx context.Context, sig, ref string, manifest v1.Hash, o PushOptions) error {
	r, err := ParseReference(ref)
	if err != nil {
		return err
	}
	o.MediaType = SignatureMediaType
	refs := []string{ref, Scheme + r.Context().Name() + "@" + manifest.String()}
	seen := map[string]bool{}
	for _, ir := range refs {
		sr, err := SignatureRef(ir)
		if err != nil {
			return err
		}
		if seen[sr] {
			continue
		}
		seen[sr] = true
		if _, err := Push(ctx, sig, sr, o); err != nil {
			return fmt.Errorf("the signature: %w", err)
		}
	}
	return nil
}

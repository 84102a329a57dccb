// Package registrysource reads DwarFS images pushed to a container
// registry as OCI artifacts (package ociartifact), named
// docker://REGISTRY/REPO:TAG or docker://REGISTRY/REPO@DIGEST. Importing
// it registers the docker scheme with package source, so that
// source.Open and godwarfs.Open read such references:
//
//	import _ "github.com/godwarfs/godwarfs/source/registrysource"
//
// Credentials come from the docker or podman auth files. A companion of
// an image (source.Sibling, such as its signature) is another tag of the
// same repository: TAG+suffix, or sha256-HEX+suffix for a digest.
package registrysource

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/godwarfs/godwarfs/ociartifact"
	"github.com/godwarfs/godwarfs/source"
	"github.com/godwarfs/godwarfs/source/internal/httpfetch"
)

func init() {
	source.Register("docker", source.Backend{Open: open, Sibling: ociartifact.SiblingRef})
}

// registryFetcher reads a DwarFS image stored in a container registry as
// an OCI artifact (package ociartifact). The reference is resolved to a
// manifest, and the manifest to the image blob, once, at stat; every
// read is a ranged GET of /v2/REPO/blobs/DIGEST, which names the bytes
// themselves, so moving the tag during a mount changes nothing that is
// read. Redirects to the registry's storage are followed (with no
// registry credentials sent there). Authentication is
// go-containerregistry's transport: anonymous, basic, or bearer tokens
// got through the WWW-Authenticate challenge and renewed when a request
// is refused with 401, with credentials from the docker or podman auth
// files.
type registryFetcher struct {
	text string // as given, for messages
	ref  name.Reference
	base *http.Transport
	// accept are the media types of the blob looked for, in order
	// (nil: a DwarFS image).
	accept []string

	mu     sync.Mutex
	client *http.Client // authenticated; nil until the first stat
	blob   v1.Descriptor
	mdig   v1.Hash // the manifest's digest
}

// maxManifest bounds a manifest's size; real ones are a few KiB.
const maxManifest = 4 << 20

func open(_ context.Context, text string, o source.Options) (source.Fetcher, error) {
	ref, err := ociartifact.ParseReference(text)
	if err != nil {
		return nil, err
	}
	return &registryFetcher{text: text, ref: ref, base: httpfetch.NewTransport(o.Workers)}, nil
}

func (f *registryFetcher) Name() string { return f.text }

// Key names the blob, not the tag: the disk cache is shared by every
// tag of the same image.
func (f *registryFetcher) Key() string {
	return ociartifact.Scheme + f.ref.Context().Name() + "@" + f.blob.Digest.String()
}

func (f *registryFetcher) Close() { f.base.CloseIdleConnections() }

// Share implements source.Sharer: another reference over this one's
// transport (with its own authentication: the repository may differ),
// or nil when text is no reference.
func (f *registryFetcher) Share(text string) source.Fetcher {
	ref, err := ociartifact.ParseReference(text)
	if err != nil {
		return nil // of another kind, or a fetcher of its own says why
	}
	return &registryFetcher{text: text, ref: ref, base: f.base}
}

// ReadCompanion implements source.CompanionReader: the object read may
// be an image's signature as well as an image.
func (f *registryFetcher) ReadCompanion() {
	f.accept = []string{ociartifact.SignatureMediaType, ociartifact.MediaType}
}

// ManifestDigest returns the digest of the manifest a registry source
// resolved its reference to at open, or false for other sources.
func ManifestDigest(s source.Source) (string, bool) {
	if f, ok := source.FetcherOf(s).(*registryFetcher); ok {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.mdig.String(), true
	}
	return "", false
}

func (f *registryFetcher) url(kind, id string) string {
	reg := f.ref.Context().Registry
	return fmt.Sprintf("%s://%s/v2/%s/%s/%s", reg.Scheme(), reg.RegistryStr(), f.ref.Context().RepositoryStr(), kind, id)
}

// registryErr classifies the errors of go-containerregistry's
// handshake: server errors and transport failures are retryable, other
// answers (bad credentials, no such repository) are not.
func registryErr(err error) error {
	var te *transport.Error
	if errors.As(err, &te) {
		if te.StatusCode >= 500 || te.StatusCode == http.StatusTooManyRequests || te.StatusCode == http.StatusRequestTimeout {
			return source.Retryable(err, 0)
		}
		return err
	}
	return httpfetch.NetErr(err)
}

func (f *registryFetcher) Stat(ctx context.Context) (source.Version, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.client == nil {
		auth, err := authn.DefaultKeychain.Resolve(f.ref.Context())
		if err != nil {
			return source.Version{}, fmt.Errorf("credentials: %w", err)
		}
		rt, err := transport.NewWithContext(ctx, f.ref.Context().Registry, auth, f.base, []string{f.ref.Scope(transport.PullScope)})
		if err != nil {
			return source.Version{}, registryErr(err)
		}
		reg := f.ref.Context().Registry.RegistryStr()
		f.client = &http.Client{Transport: rt, CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			// The transport sets the registry's credentials on the
			// request itself, which the client copies to a redirect
			// by its own rule; storage anywhere but the registry's
			// host and port never gets them.
			if req.URL.Host != reg {
				req.Header.Del("Authorization")
			}
			return nil
		}}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url("manifests", f.ref.Identifier()), nil)
	if err != nil {
		return source.Version{}, err
	}
	req.Header.Set("Accept", strings.Join([]string{string(types.OCIManifestSchema1), string(types.DockerManifestSchema2), string(types.OCIImageIndex), string(types.DockerManifestList)}, ","))
	req.Header.Set("User-Agent", "godwarfs")
	resp, err := f.client.Do(req)
	if err != nil {
		return source.Version{}, registryErr(err)
	}
	defer httpfetch.Drain(resp.Body)
	if err := httpfetch.StatusErr(resp); err != nil {
		return source.Version{}, fmt.Errorf("manifest %s: %w", f.ref.Identifier(), err)
	}
	if resp.StatusCode != http.StatusOK {
		return source.Version{}, fmt.Errorf("manifest %s: unexpected HTTP status %s", f.ref.Identifier(), resp.Status)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxManifest+1))
	if err != nil {
		return source.Version{}, source.Retryable(fmt.Errorf("manifest %s: %w", f.ref.Identifier(), err), 0)
	}
	if len(raw) > maxManifest {
		return source.Version{}, fmt.Errorf("manifest %s: more than %d bytes", f.ref.Identifier(), maxManifest)
	}
	sum := sha256.Sum256(raw)
	mdig := v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}
	if d, ok := f.ref.(name.Digest); ok && d.DigestStr() != mdig.String() {
		return source.Version{}, fmt.Errorf("manifest %s: the registry sent one with digest %s", d.DigestStr(), mdig)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	accept := f.accept
	if accept == nil {
		accept = []string{ociartifact.MediaType}
	}
	var blob v1.Descriptor
	for i, mt := range accept {
		_, b, perr := ociartifact.ParseManifestOf(raw, ct, mt)
		if perr == nil {
			blob, err = b, nil
			break
		}
		if i == 0 {
			err = perr // the first kind's complaint
		}
	}
	if err != nil {
		return source.Version{}, fmt.Errorf("manifest %s (%s): %w", f.ref.Identifier(), mdig, err)
	}
	if f.blob.Digest != (v1.Hash{}) && f.blob.Digest != blob.Digest {
		// A repeated stat (ReadSmall) must not switch images.
		return source.Version{}, fmt.Errorf("%w (blob %s, opened %s)", source.ErrChanged, blob.Digest, f.blob.Digest)
	}
	f.blob, f.mdig = blob, mdig
	// The blob digest is the version: it pins every read and names the
	// disk cache entries.
	return source.Version{Size: blob.Size, ETag: blob.Digest.String()}, nil
}

func (f *registryFetcher) Get(ctx context.Context, p []byte, off int64, pin source.Version, got *atomic.Int64) error {
	f.mu.Lock()
	client, blob := f.client, f.blob
	f.mu.Unlock()
	end := off + int64(len(p)) - 1
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url("blobs", blob.Digest.String()), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, end))
	req.Header.Set("User-Agent", "godwarfs")
	resp, err := client.Do(req)
	if err != nil {
		return httpfetch.NetErr(err)
	}
	defer httpfetch.Drain(resp.Body)
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("blob %s: HTTP status %s (deleted from the registry since the mount?)", blob.Digest, resp.Status)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		// The stat got through with these credentials, and the
		// transport has already renewed its token once for this
		// request: a token that ran out again in between (readers in
		// parallel, short-lived tokens) is renewed by the next try.
		return source.Retryable(fmt.Errorf("blob %s: HTTP status %s", blob.Digest, resp.Status), 0)
	}
	if err := httpfetch.StatusErr(resp); err != nil {
		return fmt.Errorf("blob %s: %w", blob.Digest, err)
	}
	// A login page or an error page of a proxy is not the blob, even
	// with a 2xx status.
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "text/html" {
		return fmt.Errorf("blob %s: the registry answered with an HTML page (HTTP status %s), not the blob", blob.Digest, resp.Status)
	}
	switch resp.StatusCode {
	case http.StatusPartialContent:
		s, e, total, err := httpfetch.ParseContentRange(resp.Header.Get("Content-Range"))
		if err != nil {
			return fmt.Errorf("blob %s: %w", blob.Digest, err)
		}
		if total >= 0 && total != pin.Size {
			return fmt.Errorf("blob %s: the registry serves %d bytes, the manifest says %d", blob.Digest, total, pin.Size)
		}
		if s != off || e != end {
			return fmt.Errorf("blob %s: the registry sent bytes %d-%d for a request of %d-%d", blob.Digest, s, e, off, end)
		}
	case http.StatusOK:
		if off != 0 || int64(len(p)) != pin.Size {
			return fmt.Errorf("blob %s: the registry answered a range request with the whole blob (HTTP status %s): it, or a proxy in front of it, does not serve ranges, so the image cannot be read from it in place (pull it and use the file)", blob.Digest, resp.Status)
		}
	default:
		return fmt.Errorf("blob %s: unexpected HTTP status %s", blob.Digest, resp.Status)
	}
	return httpfetch.ReadBody(resp.Body, p, got)
}

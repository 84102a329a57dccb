package ociartifact_test

import (
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/ociartifact"
)

const emptyDigest = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"

// FuzzParseManifest feeds manifests, as a registry might send them, to
// the parser: it must return a blob of a valid digest and size or an
// error, never panic.
func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"`+ociartifact.MediaType+`","config":{"mediaType":"application/vnd.oci.empty.v1+json","size":2,"digest":"`+emptyDigest+`"},"layers":[{"mediaType":"`+ociartifact.MediaType+`","size":100,"digest":"`+emptyDigest+`"}]}`), "application/vnd.oci.image.manifest.v1+json")
	f.Add([]byte(`{"schemaVersion":2,"manifests":[]}`), "application/vnd.oci.image.index.v1+json")
	f.Add([]byte(`{"layers":[{"mediaType":"x","size":1,"digest":"sha256:00"}]}`), "")
	f.Add([]byte(`null`), "")
	f.Fuzz(func(t *testing.T, raw []byte, ct string) {
		_, d, err := ociartifact.ParseManifest(raw, ct)
		if err != nil {
			return
		}
		if d.Size <= 0 || d.Digest.Algorithm != "sha256" || len(d.Digest.Hex) != 64 {
			t.Fatalf("accepted blob %+v", d)
		}
	})
}

func TestParseManifest(t *testing.T) {
	layer := func(mt string) string {
		return `{"mediaType":"` + mt + `","size":100,"digest":"` + emptyDigest + `"}`
	}
	cfg := `"config":{"mediaType":"application/vnd.oci.empty.v1+json","size":2,"digest":"` + emptyDigest + `"}`
	for _, c := range []struct {
		name, raw, ct, want string // want: "" for success
	}{
		{"artifact", `{"schemaVersion":2,"artifactType":"` + ociartifact.MediaType + `",` + cfg + `,"layers":[` + layer(ociartifact.MediaType) + `]}`, "", ""},
		{"layer type only", `{"schemaVersion":2,` + cfg + `,"layers":[` + layer("application/x-readme") + `,` + layer(ociartifact.MediaType) + `]}`, "", ""},
		{"artifactType, generic layer", `{"schemaVersion":2,"artifactType":"` + ociartifact.MediaType + `",` + cfg + `,"layers":[` + layer("application/octet-stream") + `]}`, "", ""},
		{"two images", `{"schemaVersion":2,` + cfg + `,"layers":[` + layer(ociartifact.MediaType) + `,` + layer(ociartifact.MediaType) + `]}`, "", "2 DwarFS image layers"},
		{"container image", `{"schemaVersion":2,` + cfg + `,"layers":[` + layer("application/vnd.oci.image.layer.v1.tar+gzip") + `]}`, "", "a container image with 1 layers"},
		{"index", `{"schemaVersion":2,"manifests":[]}`, "", "image index"},
		{"index by type", `{"schemaVersion":2}`, "application/vnd.docker.distribution.manifest.list.v2+json", "image index"},
		{"not JSON", `<html>`, "text/html", "manifest"},
	} {
		_, d, err := ociartifact.ParseManifest([]byte(c.raw), c.ct)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want == "" && d.Size != 100:
			t.Errorf("%s: blob %+v", c.name, d)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
		}
	}
}

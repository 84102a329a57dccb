//go:build linux

package dwarfsck

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/internal/imagetest"
	"github.com/godwarfs/godwarfs/internal/remotetest"
	"github.com/godwarfs/godwarfs/internal/signtest"
	"github.com/godwarfs/godwarfs/source"
)

// TestPush pushes a local image with --push and reads it back from the
// registry byte for byte; a damaged image is not pushed.
func TestPush(t *testing.T) {
	remotetest.IsolateAuth(t)
	reg := remotetest.ContainerRegistry(t, "", "")
	img := filepath.Join(t.TempDir(), "tools.dwarfs")
	imagetest.Build(t, imagetest.Tree(t, 5, 20), img, 16)
	raw, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	ref := "docker://" + reg.Host + "/ns/tools:1"
	if rc, out, errs := runck("--push="+ref, img); rc != 0 || !strings.Contains(out, "pushed "+img+" to "+ref) {
		t.Fatalf("--push: rc %d: %s%s", rc, out, errs)
	}
	src, err := source.Open(context.Background(), ref, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, src.Size())
	if _, err := src.ReadAt(got, 0); err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("read back: %d bytes (%v), pushed %d", len(got), err, len(raw))
	}
	src.Close()
	if rc, _, errs := runck("--check-integrity", ref); rc != 0 {
		t.Fatalf("--check-integrity %s: rc %d: %s", ref, rc, errs)
	}

	// A signature beside the image goes along; --verify finds it.
	allowed, _ := signtest.SignImage(t, img, "", "builder")
	sref := "docker://" + reg.Host + "/ns/signed:1"
	if rc, out, errs := runck("--push="+sref, img); rc != 0 || !strings.Contains(out, "pushed "+img+".sig to "+sref+".sig") {
		t.Fatalf("signed --push: rc %d: %s%s", rc, out, errs)
	}
	if rc, out, errs := runck("--verify="+allowed, sref); rc != 0 || !strings.Contains(out, "builder") {
		t.Fatalf("--verify %s: rc %d: %s%s", sref, rc, out, errs)
	}
	if rc, _, errs := runck("--push="+sref, "--signature="+img+".missing", img); rc == 0 || !strings.Contains(errs, ".missing") {
		t.Fatalf("a missing --signature: rc %d: %s", rc, errs)
	}

	bad := filepath.Join(t.TempDir(), "bad.dwarfs")
	raw[len(raw)/3] ^= 0x40
	os.WriteFile(bad, raw, 0o644)
	badRef := "docker://" + reg.Host + "/ns/bad:1"
	if rc, _, errs := runck("--push="+badRef, bad); rc == 0 || !strings.Contains(errs, "not pushed") {
		t.Fatalf("damaged image: rc %d: %s", rc, errs)
	}
	if _, err := source.Open(context.Background(), badRef, source.Options{Attempts: 1}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("the damaged image is in the registry: %v", err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--push=" + ref, ref}, "local image"},
		{[]string{"--push=oci:dir", img}, "not a registry reference"},
		{[]string{"--push=" + ref, "--sign=key", img}, "push"},
		{[]string{"--push=" + ref, "--signature=https://h/x.sig", img}, "local signature file"},
		{[]string{"--push=" + ref, "--list", img}, "push"},
	} {
		if rc, _, errs := runck(c.args...); rc == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%q: rc %d: %s", c.args, rc, errs)
		}
	}
}

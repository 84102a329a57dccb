//go:build linux && !386 && !arm

package fusefs_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs/internal/remotetest"
)

// greeter is the program the container runs: it reads a file of the
// image, checks that a file the upper layer deleted is gone, and writes
// its answer to /tmp, which the overlay's upper directory must receive.
const greeter = `package main

import "os"

func main() {
	g, err := os.ReadFile("/etc/greeting")
	if err != nil {
		os.Exit(2)
	}
	if _, err := os.Stat("/etc/old"); err == nil {
		os.Exit(3)
	}
	if err := os.WriteFile("/tmp/out.txt", append([]byte("got: "), g...), 0o644); err != nil {
		os.Exit(4)
	}
}
`

// buildStatic compiles src into a static executable.
func buildStatic(t *testing.T, src string) []byte {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module greeter\n\ngo 1.21\n"), 0o644)
	cmd := exec.Command(goBin, "build", "-trimpath", "-o", "greeter", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "greeter"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type member struct {
	name string
	typ  byte
	mode int64
	data []byte
}

func layerTar(t *testing.T, ms []member) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range ms {
		h := &tar.Header{Name: m.name, Typeflag: m.typ, Mode: m.mode, Size: int64(len(m.data)), ModTime: time.Unix(1700000000, 0)}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write(m.data)
	}
	tw.Close()
	return buf.Bytes()
}

// TestRegistryRun converts a two-layer container image holding a static
// program, pushes it, mounts it from the registry, puts a writable
// overlay on top and runs the program chrooted into the overlay: what
// it writes must land in the upper directory.
func TestRegistryRun(t *testing.T) {
	requireFuse(t)
	if os.Geteuid() != 0 {
		t.Skip("overlayfs and chroot need root")
	}
	prog := buildStatic(t, greeter)
	l1 := layerTar(t, []member{
		{"bin/", tar.TypeDir, 0o755, nil}, {"bin/greeter", tar.TypeReg, 0o755, prog},
		{"etc/", tar.TypeDir, 0o755, nil}, {"etc/greeting", tar.TypeReg, 0o644, []byte("old")},
		{"etc/old", tar.TypeReg, 0o644, []byte("deleted above")},
	})
	l2 := layerTar(t, []member{
		{"etc/", tar.TypeDir, 0o755, nil}, {"etc/greeting", tar.TypeReg, 0o644, []byte("hello")},
		{"etc/.wh.old", tar.TypeReg, 0o644, nil}, {"tmp/", tar.TypeDir, 0o1777, nil},
	})
	img := empty.Image
	var err error
	for _, l := range [][]byte{l1, l2} {
		if img, err = mutate.AppendLayers(img, static.NewLayer(l, types.OCIUncompressedLayer)); err != nil {
			t.Fatal(err)
		}
	}
	cf, _ := img.ConfigFile()
	cf.OS, cf.Architecture = runtime.GOOS, runtime.GOARCH
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	lay := t.TempDir()
	p, err := layout.Write(lay, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}

	remotetest.IsolateAuth(t)
	reg := remotetest.ContainerRegistry(t, "", "")
	ref := "docker://" + reg.Host + "/apps/greeter:v1"
	if code, msg := mk(t, "-i", "oci:"+lay, "-o", ref); code != 0 {
		t.Fatalf("mkdwarfs -i oci: -o %s: exit %d: %s", ref, code, msg)
	}
	srv, _ := mountURL(t, ref, "")

	base := t.TempDir()
	if err := unix.Mount("tmpfs", base, "tmpfs", 0, "size=64m"); err != nil {
		t.Fatalf("mount tmpfs for the upper layer: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(base, unix.MNT_DETACH) })
	upper, work, merged := filepath.Join(base, "upper"), filepath.Join(base, "work"), filepath.Join(base, "merged")
	for _, d := range []string{upper, work, merged} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount("overlay", merged, "overlay", 0, "lowerdir="+srv.Dir()+",upperdir="+upper+",workdir="+work); err != nil {
		if errors.Is(err, syscall.ENODEV) {
			t.Skipf("overlayfs unavailable: %v", err)
		}
		t.Fatalf("mount overlay: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(merged, 0); err != nil {
			t.Errorf("unmount overlay: %v", err)
		}
	})

	cmd := exec.Command("/bin/greeter")
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: merged}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chrooted run: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(upper, "tmp", "out.txt"))
	if err != nil || string(got) != "got: hello" {
		t.Fatalf("upper tmp/out.txt: %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(srv.Dir(), "tmp", "out.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the image's own tmp has out.txt: %v", err)
	}
	f, err := os.Open(filepath.Join(srv.Dir(), "bin", "greeter"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, _ := io.ReadAll(f); !bytes.Equal(b, prog) || !strings.HasPrefix(string(b), "\x7fELF") {
		t.Errorf("bin/greeter in the mount differs from the program built")
	}
}

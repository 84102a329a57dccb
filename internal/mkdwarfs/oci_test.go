//go:build linux

package mkdwarfs

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/compression"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/remotetest"
)

type ociMember struct {
	h    tar.Header
	data string
}

func ociTar(t testing.TB, ms []ociMember) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range ms {
		h := m.h
		h.Format = tar.FormatPAX
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(m.data))
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, m.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func oh(name string, typ byte, mode int64, uid int, sec int64) tar.Header {
	return tar.Header{Name: name, Typeflag: typ, Mode: mode, Uid: uid, Gid: uid + 1, ModTime: time.Unix(sec, 0)}
}

// ociLayers are three layers with every kind of change.
func ociLayers(t testing.TB) [][]byte {
	f := func(n, d string, uid int, sec int64) ociMember {
		return ociMember{h: oh(n, tar.TypeReg, 0o644, uid, sec), data: d}
	}
	d := func(n string, sec int64) ociMember { return ociMember{h: oh(n, tar.TypeDir, 0o755, 0, sec)} }
	wh := func(n string) ociMember { return ociMember{h: oh(n, tar.TypeReg, 0o600, 0, 1)} }
	link := func(n, target string, typ byte) ociMember {
		h := oh(n, typ, 0o777, 0, 10)
		h.Linkname = target
		return ociMember{h: h}
	}
	dev := oh("dev/null", tar.TypeChar, 0o666, 0, 10)
	dev.Devmajor, dev.Devminor = 1, 3
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB: spilled past the memory part
	return [][]byte{
		ociTar(t, []ociMember{
			d("etc/", 10), f("etc/passwd", "root:x:0:0", 0, 10), f("etc/old", "old", 0, 10),
			d("bin/", 10), {h: oh("bin/sh", tar.TypeReg, 0o755, 0, 10), data: "#!shell"}, link("bin/ash", "bin/sh", tar.TypeLink),
			d("data/", 10), d("data/d/", 10), f("data/d/x", "x", 5, 10), f("data/d/y", "y", 5, 10), f("data/file", "file", 1000, 10),
			d("data/o/", 10), f("data/o/lower", "lower", 0, 10), d("dev/", 10), {h: dev}, {h: oh("dev/fifo", tar.TypeFifo, 0o600, 0, 10)},
			f("tmp/big", big, 0, 10), f("keep/t", "target", 0, 10), link("keep/l", "keep/t", tar.TypeLink),
		}),
		ociTar(t, []ociMember{
			wh("etc/.wh.old"), f("etc/passwd", "root:x:0:0\nuser:x:1000:1000", 0, 20),
			f("data/d", "now a file", 7, 20),                    // a file replaces a directory
			d("data/file/", 20), f("data/file/in", "in", 0, 20), // a directory replaces a file
			d("data/o/", 20), wh("data/o/.wh..wh..opq"), f("data/o/upper", "upper", 0, 20),
			link("etc/s", "passwd", tar.TypeSymlink),
		}),
		ociTar(t, []ociMember{
			wh(".wh.tmp"), wh("keep/.wh.t"), f("bin/sh", "#!new shell", 0, 30),
		}),
	}
}

// ociWant is the tree the layers make, worked out by hand from the
// spec's rules.
const ociWant = `/ dir 755 0:0 m=0
/bin dir 755 0:1 m=10
/bin/ash file 755 0:1 m=10 "#!shell"
/bin/sh file 644 0:1 m=30 "#!new shell"
/data dir 755 0:1 m=10
/data/d file 644 7:8 m=20 "now a file"
/data/file dir 755 0:1 m=20
/data/file/in file 644 0:1 m=20 "in"
/data/o dir 755 0:1 m=20
/data/o/upper file 644 0:1 m=20 "upper"
/dev dir 755 0:1 m=10
/dev/fifo fifo 600 0:1 m=10
/dev/null chr 666 0:1 m=10 1:3
/etc dir 755 0:1 m=10
/etc/passwd file 644 0:1 m=20 "root:x:0:0\nuser:x:1000:1000"
/etc/s link 777 0:1 m=10 -> passwd
/keep dir 755 0:1 m=10
/keep/l file 644 0:1 m=10 "target"`

// ociImage makes an image of the layers: the first gzip, the second
// uncompressed, the third zstd.
func ociImage(t testing.TB, layers [][]byte, arch string) v1.Image {
	t.Helper()
	img := empty.Image
	for i, b := range layers {
		var l v1.Layer
		var err error
		switch i % 3 {
		case 0:
			l, err = tarball.LayerFromReader(bytes.NewReader(b))
		case 1:
			l = static.NewLayer(b, types.OCIUncompressedLayer)
		case 2:
			l, err = tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, tarball.WithCompression(compression.ZStd))
		}
		if err != nil {
			t.Fatal(err)
		}
		if img, err = mutate.AppendLayers(img, l); err != nil {
			t.Fatal(err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Config.Entrypoint = []string{"/bin/sh"}
	cf.Config.Env = []string{"PATH=/bin"}
	cf.Config.Labels = map[string]string{"org.example": "yes"}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return mutate.MediaType(img, types.OCIManifestSchema1)
}

// renderImage lists an image's tree in ociWant's form.
func renderImage(t testing.TB, img string) string {
	t.Helper()
	got, _ := readBack(t, img)
	var paths []string
	for p := range got {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	raw := extractFiles(t, img)
	first := map[string]string{}
	var lines []string
	for _, p := range paths {
		n := got[p]
		kind := map[uint32]string{syscall.S_IFDIR: "dir", syscall.S_IFREG: "file", syscall.S_IFLNK: "link", syscall.S_IFIFO: "fifo", syscall.S_IFCHR: "chr", syscall.S_IFBLK: "blk"}[n.mode&syscall.S_IFMT]
		mt := n.mtime.Unix()
		if p == "/" || p == "" {
			mt = 0
		}
		show := "/" + strings.TrimPrefix(p, "/")
		l := fmt.Sprintf("%s %s %o %d:%d m=%d", show, kind, n.mode&0o7777, n.uid, n.gid, mt)
		switch kind {
		case "file":
			c := raw[strings.TrimPrefix(p, "/")]
			if len(c) > 64 {
				c = fmt.Sprintf("%d bytes sha256 %x", len(c), sha256.Sum256([]byte(c)))
			}
			l += fmt.Sprintf(" %q", c)
			if f, ok := first[n.inoKey]; ok {
				l += " =" + f
			} else {
				first[n.inoKey] = show
			}
		case "link":
			l += " -> " + n.target
		case "chr", "blk":
			l += fmt.Sprintf(" %d:%d", n.rdev>>8&0xfff, n.rdev&0xff)
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

// extractFiles reads every regular file of an image with dwarfsextract's
// tar output.
func extractFiles(t testing.TB, img string) map[string]string {
	t.Helper()
	out := map[string]string{}
	b := extract(t.(*testing.T), "-i", img, "-f", "pax", "-o", "-")
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			c, _ := io.ReadAll(tr)
			out[strings.TrimPrefix(strings.TrimPrefix(h.Name, "./"), "/")] = string(c)
		}
	}
}

func writeLayout(t testing.TB, dir string, img v1.Image, ref string) layout.Path {
	t.Helper()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref})); err != nil {
		t.Fatal(err)
	}
	return p
}

func mkOCI(t testing.TB, args ...string) (int, string) {
	var stderr bytes.Buffer
	code := Main(context.Background(), append([]string{"mkdwarfs"}, append(args, "--with-devices", "--with-specials", "--log-level=error")...), cli.Stdio{Out: &bytes.Buffer{}, Err: &stderr})
	return code, stderr.String()
}

func TestOCIInput(t *testing.T) {
	layers := ociLayers(t)
	img := ociImage(t, layers, runtime.GOARCH)
	dir := t.TempDir()
	lay := filepath.Join(dir, "layout")
	writeLayout(t, lay, img, "v1")
	arch := filepath.Join(dir, "image.tar")
	tag, _ := name.NewTag("example.org/app:v1")
	if err := tarball.WriteToFile(arch, tag, img); err != nil {
		t.Fatal(err)
	}
	dg, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, input string }{
		{"layout by tag", "oci:" + lay + ":v1"},
		{"layout by digest", "oci:" + lay + ":" + dg.String()},
		{"layout, one manifest", "oci:" + lay},
		{"docker-archive", "docker-archive:" + arch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.dwarfs")
			cfg := filepath.Join(t.TempDir(), "config.json")
			if code, msg := mkOCI(t, "-i", tc.input, "-o", out, "--oci-config", cfg); code != 0 {
				t.Fatalf("exit %d: %s", code, msg)
			}
			if got := renderImage(t, out); got != ociWant {
				t.Fatalf("got\n%s\nwant\n%s", got, ociWant)
			}
			var c v1.ConfigFile
			b, err := os.ReadFile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			if strings.Join(c.Config.Entrypoint, " ") != "/bin/sh" || c.Config.Labels["org.example"] != "yes" {
				t.Fatalf("config: %s", b)
			}
		})
	}
}

func TestOCIInputErrors(t *testing.T) {
	layers := ociLayers(t)
	img := ociImage(t, layers, runtime.GOARCH)
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	blob := func(lay string, i int) string {
		return filepath.Join(lay, "blobs", "sha256", m.Layers[i].Digest.Hex)
	}
	fresh := func(t *testing.T) string {
		lay := filepath.Join(t.TempDir(), "layout")
		writeLayout(t, lay, img, "v1")
		return lay
	}
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	// A platform the index below does not have, whatever the tests run on.
	absent := "riscv64"
	if runtime.GOARCH == absent {
		absent = "ppc64le"
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) []string
		want  string
	}{
		{"blob digest", func(t *testing.T) []string {
			lay := fresh(t)
			// The uncompressed layer, one byte of a file's data changed.
			b, _ := os.ReadFile(blob(lay, 1))
			b = bytes.Replace(b, []byte("upper"), []byte("Upper"), 1) // a name: a bad header
			os.WriteFile(blob(lay, 1), b, 0o644)
			return []string{"-i", "oci:" + lay}
		}, "layer " + m.Layers[1].Digest.String() + ": blob digest mismatch"},
		{"gzip blob", func(t *testing.T) []string {
			lay := fresh(t)
			b, _ := os.ReadFile(blob(lay, 0))
			b[len(b)/2] ^= 0x55
			os.WriteFile(blob(lay, 0), b, 0o644)
			return []string{"-i", "oci:" + lay}
		}, "layer " + m.Layers[0].Digest.String() + ": blob digest mismatch"},
		{"diff ID", func(t *testing.T) []string {
			// A config whose diff ID of the top layer is another's.
			cf, _ := img.ConfigFile()
			cf = cf.DeepCopy()
			cf.RootFS.DiffIDs[2] = cf.RootFS.DiffIDs[1]
			i, err := mutate.ConfigFile(img, cf)
			if err != nil {
				t.Fatal(err)
			}
			lay := filepath.Join(t.TempDir(), "layout")
			writeLayout(t, lay, i, "v1")
			return []string{"-i", "oci:" + lay}
		}, "layer " + m.Layers[2].Digest.String() + ": uncompressed content (diff ID) digest mismatch"},
		{"missing blob", func(t *testing.T) []string {
			lay := fresh(t)
			os.Remove(blob(lay, 2))
			return []string{"-i", "oci:" + lay}
		}, "layer " + m.Layers[2].Digest.String() + ": blob missing from the layout"},
		{"unknown ref", func(t *testing.T) []string {
			return []string{"-i", "oci:" + fresh(t) + ":v2"}
		}, `no manifest named "v2" in index.json (it has: v1)`},
		{"wrong platform", func(t *testing.T) []string {
			lay := filepath.Join(t.TempDir(), "layout")
			idx := mutate.AppendManifests(empty.Index,
				mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}}},
				mutate.IndexAddendum{Add: ociImage(t, layers[:1], other), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: other}}})
			p, err := layout.Write(lay, empty.Index)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.AppendIndex(idx); err != nil {
				t.Fatal(err)
			}
			return []string{"-i", "oci:" + lay, "--platform", "linux/" + absent}
		}, "no image for platform linux/" + absent + " (the index has: linux/" + runtime.GOARCH + ", linux/" + other + ")"},
		{"single image of another platform", func(t *testing.T) []string {
			return []string{"-i", "oci:" + fresh(t), "--platform", "linux/" + other}
		}, "the image is for linux/" + runtime.GOARCH + ", not linux/" + other},
		{"bad member", func(t *testing.T) []string {
			bad := ociTar(t, []ociMember{{h: oh("../x", tar.TypeReg, 0o644, 0, 1), data: "x"}})
			l := static.NewLayer(bad, types.OCIUncompressedLayer)
			i, _ := mutate.AppendLayers(empty.Image, l)
			lay := filepath.Join(t.TempDir(), "layout")
			writeLayout(t, lay, i, "v1")
			return []string{"-i", "oci:" + lay}
		}, "member ../x at offset 0: name contains '..'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(tc.setup(t), "-o", filepath.Join(t.TempDir(), "out.dwarfs"))
			code, msg := mkOCI(t, args...)
			if code == 0 || !strings.Contains(msg, tc.want) {
				t.Fatalf("exit %d, %q; want an error with %q", code, msg, tc.want)
			}
		})
	}
}

func TestOCIRegistry(t *testing.T) {
	img := ociImage(t, ociLayers(t), runtime.GOARCH)
	for _, mode := range []string{"anonymous", "docker config", "REGISTRY_AUTH_FILE"} {
		auth := mode != "anonymous"
		t.Run(mode, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("HOME", home)
			t.Setenv("DOCKER_CONFIG", "")
			t.Setenv("REGISTRY_AUTH_FILE", "")
			t.Setenv("XDG_RUNTIME_DIR", "")
			t.Setenv("XDG_CONFIG_HOME", "")
			user, pw := "", ""
			if auth {
				user, pw = "tester", "s3cret"
			}
			reg := remotetest.ContainerRegistry(t, user, pw)
			ref, err := name.ParseReference(reg.Host + "/app:v1")
			if err != nil {
				t.Fatal(err)
			}
			opts := []remote.Option{}
			if auth {
				opts = append(opts, remote.WithAuth(&authn.Basic{Username: user, Password: pw}))
			}
			if err := remote.Write(ref, img, opts...); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "out.dwarfs")
			if auth {
				// Anonymous: refused.
				if code, msg := mkOCI(t, "-i", "docker://"+reg.Host+"/app:v1", "-o", out); code == 0 || !strings.Contains(msg, "UNAUTHORIZED") {
					t.Fatalf("without credentials: exit %d: %s", code, msg)
				}
				conf := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg.Host, base64.StdEncoding.EncodeToString([]byte(user+":"+pw)))
				file := filepath.Join(home, ".docker", "config.json")
				if mode == "REGISTRY_AUTH_FILE" {
					// podman's: used when there is no docker config.
					file = filepath.Join(t.TempDir(), "auth.json")
					t.Setenv("REGISTRY_AUTH_FILE", file)
				}
				os.MkdirAll(filepath.Dir(file), 0o700)
				if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if code, msg := mkOCI(t, "-i", "docker://"+reg.Host+"/app:v1", "-o", out); code != 0 {
				t.Fatalf("exit %d: %s", code, msg)
			}
			if got := renderImage(t, out); got != ociWant {
				t.Fatalf("got\n%s\nwant\n%s", got, ociWant)
			}
			dg, _ := img.Digest()
			out2 := filepath.Join(t.TempDir(), "out.dwarfs")
			if code, msg := mkOCI(t, "-i", "docker://"+reg.Host+"/app@"+dg.String(), "-o", out2); code != 0 {
				t.Fatalf("by digest: exit %d: %s", code, msg)
			}
		})
	}
}

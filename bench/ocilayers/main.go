// Command ocilayers writes an OCI image layout of many layers made from a
// source tree, for bench/ocilayers.sh: the first layer holds the tree,
// each later one replaces, whites out and adds files, and now and then
// makes a directory opaque (re-adding part of it), as a long-lived image's
// layers do.
//
//	go run ./bench/ocilayers -src DIR -o LAYOUT [-layers 25] [-seed 1]
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

type file struct {
	path string // relative
	src  string // where its bytes are
	mode fs.FileMode
	gen  int // which edition: 0 is the source's bytes
}

func main() {
	src := flag.String("src", "", "source tree")
	out := flag.String("o", "", "layout to write")
	nl := flag.Int("layers", 25, "layers")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if *src == "" || *out == "" {
		log.Fatal("need -src and -o")
	}
	rnd := rand.New(rand.NewPCG(*seed, 7))
	var files []*file
	err := filepath.WalkDir(*src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(*src, p)
		files = append(files, &file{path: filepath.ToSlash(rel), src: p, mode: 0o644})
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	live := map[string]*file{}
	for _, f := range files {
		live[f.path] = f
	}
	// OCI media types throughout, which umoci insists on.
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	t0 := time.Unix(1700000000, 0)
	for l := 0; l < *nl; l++ {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		dirs := map[string]bool{}
		mkdirs := func(p string) {
			var parts []string
			for _, c := range strings.Split(filepath.ToSlash(filepath.Dir(p)), "/") {
				if c == "." {
					continue
				}
				parts = append(parts, c)
				d := strings.Join(parts, "/")
				if !dirs[d] {
					dirs[d] = true
					must(tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: t0}))
				}
			}
		}
		put := func(f *file) {
			b, err := os.ReadFile(f.src)
			if err != nil {
				log.Fatal(err)
			}
			if f.gen > 0 {
				b = append(b, fmt.Sprintf("\n// edition %d\n", f.gen)...)
			}
			mkdirs(f.path)
			must(tw.WriteHeader(&tar.Header{Name: f.path, Typeflag: tar.TypeReg, Mode: int64(f.mode), Size: int64(len(b)), ModTime: t0.Add(time.Duration(l) * time.Hour)}))
			_, err = tw.Write(b)
			must(err)
		}
		whiteout := func(p string) {
			mkdirs(p)
			must(tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(filepath.Join(filepath.Dir(p), ".wh."+filepath.Base(p))), Typeflag: tar.TypeReg, Mode: 0o600, ModTime: t0}))
		}
		keys := make([]string, 0, len(live))
		for k := range live {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if l == 0 {
			for _, k := range keys {
				put(live[k])
			}
		} else {
			for _, k := range keys {
				f := live[k]
				switch r := rnd.IntN(1000); {
				case r < 20: // replaced
					f.gen = l
					put(f)
				case r < 30: // removed
					whiteout(strings.TrimSuffix(k, "/"))
					delete(live, k)
				}
			}
			// New files: copies of existing ones under a new name.
			for i := 0; i < len(keys)/200; i++ {
				g := live[keys[rnd.IntN(len(keys))]]
				if g == nil {
					continue
				}
				f := *g
				f.path = fmt.Sprintf("new%d/%s", l, f.path)
				live[f.path] = &f
				put(&f)
			}
			if l%5 == 0 {
				// An opaque directory: a top-level directory replaced by
				// half of its files.
				k := keys[rnd.IntN(len(keys))]
				for !strings.Contains(k, "/") {
					k = keys[rnd.IntN(len(keys))]
				}
				top := strings.SplitN(k, "/", 2)[0]
				{
					mkdirs(top + "/x")
					must(tw.WriteHeader(&tar.Header{Name: top + "/.wh..wh..opq", Typeflag: tar.TypeReg, Mode: 0o600, ModTime: t0}))
					for _, k := range keys {
						if f := live[k]; f != nil && strings.HasPrefix(k, top+"/") {
							if rnd.IntN(2) == 0 {
								delete(live, k)
							} else {
								put(f)
							}
						}
					}
				}
			}
		}
		must(tw.Close())
		data := buf.Bytes()
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }, tarball.WithMediaType(types.OCILayer))
		must(err)
		img, err = mutate.AppendLayers(img, layer)
		must(err)
		fmt.Fprintf(os.Stderr, "layer %d: %d bytes of tar, %d files live\n", l, len(data), len(live))
	}
	cf, err := img.ConfigFile()
	must(err)
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	img, err = mutate.ConfigFile(img, cf)
	must(err)
	p, err := layout.Write(*out, empty.Index)
	must(err)
	must(p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": "bench"})))
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

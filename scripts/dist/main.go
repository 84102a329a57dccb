// Command dist packs the release archives: for each built target
// directory (bin/cross/OS-ARCH) one archive holding the binaries, the
// manual pages, README.md and LICENSE under godwarfs-VERSION-OS-ARCH/,
// a tar.gz (a zip for Windows), plus SHA256SUMS over the archives.
//
// The archives are reproducible: entries in name order, every time set
// to -epoch, owner 0, fixed modes, and gzip without name or time.
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

type file struct {
	name string // inside the archive
	data []byte
	exec bool
}

func main() {
	version := flag.String("version", "dev", "version in the archive names")
	epoch := flag.Int64("epoch", 0, "time of every entry (seconds since 1970)")
	out := flag.String("o", "dist", "output directory")
	flag.Parse()
	if err := run(*version, time.Unix(*epoch, 0).UTC(), *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "dist:", err)
		os.Exit(1)
	}
}

// run packs each target directory of dirs (named OS-ARCH) with the shared
// documents.
func run(version string, mtime time.Time, out string, dirs []string) error {
	if len(dirs) == 0 {
		return fmt.Errorf("no target directories given")
	}
	docs, err := documents()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var sums []string
	for _, d := range dirs {
		target := filepath.Base(d)
		bins, err := binaries(d)
		if err != nil {
			return err
		}
		if len(bins) == 0 {
			return fmt.Errorf("%s: no binaries", d)
		}
		top := "godwarfs-" + version + "-" + target
		files := append(bins, docs...)
		for i := range files {
			files[i].name = top + "/" + files[i].name
		}
		sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
		var buf bytes.Buffer
		name := top + ".tar.gz"
		if strings.HasPrefix(target, "windows-") {
			name = top + ".zip"
			err = writeZip(&buf, top, files, mtime)
		} else {
			err = writeTarGz(&buf, top, files, mtime)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(out, name), buf.Bytes(), 0o644); err != nil {
			return err
		}
		sums = append(sums, fmt.Sprintf("%x  %s\n", sha256.Sum256(buf.Bytes()), name))
		fmt.Println(filepath.Join(out, name))
	}
	sort.Strings(sums)
	return os.WriteFile(filepath.Join(out, "SHA256SUMS"), []byte(strings.Join(sums, "")), 0o644)
}

// completionDirs maps the completions/ directories to where each shell
// looks for them below a prefix such as /usr/local.
var completionDirs = map[string]string{
	"bash": "share/bash-completion/completions",
	"zsh":  "share/zsh/site-functions",
	"fish": "share/fish/vendor_completions.d",
}

// documents are README.md, LICENSE, the manual pages and the shell
// completions, the last two laid out as below an install prefix.
func documents() ([]file, error) {
	var docs []file
	for _, n := range []string{"README.md", "LICENSE"} {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		docs = append(docs, file{name: n, data: b})
	}
	pages, err := filepath.Glob("man/*.1")
	if err != nil || len(pages) == 0 {
		return nil, fmt.Errorf("no manual pages in man/ (make man)")
	}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		docs = append(docs, file{name: "man/man1/" + filepath.Base(p), data: b})
	}
	shells := make([]string, 0, len(completionDirs))
	for sh := range completionDirs {
		shells = append(shells, sh)
	}
	sort.Strings(shells)
	for _, sh := range shells {
		scripts, err := filepath.Glob(filepath.Join("completions", sh, "*"))
		if err != nil || len(scripts) == 0 {
			return nil, fmt.Errorf("no %s completions in completions/ (make man)", sh)
		}
		for _, p := range scripts {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			docs = append(docs, file{name: completionDirs[sh] + "/" + filepath.Base(p), data: b})
		}
	}
	return docs, nil
}

func binaries(dir string) ([]file, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []file
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, file{name: e.Name(), data: b, exec: true})
	}
	return out, nil
}

func mode(f file) int64 {
	if f.exec {
		return 0o755
	}
	return 0o644
}

func writeTarGz(buf *bytes.Buffer, top string, files []file, mtime time.Time) error {
	gz, err := gzip.NewWriterLevel(buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	gz.ModTime = time.Unix(0, 0) // no name, no time: the bytes depend on the contents only
	tw := tar.NewWriter(gz)
	dirs := map[string]bool{}
	for _, f := range files {
		for d := filepath.ToSlash(filepath.Dir(f.name)); d != "." && !dirs[d]; d = filepath.ToSlash(filepath.Dir(d)) {
			dirs[d] = true
		}
	}
	var dl []string
	for d := range dirs {
		dl = append(dl, d)
	}
	sort.Strings(dl)
	hdr := func(h *tar.Header) *tar.Header {
		h.ModTime, h.Uname, h.Gname, h.Format = mtime, "root", "root", tar.FormatPAX
		h.PAXRecords = nil
		return h
	}
	for _, d := range dl {
		if err := tw.WriteHeader(hdr(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755})); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := tw.WriteHeader(hdr(&tar.Header{Name: f.name, Typeflag: tar.TypeReg, Mode: mode(f), Size: int64(len(f.data))})); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func writeZip(buf *bytes.Buffer, top string, files []file, mtime time.Time) error {
	zw := zip.NewWriter(buf)
	for _, f := range files {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: mtime}
		h.SetMode(fs.FileMode(mode(f)))
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := w.Write(f.data); err != nil {
			return err
		}
	}
	return zw.Close()
}

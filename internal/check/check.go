// Package check implements dwarfsck: image summary, listing, checksums and
// integrity checks, with output modelled on the reference tool.
package check

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/metadata"
)

// Exit codes (the same for every tool; see package cli).
const (
	ExitOK    = cli.ExitOK
	ExitImage = cli.ExitError
	// ExitNoHeader: --print-header on an image without a header.
	ExitNoHeader = cli.ExitPartial
)

// errNoHeader: --print-header found no header.
var errNoHeader = errors.New("image has no header")

// Main runs dwarfsck with args (without the program name).
func Main(args []string, stdout, stderr io.Writer) int {
	prog := Program()
	res, code, done := prog.Parse(args, stdout, stderr)
	if done {
		return code
	}
	img := res.Get("input", "")
	if img == "" && len(res.Args) > 0 {
		img, res.Args = res.Args[0], res.Args[1:]
	}
	if len(res.Args) > 0 {
		return prog.Fail(stderr, cli.Unexpected(res.Args[0]))
	}
	if img == "" {
		return prog.Fail(stderr, cli.Usagef("no image given (-i IMAGE or IMAGE)"))
	}
	if err := run(img, res, stdout); err != nil {
		code := prog.Fail(stderr, err)
		if errors.Is(err, errNoHeader) {
			return ExitNoHeader
		}
		return code
	}
	return ExitOK
}

func run(img string, res *cli.Result, stdout io.Writer) error {
	off, err := res.ImageOffset()
	if err != nil {
		return err
	}
	if _, err := res.LogLevel(); err != nil {
		return err
	}
	detail := 2
	if v := res.Get("detail", ""); v != "" {
		if detail, err = strconv.Atoi(v); err != nil || detail < 0 {
			return cli.BadValue("detail", v, "expected a level from 0 to 6")
		}
	}
	var algo string
	if res.Has("checksum") {
		algo = strings.ToLower(res.Get("checksum", ""))
		if newHash(algo) == nil {
			return cli.BadValue("checksum", algo, "expected one of "+strings.Join(algoNames(), ", "))
		}
	}
	// off is -1 for --image-offset=auto; an explicit 0 is exact.
	opts := godwarfs.Options{ImageOffset: off, ExactOffset: off == 0}
	// The library only warns about bad blocks; dwarfsck checks them itself.
	opts.NoCheck = true
	im, err := godwarfs.Open(img, &opts)
	if err != nil {
		return err
	}
	defer im.Close()

	if res.Has("print-header") {
		return printHeader(img, im, stdout)
	}
	if err := verifySections(im, !res.Has("no-check"), res.Has("check-integrity")); err != nil {
		return err
	}
	if res.Has("export-metadata") {
		return exportMetadata(im, res.Get("export-metadata", ""), stdout)
	}
	if err := imageaccess.Of(im).FS.Check(); err != nil {
		return fmt.Errorf("%s: metadata check: %w", img, err)
	}
	switch {
	case res.Has("list"):
		return list(im, stdout)
	case algo != "":
		return checksums(im, algo, stdout)
	case res.Has("json"):
		info, err := Gather(im)
		if err != nil {
			return err
		}
		b, err := json.Marshal(info.JSON())
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	if detail == 0 {
		return nil
	}
	info, err := Gather(im)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, info.Text(detail))
	if err != nil {
		return err
	}
	if detail >= 3 {
		if err := printSections(im, stdout); err != nil {
			return err
		}
	}
	if detail >= 4 {
		return printInodes(im, stdout, detail >= 5)
	}
	return nil
}

// exportMetadata writes the stored metadata model as JSON (see
// metadata.ExportJSON) to path, or to stdout for "-". A partially written
// file is removed on error.
func exportMetadata(im *godwarfs.Image, path string, stdout io.Writer) error {
	if path == "" {
		return cli.BadValue("export-metadata", path, "expected a file name or -")
	}
	if path == "-" {
		return metadata.ExportJSON(imageaccess.Of(im).Metadata, stdout)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("export metadata: %w", err)
	}
	err = metadata.ExportJSON(imageaccess.Of(im).Metadata, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("export metadata: %w", err)
	}
	return nil
}

func printHeader(img string, im *godwarfs.Image, w io.Writer) error {
	off := imageaccess.Of(im).Blocks.Offset()
	if off <= 0 {
		return fmt.Errorf("%s: %w", img, errNoHeader)
	}
	f, err := os.Open(img)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, io.NewSectionReader(f, 0, off))
	return err
}

// integrityError puts the image name before "integrity check failed",
// keeping the cause (which names the section) wrapped.
type integrityError struct {
	prefix string
	err    error
}

func (e *integrityError) Error() string {
	return e.prefix + "integrity check failed: " + strings.TrimPrefix(e.err.Error(), e.prefix)
}
func (e *integrityError) Unwrap() error { return e.err }

// verifySections checks the checksums of every section and names the
// first bad one.
func verifySections(im *godwarfs.Image, fast, full bool) error {
	prefix := im.Name() + ": "
	if !fast && !full {
		return nil
	}
	bi := imageaccess.Of(im).Blocks
	for _, s := range bi.Sections() {
		var err error
		if full {
			err = bi.VerifyFull(s)
		} else {
			err = bi.VerifyFast(s)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "section") {
				err = fmt.Errorf("section %d (%s): %w", s.Index, s.Type, err)
			}
			if full {
				return &integrityError{prefix: prefix, err: err}
			}
			return err
		}
	}
	return nil
}

func list(im *godwarfs.Image, w io.Writer) error {
	var b strings.Builder
	err := imageaccess.Of(im).FS.Walk(func(p string, _ uint32, _ metadata.Inode) error {
		if p != "" {
			b.WriteString(p)
			b.WriteByte('\n')
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", im.Name(), err)
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// xxh3128 adapts zeebo/xxh3's 128-bit hasher, printing Hi then Lo (the
// canonical big-endian form).
type xxh3128 struct{ h *xxh3.Hasher }

func (x xxh3128) Write(p []byte) (int, error) { return x.h.Write(p) }
func (x xxh3128) Sum(b []byte) []byte {
	v := x.h.Sum128().Bytes()
	return append(b, v[:]...)
}
func (x xxh3128) Reset()         { x.h.Reset() }
func (x xxh3128) Size() int      { return 16 }
func (x xxh3128) BlockSize() int { return x.h.BlockSize() }

func algoNames() []string {
	return []string{"sha256", "sha512", "sha512-256", "xxh3-64", "xxh3-128"}
}

func newHash(algo string) hash.Hash {
	switch algo {
	case "sha256":
		return sha256.New()
	case "sha512":
		return sha512.New()
	case "sha512-256", "sha512/256":
		return sha512.New512_256()
	case "xxh3-64":
		return xxh3.New()
	case "xxh3-128":
		return xxh3128{xxh3.New()}
	}
	return nil
}

// checksums prints "HEX  path" for every regular file in walk order.
func checksums(im *godwarfs.Image, algo string, w io.Writer) error {
	h := newHash(algo)
	buf := make([]byte, 1<<20)
	return imageaccess.Of(im).FS.Walk(func(p string, ino uint32, in metadata.Inode) error {
		if in.Mode&metadata.ModeType != metadata.ModeRegular {
			return nil
		}
		r, err := im.OpenInode(ino)
		if err != nil {
			return err
		}
		h.Reset()
		if _, err := io.CopyBuffer(h, io.NewSectionReader(r, 0, r.Size()), buf); err != nil {
			return fmt.Errorf("%s: %s: %w", im.Name(), p, err)
		}
		_, err = fmt.Fprintf(w, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), p)
		return err
	})
}

func printSections(im *godwarfs.Image, w io.Writer) error {
	bi := imageaccess.Of(im).Blocks
	fmt.Fprintf(w, "sections:\n")
	for _, s := range bi.Sections() {
		fmt.Fprintf(w, "  %d: %s %s, %d bytes at offset %d\n", s.Index, s.Type, s.Compression, s.Length, s.HeaderOffset)
	}
	return nil
}

// printInodes lists every path with its inode data; with chunks, also
// each regular file's chunk list.
func printInodes(im *godwarfs.Image, w io.Writer, chunks bool) error {
	fmt.Fprintf(w, "inodes:\n")
	return imageaccess.Of(im).FS.Walk(func(p string, ino uint32, in metadata.Inode) error {
		if p == "" {
			p = "/"
		}
		fmt.Fprintf(w, "  %s %d %d/%d %d %s [inode %d]\n", godwarfs.FileMode(in.Mode), in.Nlink, in.Uid, in.Gid, in.Size, p, ino)
		if !chunks || in.Mode&metadata.ModeType != metadata.ModeRegular {
			return nil
		}
		cs, err := imageaccess.Of(im).FS.FileChunks(ino)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", im.Name(), p, err)
		}
		for _, c := range cs {
			if c.Hole {
				fmt.Fprintf(w, "      hole %d bytes\n", c.Size)
			} else {
				fmt.Fprintf(w, "      block %d offset %d size %d\n", c.Block, c.Offset, c.Size)
			}
		}
		return nil
	})
}

// SizeWithUnit formats a byte count like the reference: whole bytes below
// 1 KiB, else four significant digits and a binary unit.
func SizeWithUnit(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v := float64(n) / 1024
	u := 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return strconv.FormatFloat(v, 'g', 4, 64) + " " + units[u]
}

func percent(a, b int64) string {
	if b == 0 {
		return "-nan%" // what the reference prints for 0/0
	}
	return fmt.Sprintf("%.2f%%", 100*float64(a)/float64(b))
}

func fmtTime(sec uint64) string {
	return time.Unix(int64(sec), 0).UTC().Format("2006-01-02 15:04:05")
}

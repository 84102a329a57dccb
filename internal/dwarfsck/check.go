// Package dwarfsck implements the dwarfsck command: image summary, listing, checksums and
// integrity checks, with output modelled on the reference tool.
package dwarfsck

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha3"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeebo/xxh3"
	"golang.org/x/crypto/blake2b"
	"golang.org/x/crypto/blake2s"
	"golang.org/x/crypto/ripemd160"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/metadata"
	_ "github.com/godwarfs/godwarfs/source/remote" // images at http(s)://, s3:// and docker://
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

// Tool is dwarfsck for the commands.
var Tool = cli.Tool{Name: "dwarfsck", Main: Main}

// Main runs dwarfsck with the command line args (args[0] is the program
// name) and returns the exit status.
func Main(_ context.Context, args []string, stdio cli.Stdio) int {
	args = args[min(1, len(args)):]
	stdout, stderr := stdio.Out, stdio.Err
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
	features := FeaturesForLevel(2)
	if v, ok := res.Lookup("detail"); ok {
		if features, err = ParseFeatures(v); err != nil {
			return err
		}
	}
	var algo string
	if res.Has("checksum") {
		algo = strings.ToLower(res.Get("checksum", ""))
		if newHash(algo) == nil {
			return cli.BadValue("checksum", algo, "expected one of "+strings.Join(algoNames(), ", "))
		}
	}
	if res.Has("no-check") && res.Has("check-integrity") {
		return cli.Conflict("no-check", "check-integrity")
	}
	if res.Has("print-header") {
		for _, o := range []string{"json", "export-metadata", "check-integrity", "list", "checksum"} {
			if res.Has(o) {
				return cli.Conflict("print-header", o)
			}
		}
	}
	quiet, verbose := res.Has("quiet"), res.Has("verbose")
	if quiet && verbose {
		return cli.Conflict("quiet", "verbose")
	}
	// off is -1 for --image-offset=auto; an explicit 0 is exact.
	opts := godwarfs.Options{ImageOffset: off, ExactOffset: off == 0}
	if n, ok, err := res.Int("num-workers", 1, 1024); err != nil {
		return err
	} else if ok {
		opts.Workers = n
	}
	mode, err := signMode(res)
	if err != nil {
		return err
	}
	if mode == "push" {
		return runPush(img, res.Get("push", ""), res.Get("signature", ""), opts, quiet, stdout)
	}
	if mode != "" {
		return runSign(mode, img, off, max(opts.Workers, 2), quiet, res, stdout)
	}
	if n, ok, err := res.Size("cache-size", false); err != nil {
		return err
	} else if ok {
		opts.CacheSize = n
	}
	// The library only warns about bad blocks; dwarfsck checks them itself.
	opts.NoCheck = true
	// Every section header is checked, not only those of blocks read.
	opts.EagerHeaders = true
	// --no-check skips the consistency check of the metadata, as the
	// reference's does: it is checked as for serving.
	noCheck := res.Has("no-check")
	opts.LazyMetadataCheck = noCheck
	// One image, read until exit: its metadata is mapped rather than
	// copied, as the driver does.
	opts.MapMetadata = true
	im, err := godwarfs.Open(img, &opts)
	if err != nil {
		return err
	}
	defer im.Close()

	if res.Has("print-header") {
		return printHeader(img, im, stdout)
	}
	if err := verifySections(im, !noCheck, res.Has("check-integrity")); err != nil {
		return err
	}
	if res.Has("export-metadata") {
		return exportMetadata(im, res.Get("export-metadata", ""), stdout)
	}
	if !noCheck {
		if err := imageaccess.Of(im).FS.Check(); err != nil {
			return fmt.Errorf("%s: metadata check: %w", img, err)
		}
	}
	// As the reference: the report unless -q, --list or --checksum; then
	// the list and the checksums.
	if !quiet && !res.Has("list") && algo == "" {
		if err := report(im, features, res.Has("json"), stdout); err != nil {
			return err
		}
	}
	if res.Has("list") {
		if err := list(im, stdout, verbose); err != nil {
			return err
		}
	}
	if algo != "" {
		return checksums(im, algo, stdout)
	}
	return nil
}

// selectJSON keeps the parts of the JSON summary that features select, as
// the reference does: the creator keys always, the version and offset with
// version, the history with history, and the rest with metadata_summary.
func selectJSON(m map[string]any, f Features) map[string]any {
	for k := range m {
		var need Features
		switch k {
		case "created_by", "created_on", "features":
			continue
		case "version", "image_offset":
			need = FeatVersion
		case "history":
			need = FeatHistory
		default:
			need = FeatMetadataSummary
		}
		if f&need == 0 {
			delete(m, k)
		}
	}
	return m
}

// report prints the summary parts selected by features, as text or JSON.
func report(im *godwarfs.Image, features Features, asJSON bool, stdout io.Writer) error {
	info, err := Gather(im)
	if err != nil {
		return err
	}
	if asJSON {
		b, err := json.Marshal(selectJSON(info.JSON(), features))
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	var b strings.Builder
	if features&FeatVersion != 0 {
		b.WriteString(info.VersionLine())
	}
	if features&FeatSectionDetails != 0 {
		writeSections(&b, im)
	}
	b.WriteString(info.Text(features &^ FeatVersion))
	if _, err := io.WriteString(stdout, b.String()); err != nil {
		return err
	}
	if features&FeatDirectoryTree != 0 {
		if err := printInodes(im, stdout, features&FeatChunkDetails != 0); err != nil {
			return err
		}
	}
	if features&FeatMetadataFullDump != 0 {
		if _, err := io.WriteString(stdout, "metadata:\n"); err != nil {
			return err
		}
		return metadata.ExportJSON(imageaccess.Of(im).Metadata, stdout)
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
// first bad one. Sections are checked by as many workers as blocks are
// decompressed at once (-n): reading the image is most of the work.
func verifySections(im *godwarfs.Image, fast, full bool) error {
	prefix := im.Name() + ": "
	if !fast && !full {
		return nil
	}
	bi := imageaccess.Of(im).Blocks
	secs := bi.Sections()
	errs := make([]error, len(secs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(imageaccess.Of(im).Cache.Workers(), 1) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(secs) {
					return
				}
				if full {
					errs[i] = bi.VerifyFull(secs[i])
				} else {
					errs[i] = bi.VerifyFast(secs[i])
				}
				if errs[i] != nil {
					next.Store(int64(len(secs))) // no need to read further
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			continue
		}
		s := secs[i]
		if !strings.Contains(err.Error(), "section") {
			err = fmt.Errorf("section %d (%s): %w", s.Index, s.Type, err)
		}
		if full {
			return &integrityError{prefix: prefix, err: err}
		}
		return err
	}
	return nil
}

// list prints every path; verbose adds mode, owner, size and mtime like
// "ls -l" (and the root, whose path is empty), as the reference does.
func list(im *godwarfs.Image, w io.Writer, verbose bool) error {
	var b strings.Builder
	var uidW, gidW, sizeW int
	if verbose {
		err := imageaccess.Of(im).FS.Walk(func(_ string, _ uint32, in metadata.Inode) error {
			uidW = max(uidW, len(strconv.FormatUint(uint64(in.Uid), 10)))
			gidW = max(gidW, len(strconv.FormatUint(uint64(in.Gid), 10)))
			sizeW = max(sizeW, len(strconv.FormatInt(in.Size, 10)))
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", im.Name(), err)
		}
	}
	err := imageaccess.Of(im).FS.Walk(func(p string, ino uint32, in metadata.Inode) error {
		if !verbose {
			if p != "" {
				b.WriteString(p)
				b.WriteByte('\n')
			}
			return nil
		}
		name := p
		if in.Mode&metadata.ModeType == metadata.ModeSymlink {
			t, err := imageaccess.Of(im).FS.Readlink(ino)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			name += " -> " + t
		}
		mtime := time.Unix(in.Mtime.Sec, 0).Format("2006-01-02 15:04")
		fmt.Fprintf(&b, "%s %*d/%*d %*d %s %s\n", modeString(in.Mode), uidW, in.Uid, gidW, in.Gid, sizeW, in.Size, mtime, name)
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", im.Name(), err)
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// modeString is the "ls -l" form of an st_mode: type, then rwx triplets
// with setuid, setgid and sticky as s/S and t/T.
func modeString(mode uint32) string {
	var b [10]byte
	switch mode & metadata.ModeType {
	case metadata.ModeDir:
		b[0] = 'd'
	case metadata.ModeSymlink:
		b[0] = 'l'
	case metadata.ModeChar:
		b[0] = 'c'
	case metadata.ModeBlock:
		b[0] = 'b'
	case metadata.ModeFIFO:
		b[0] = 'p'
	case metadata.ModeSocket:
		b[0] = 's'
	default:
		b[0] = '-'
	}
	const rwx = "rwxrwxrwx"
	for i := range 9 {
		b[1+i] = '-'
		if mode&(1<<(8-i)) != 0 {
			b[1+i] = rwx[i]
		}
	}
	special := func(bit uint32, pos int, set, unset byte) {
		if mode&bit != 0 {
			if b[pos] == '-' {
				b[pos] = unset
			} else {
				b[pos] = set
			}
		}
	}
	special(0o4000, 3, 's', 'S')
	special(0o2000, 6, 's', 'S')
	special(0o1000, 9, 't', 'T')
	return string(b[:])
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

// hashes are the --checksum algorithms, named as the reference tools (and
// OpenSSL) name them; sha512/256 is also accepted for sha512-256.
var hashes = map[string]func() hash.Hash{
	"blake2b512": func() hash.Hash { h, _ := blake2b.New512(nil); return h },
	"blake2s256": func() hash.Hash { h, _ := blake2s.New256(nil); return h },
	"md5":        md5.New,
	"md5-sha1":   func() hash.Hash { return &concatHash{md5.New(), sha1.New()} },
	"ripemd160":  ripemd160.New,
	"sha1":       sha1.New,
	"sha224":     sha256.New224,
	"sha256":     sha256.New,
	"sha3-224":   func() hash.Hash { return sha3.New224() },
	"sha3-256":   func() hash.Hash { return sha3.New256() },
	"sha3-384":   func() hash.Hash { return sha3.New384() },
	"sha3-512":   func() hash.Hash { return sha3.New512() },
	"sha384":     sha512.New384,
	"sha512":     sha512.New,
	"sha512-224": sha512.New512_224,
	"sha512-256": sha512.New512_256,
	"xxh3-64":    func() hash.Hash { return xxh3.New() },
	"xxh3-128":   func() hash.Hash { return xxh3128{xxh3.New()} },
}

func algoNames() []string {
	names := make([]string, 0, len(hashes))
	for n := range hashes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func newHash(algo string) hash.Hash {
	if algo == "sha512/256" {
		algo = "sha512-256"
	}
	if h := hashes[algo]; h != nil {
		return h()
	}
	return nil
}

// concatHash is OpenSSL's md5-sha1: the two digests one after the other.
type concatHash struct{ a, b hash.Hash }

func (c *concatHash) Write(p []byte) (int, error) {
	c.a.Write(p)
	return c.b.Write(p)
}
func (c *concatHash) Sum(b []byte) []byte { return c.b.Sum(c.a.Sum(b)) }
func (c *concatHash) Reset()              { c.a.Reset(); c.b.Reset() }
func (c *concatHash) Size() int           { return c.a.Size() + c.b.Size() }
func (c *concatHash) BlockSize() int      { return c.a.BlockSize() }

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

// writeSections lists the sections; a block of a categorized image also
// names its category and, where it has them, the category metadata it
// was compressed with (the sample or pixel layout of pcmaudio/waveform
// and fits/image blocks), as the reference's dwarfsck -d 3 does.
func writeSections(w *strings.Builder, im *godwarfs.Image) {
	parts := imageaccess.Of(im)
	md := parts.Metadata
	meta := map[uint32]uint32{}
	for _, kv := range md.BlockCategoryMetadata {
		meta[kv.Key] = kv.Value
	}
	fmt.Fprintf(w, "sections:\n")
	blk := uint32(0)
	for _, s := range parts.Blocks.Sections() {
		fmt.Fprintf(w, "  %d: %s %s, %d bytes at offset %d", s.Index, s.Type, s.Compression, s.Length, s.HeaderOffset)
		if s.Type == block.SectionBlock {
			if int(blk) < len(md.BlockCategories) && int(md.BlockCategories[blk]) < len(md.CategoryNames) {
				fmt.Fprintf(w, ", category %s", md.CategoryNames[md.BlockCategories[blk]])
			}
			if m, ok := meta[blk]; ok && int(m) < len(md.CategoryMetadataJSON) {
				fmt.Fprintf(w, ", metadata %s", md.CategoryMetadataJSON[m])
			}
			blk++
		}
		w.WriteString("\n")
	}
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

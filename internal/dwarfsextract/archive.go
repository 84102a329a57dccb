package dwarfsextract

import (
	"archive/zip"
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/metadata"
)

// Formats lists the -f names: the tar variants, zip, and cpio in the
// portable "newc" (SVR4) format, plus "auto".
const Formats = "tar, gnutar, pax, ustar, zip, cpio, newc, auto"

// archiveSpec is a resolved -f: the format and an optional compression
// of the whole stream (tar only, chosen by "auto" from the name).
type archiveSpec struct {
	format string // pax, gnutar, ustar, zip, newc
	filter string // "", gzip, xz, zstd
}

// resolveFormat maps a -f name to an archiveSpec. "auto" chooses by the
// output name's extension, as the reference (through libarchive) does.
func resolveFormat(name, output string) (archiveSpec, error) {
	switch name {
	case "tar", "pax":
		return archiveSpec{format: "pax"}, nil
	case "gnutar", "ustar", "zip":
		return archiveSpec{format: name}, nil
	case "cpio", "newc":
		return archiveSpec{format: "newc"}, nil
	case "auto":
	default:
		return archiveSpec{}, fmt.Errorf("unsupported format %q (%s)", name, Formats)
	}
	if output == "" || output == "-" {
		return archiveSpec{}, fmt.Errorf("-f auto needs an output file name to choose the format from")
	}
	base := strings.ToLower(filepath.Base(output))
	for _, m := range []struct {
		ext  string
		spec archiveSpec
	}{
		{".tar", archiveSpec{"pax", ""}},
		{".tar.gz", archiveSpec{"pax", "gzip"}},
		{".tgz", archiveSpec{"pax", "gzip"}},
		{".tar.xz", archiveSpec{"pax", "xz"}},
		{".txz", archiveSpec{"pax", "xz"}},
		{".tar.zst", archiveSpec{"pax", "zstd"}},
		{".tzst", archiveSpec{"pax", "zstd"}},
		{".zip", archiveSpec{"zip", ""}},
		{".jar", archiveSpec{"zip", ""}},
		{".cpio", archiveSpec{"newc", ""}},
	} {
		if strings.HasSuffix(base, m.ext) {
			return m.spec, nil
		}
	}
	return archiveSpec{}, fmt.Errorf("-f auto: cannot tell the format from the name %q (known: .tar, .tar.gz, .tgz, .tar.xz, .txz, .tar.zst, .tzst, .zip, .jar, .cpio)", output)
}

// compressStream wraps w in the spec's whole-stream compression.
func compressStream(w io.Writer, filter string) (io.WriteCloser, error) {
	switch filter {
	case "gzip":
		return gzip.NewWriter(w), nil
	case "xz":
		return xz.NewWriter(w)
	case "zstd":
		return zstd.NewWriter(w)
	}
	return nopCloser{w}, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// archiveOutput is where an archive goes: standard output for "-", else a
// temporary file beside Output that is renamed into place only once
// complete, so a failed run leaves nothing under the final name.
type archiveOutput struct {
	io.Writer
	f      *os.File
	direct *os.File // an existing device or FIFO, written in place
	name   string
}

func openArchiveOutput(cfg *Config) (*archiveOutput, error) {
	if cfg.Output == "-" || cfg.Output == "" {
		return &archiveOutput{Writer: cfg.Stdout}, nil
	}
	if fi, err := os.Stat(cfg.Output); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s: is a directory", cfg.Output)
	} else if err == nil && !fi.Mode().IsRegular() {
		// A device or FIFO (-o /dev/null) is written in place:
		// renaming a file over it would replace the device.
		f, err := os.OpenFile(cfg.Output, os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Output, err)
		}
		return &archiveOutput{Writer: f, direct: f}, nil
	}
	f, err := os.CreateTemp(filepath.Dir(cfg.Output), "."+filepath.Base(cfg.Output)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Output, err)
	}
	return &archiveOutput{Writer: f, f: f, name: cfg.Output}, nil
}

// commit puts the finished archive under its name.
func (o *archiveOutput) commit() error {
	if o.direct != nil {
		f := o.direct
		o.direct = nil
		if err := f.Close(); err != nil {
			return fmt.Errorf("%s: %w", f.Name(), err)
		}
	}
	if o.f == nil {
		return nil
	}
	f := o.f
	o.f = nil
	err := f.Chmod(os.FileMode(0o666 &^ umask()))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), o.name)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("%s: %w", o.name, err)
	}
	return nil
}

// abort drops an unfinished archive; a no-op after commit.
func (o *archiveOutput) abort() {
	if o.direct != nil {
		o.direct.Close()
		o.direct = nil
	}
	if o.f != nil {
		o.f.Close()
		os.Remove(o.f.Name())
		o.f = nil
	}
}

// umask reads the process umask without changing it (unix.Umask would
// set it for every goroutine for a moment); 022 if it cannot be read.
func umask() uint32 {
	b, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Umask:"); ok {
				if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return uint32(m)
				}
			}
		}
	}
	return 0o022
}

// entryWriter writes one archive format; writeArchive drives it.
type entryWriter interface {
	// add writes e; data (regular files and symlinks) is its content of
	// size bytes, nil for other types.
	add(e entry, size int64, data io.Reader, linkTo string) error
	close() error
}

// newEntryWriter returns the writer of spec's format on out.
func newEntryWriter(out io.Writer, spec archiveSpec, t *tree, stderr io.Writer) (entryWriter, error) {
	switch spec.format {
	case "zip":
		return &zipWriter{zw: zip.NewWriter(out), stderr: stderr}, nil
	case "newc":
		return newCpioWriter(out, t), nil
	}
	format, err := TarFormat(spec.format)
	if err != nil {
		return nil, err
	}
	return newTarWriter(out, format, spec.filter)
}

// writeArchive writes t as an archive of spec's format, in path order.
func writeArchive(ctx context.Context, im *godwarfs.Image, t *tree, cfg Config, spec archiveSpec) (st Stats, err error) {
	out, err := openArchiveOutput(&cfg)
	if err != nil {
		return st, err
	}
	defer out.abort()
	// Headers and small members would be a write(2) each.
	bw := bufio.NewWriterSize(out, 1<<20)
	w, err := newEntryWriter(bw, spec, t, cfg.Stderr)
	if err != nil {
		return st, err
	}
	rep := &reporter{cfg: &cfg, name: im.Name()}
	n := imageaccess.Of(im).FS.InodeCount()
	a := &archiver{im: im, t: t, w: w, st: &st, prog: cfg.Progress,
		first: make([]int32, n), asked: make([]bool, n), ahead: readAhead(im)}
	for i := range t.nodes {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		st.Entries++
		if err := a.add(i); err != nil {
			if ferr := rep.fail(t.path(i), err); ferr != nil {
				return st, ferr
			}
		}
	}
	if err := w.close(); err != nil {
		return st, fmt.Errorf("writing %s: %w", cfg.Output, err)
	}
	if err := bw.Flush(); err != nil {
		return st, fmt.Errorf("writing %s: %w", cfg.Output, err)
	}
	if err := out.commit(); err != nil {
		return st, err
	}
	st.Errors = rep.count
	return st, nil
}

// archiver feeds the entries of t to an entryWriter.
type archiver struct {
	im    *godwarfs.Image
	t     *tree
	w     entryWriter
	st    *Stats
	prog  *Progress
	first []int32 // 1 + node of the first archived name of each regular inode

	// An archive is written one member at a time, in path order. So that
	// the cache's workers decode while a member is written, the blocks of
	// the next ahead bytes are asked for: of the member itself as it is
	// read (aheadReader), and of the members after it (lookahead).
	ahead  int64
	asked  []bool // the regular inodes lookahead has seen
	next   int    // the first node lookahead has not looked at
	queued int64  // data bytes of the inodes it asked for that are not yet written
}

// lookahead asks for the blocks of the files after node i whose data
// starts within ahead bytes of the end of i's.
func (a *archiver) lookahead(i int) {
	a.next = max(a.next, i+1)
	for ; a.next < len(a.t.nodes) && a.queued < a.ahead; a.next++ {
		n := &a.t.nodes[a.next]
		if n.typ() != metadata.ModeRegular || a.asked[n.ino] || a.first[n.ino] != 0 {
			continue
		}
		a.asked[n.ino] = true
		r, err := a.im.OpenInode(n.ino)
		if err != nil {
			continue // writing it reports the error
		}
		r.Prefetch(0, a.ahead-a.queued)
		a.queued += r.Size()
		r.Close()
	}
}

func (a *archiver) add(i int) error {
	e, err := a.t.entry(a.im, i)
	if err != nil {
		return err
	}
	switch e.in.Mode & metadata.ModeType {
	case metadata.ModeRegular:
		r, err := a.im.OpenInode(e.ino)
		if err != nil {
			return err
		}
		defer r.Close()
		var linkTo string
		f := a.first[e.ino]
		if f != 0 {
			linkTo = a.t.path(int(f - 1))
		}
		if f == 0 && a.asked[e.ino] {
			a.queued = max(a.queued-r.Size(), 0)
		}
		a.lookahead(i)
		cr := &countingReader{r: &aheadReader{f: r, ahead: a.ahead}}
		if err := a.w.add(e, r.Size(), cr, linkTo); err != nil {
			return err
		}
		if cr.n != r.Size() && cr.n != 0 {
			return io.ErrUnexpectedEOF
		}
		if f == 0 {
			// Only a name that made it into the archive can be linked to.
			a.first[e.ino] = int32(i) + 1
			a.st.Files++
			a.st.Bytes += r.Size()
			if a.prog != nil {
				a.prog.Add(1, r.Size())
			}
		}
		return nil
	case metadata.ModeSymlink:
		t, err := imageaccess.Of(a.im).FS.Readlink(e.ino)
		if err != nil {
			return err
		}
		return a.w.add(e, int64(len(t)), strings.NewReader(t), "")
	}
	return a.w.add(e, 0, nil, "")
}

// copyBuf is the buffer an archive writer copies every member's data
// through (io.Copy would allocate one per member).
type copyBuf []byte

func (b *copyBuf) get() []byte {
	if *b == nil {
		*b = make([]byte, 256<<10)
	}
	return *b
}

// aheadReader reads a file from its start, asking for the blocks of the
// next ahead bytes before each read.
type aheadReader struct {
	f     *godwarfs.File
	off   int64
	ahead int64
}

func (r *aheadReader) Read(p []byte) (int, error) {
	size := r.f.Size()
	if r.off >= size {
		return 0, io.EOF
	}
	if int64(len(p)) > size-r.off {
		p = p[:size-r.off]
	}
	if next := r.off + int64(len(p)); next < size {
		r.f.Prefetch(next, min(r.ahead, size-next))
	}
	n, err := r.f.ReadAt(p, r.off)
	r.off += int64(n)
	if err == io.EOF && n == len(p) {
		err = nil
	}
	return n, err
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// zipWriter stores entries with archive/zip. Zip has no hard links (each
// link gets the data again), no owners in its basic headers, and no
// devices, fifos or sockets: those are skipped with a warning, as
// libarchive's zip writer does.
type zipWriter struct {
	zw     *zip.Writer
	stderr io.Writer
	err    error // a member left short: the archive cannot be finished
	buf    copyBuf
}

func (z *zipWriter) add(e entry, size int64, data io.Reader, _ string) error {
	if z.err != nil {
		return z.err
	}
	in := e.in
	if in.Mode&metadata.ModeType != metadata.ModeDir && strings.HasSuffix(e.path, "/") {
		// Zip marks directories by the slash alone.
		return fmt.Errorf("a zip archive cannot hold a %s whose name ends in a slash", typeName(in.Mode))
	}
	h := &zip.FileHeader{Name: e.path, Modified: time.Unix(in.Mtime.Sec, int64(in.Mtime.Nsec))}
	perm := fs.FileMode(in.Mode & 0o777)
	for _, b := range []struct {
		unix uint32
		mode fs.FileMode
	}{{0o4000, fs.ModeSetuid}, {0o2000, fs.ModeSetgid}, {0o1000, fs.ModeSticky}} {
		if in.Mode&b.unix != 0 {
			perm |= b.mode
		}
	}
	switch in.Mode & metadata.ModeType {
	case metadata.ModeDir:
		h.Name += "/"
		h.SetMode(fs.ModeDir | perm)
	case metadata.ModeRegular:
		h.Method = zip.Deflate
		h.UncompressedSize64 = uint64(size)
		h.SetMode(perm)
	case metadata.ModeSymlink:
		h.SetMode(fs.ModeSymlink | perm)
	default:
		if z.stderr != nil {
			fmt.Fprintf(z.stderr, "dwarfsextract: warning: %s: a zip archive cannot hold a %s, skipped\n", e.path, typeName(in.Mode))
		}
		return nil
	}
	fw, err := z.zw.CreateHeader(h)
	if err != nil {
		z.err = err
		return err
	}
	if data != nil {
		n, err := io.CopyBuffer(fw, io.LimitReader(data, size), z.buf.get())
		if err == nil && n != size {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			// The member is in the archive already, with the wrong
			// content: fail the whole archive rather than keep it.
			z.err = err
			return err
		}
	}
	return nil
}

func (z *zipWriter) close() error {
	if z.err != nil {
		return z.err
	}
	return z.zw.Close()
}

func typeName(mode uint32) string {
	switch mode & metadata.ModeType {
	case metadata.ModeRegular:
		return "regular file"
	case metadata.ModeSymlink:
		return "symbolic link"
	case metadata.ModeChar:
		return "character device"
	case metadata.ModeBlock:
		return "block device"
	case metadata.ModeFIFO:
		return "fifo"
	case metadata.ModeSocket:
		return "socket"
	}
	return fmt.Sprintf("file of type %#o", mode&metadata.ModeType)
}

// cpioWriter writes the SVR4 "newc" cpio format (magic 070701), which
// GNU cpio, bsdtar and the Linux initramfs read. A small writer of our
// own: the Go cpio packages cannot store device numbers. Hard links share
// an inode number and the data goes with the last link, as GNU cpio
// expects.
type cpioWriter struct {
	w     io.Writer
	links []int32 // by inode: links in the archive
	left  []int32 // by inode: links not yet written
	err   error
	buf   copyBuf
}

func newCpioWriter(w io.Writer, t *tree) *cpioWriter {
	c := &cpioWriter{w: w}
	for i, n := range t.nodes {
		// Names that will be refused do not count: the data must go
		// with the last name that is stored.
		if n.typ() == metadata.ModeRegular && cpioNameErr(t.path(i)) == nil {
			if uint64(n.ino) >= uint64(len(c.links)) {
				c.links = slices.Grow(c.links, int(n.ino)+1-len(c.links))[:n.ino+1]
				c.left = slices.Grow(c.left, int(n.ino)+1-len(c.left))[:n.ino+1]
			}
			c.links[n.ino]++
			c.left[n.ino]++
		}
	}
	return c
}

// cpioNameErr refuses the names a newc archive cannot hold: a reader
// takes a name up to its first NUL, and stops at the trailer's name;
// either would rename or lose members.
func cpioNameErr(name string) error {
	if strings.IndexByte(name, 0) >= 0 {
		return fmt.Errorf("a cpio archive cannot hold a name with a NUL byte")
	}
	if name == cpioTrailer {
		return fmt.Errorf("a cpio archive cannot hold a member named %s, which marks its end", cpioTrailer)
	}
	return nil
}

const (
	cpioMaxSize = 1<<32 - 1
	cpioTrailer = "TRAILER!!!"
)

func (c *cpioWriter) add(e entry, size int64, data io.Reader, _ string) error {
	in := e.in
	if err := cpioNameErr(e.path); err != nil {
		return err
	}
	nlink := 1
	switch in.Mode & metadata.ModeType {
	case metadata.ModeDir:
		nlink = 2
	case metadata.ModeRegular:
		nlink = int(c.links[e.ino])
		c.left[e.ino]--
		if c.left[e.ino] > 0 {
			size, data = 0, nil // the data follows with the last link
		}
	}
	if size > cpioMaxSize {
		return fmt.Errorf("%d bytes is too large for a cpio newc archive (at most %d)", size, int64(cpioMaxSize))
	}
	mtime := max(in.Mtime.Sec, 0)
	if mtime > cpioMaxSize {
		mtime = cpioMaxSize
	}
	var rmaj, rmin uint32
	if t := in.Mode & metadata.ModeType; t == metadata.ModeChar || t == metadata.ModeBlock {
		rmaj, rmin = metadata.DevMajor(in.Rdev), metadata.DevMinor(in.Rdev)
	}
	if err := c.header(uint32(e.ino)+1, in.Mode, in.Uid, in.Gid, uint32(nlink), uint32(mtime), uint32(size), rmaj, rmin, e.path); err != nil {
		return err
	}
	if data != nil {
		n, err := io.CopyBuffer(c.w, io.LimitReader(data, size), c.buf.get())
		if err != nil {
			c.err = err
			return err
		}
		if n != size {
			// The archive cannot be continued after a short body.
			c.err = io.ErrUnexpectedEOF
			return c.err
		}
	}
	return c.pad(size)
}

// header writes a newc header and the name. Fields are 8 hex digits:
// inode, mode, uid, gid, nlink, mtime, file size, device major and minor
// (0: not kept), rdev major and minor, name size with the NUL, checksum (0
// in newc).
func (c *cpioWriter) header(ino, mode, uid, gid, nlink, mtime, size, rmaj, rmin uint32, name string) error {
	if c.err != nil {
		return c.err
	}
	h := fmt.Sprintf("070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%s\x00",
		ino, mode, uid, gid, nlink, mtime, size, 0, 0, rmaj, rmin, len(name)+1, 0, name)
	if _, err := io.WriteString(c.w, h); err != nil {
		c.err = err
		return err
	}
	return c.pad(int64(len(h)))
}

// pad writes zeros up to the next multiple of 4.
func (c *cpioWriter) pad(n int64) error {
	if c.err != nil {
		return c.err
	}
	if p := (4 - n%4) % 4; p > 0 {
		if _, err := c.w.Write(make([]byte, p)); err != nil {
			c.err = err
		}
	}
	return c.err
}

func (c *cpioWriter) close() error {
	return c.header(0, 0, 0, 0, 1, 0, 0, 0, 0, cpioTrailer)
}

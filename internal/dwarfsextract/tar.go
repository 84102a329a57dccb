package dwarfsextract

import (
	"archive/tar"
	"fmt"
	"io"
	"time"

	"github.com/godwarfs/godwarfs/metadata"
)

// TarFormat maps a -f name to an archive/tar format.
func TarFormat(name string) (tar.Format, error) {
	switch name {
	case "tar", "pax":
		return tar.FormatPAX, nil
	case "gnutar":
		return tar.FormatGNU, nil
	case "ustar":
		return tar.FormatUSTAR, nil
	}
	return 0, fmt.Errorf("unsupported format %q (tar, gnutar, pax, ustar)", name)
}

// tarWriter writes one of the tar formats through archive/tar, which
// refuses what a format cannot hold (a name too long for ustar, a NUL
// in a name) instead of storing something else. The second and later
// names of a file become hard links to the first.
type tarWriter struct {
	tw     *tar.Writer
	cw     io.WriteCloser // the whole-stream compression under tw
	format tar.Format
	buf    copyBuf
}

func newTarWriter(w io.Writer, format tar.Format, filter string) (*tarWriter, error) {
	cw, err := compressStream(w, filter)
	if err != nil {
		return nil, err
	}
	return &tarWriter{tw: tar.NewWriter(cw), cw: cw, format: format}, nil
}

func (t *tarWriter) add(e entry, size int64, data io.Reader, linkTo string) error {
	in := e.in
	h := &tar.Header{
		Name:    e.path,
		Mode:    int64(in.Mode & 0o7777),
		Uid:     int(in.Uid),
		Gid:     int(in.Gid),
		ModTime: time.Unix(in.Mtime.Sec, int64(in.Mtime.Nsec)),
		Format:  t.format,
	}
	switch t.format {
	case tar.FormatPAX:
		h.AccessTime = time.Unix(in.Atime.Sec, int64(in.Atime.Nsec))
		h.ChangeTime = time.Unix(in.Ctime.Sec, int64(in.Ctime.Nsec))
	case tar.FormatGNU:
		// GNU headers hold whole seconds only.
		h.ModTime = h.ModTime.Truncate(time.Second)
		h.AccessTime = time.Unix(in.Atime.Sec, 0)
		h.ChangeTime = time.Unix(in.Ctime.Sec, 0)
	default:
		h.ModTime = h.ModTime.Truncate(time.Second)
	}
	var body io.Reader
	switch in.Mode & metadata.ModeType {
	case metadata.ModeDir:
		h.Typeflag = tar.TypeDir
		h.Name += "/"
	case metadata.ModeRegular:
		if linkTo != "" {
			h.Typeflag, h.Linkname = tar.TypeLink, linkTo
			break
		}
		h.Typeflag, h.Size, body = tar.TypeReg, size, data
	case metadata.ModeSymlink:
		b, err := io.ReadAll(io.LimitReader(data, size+1))
		if err != nil {
			return err
		}
		if int64(len(b)) != size {
			return io.ErrUnexpectedEOF
		}
		h.Typeflag, h.Linkname = tar.TypeSymlink, string(b)
	case metadata.ModeChar, metadata.ModeBlock:
		h.Typeflag = tar.TypeChar
		if in.Mode&metadata.ModeType == metadata.ModeBlock {
			h.Typeflag = tar.TypeBlock
		}
		h.Devmajor, h.Devminor = int64(metadata.DevMajor(in.Rdev)), int64(metadata.DevMinor(in.Rdev))
	case metadata.ModeFIFO:
		h.Typeflag = tar.TypeFifo
	case metadata.ModeSocket:
		h.Typeflag = tar.TypeReg // tar has no socket type
	default:
		return fmt.Errorf("unknown file type %#o", in.Mode&metadata.ModeType)
	}
	if err := t.tw.WriteHeader(h); err != nil {
		return err
	}
	if body == nil {
		return nil
	}
	n, err := io.CopyBuffer(t.tw, io.LimitReader(body, size), t.buf.get())
	if err == nil && n != size {
		err = io.ErrUnexpectedEOF
	}
	return err
}

func (t *tarWriter) close() error {
	if err := t.tw.Close(); err != nil {
		return err
	}
	return t.cw.Close()
}

package dwarfsextract

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
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

func writeTar(im *godwarfs.Image, ents []entry, cfg Config) (Stats, error) {
	var st Stats
	format, err := TarFormat(cfg.Format)
	if err != nil {
		return st, err
	}
	var out io.Writer
	if cfg.Output == "-" || cfg.Output == "" {
		out = cfg.Stdout
	} else {
		f, err := os.Create(cfg.Output)
		if err != nil {
			return st, err
		}
		defer f.Close()
		out = f
	}
	rep := &reporter{cfg: &cfg, name: im.Name()}
	cw, err := compressStream(out, cfg.Compression)
	if err != nil {
		return st, err
	}
	tw := tar.NewWriter(cw)
	first := map[uint32]string{}
	for _, e := range ents {
		st.Entries++
		if err := tarEntry(im, tw, format, e, first, &st, cfg.Progress); err != nil {
			if ferr := rep.fail(e.path, err); ferr != nil {
				return st, ferr
			}
		}
	}
	if err := tw.Close(); err != nil {
		return st, err
	}
	if err := cw.Close(); err != nil {
		return st, err
	}
	if f, ok := out.(*os.File); ok && cfg.Output != "-" {
		if err := f.Close(); err != nil {
			return st, err
		}
	}
	st.Errors = rep.count
	return st, nil
}

func tarEntry(im *godwarfs.Image, tw *tar.Writer, format tar.Format, e entry, first map[uint32]string, st *Stats, prog *Progress) error {
	in := e.in
	h := &tar.Header{
		Name:    e.path,
		Mode:    int64(in.Mode & 0o7777),
		Uid:     int(in.Uid),
		Gid:     int(in.Gid),
		ModTime: time.Unix(in.Mtime.Sec, int64(in.Mtime.Nsec)),
		Format:  format,
	}
	switch format {
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
	var body func() error
	switch in.Mode & metadata.ModeType {
	case metadata.ModeDir:
		h.Typeflag = tar.TypeDir
		h.Name += "/"
	case metadata.ModeRegular:
		if t, ok := first[e.ino]; ok {
			h.Typeflag, h.Linkname = tar.TypeLink, t
			break
		}
		first[e.ino] = e.path
		r, err := im.OpenInode(e.ino)
		if err != nil {
			return err
		}
		h.Typeflag, h.Size = tar.TypeReg, r.Size()
		st.Files++
		st.Bytes += r.Size()
		body = func() error {
			n, err := io.Copy(tw, io.NewSectionReader(r, 0, r.Size()))
			if err == nil && n != r.Size() {
				err = io.ErrUnexpectedEOF
			}
			if err == nil && prog != nil {
				prog.Add(1, n)
			}
			return err
		}
	case metadata.ModeSymlink:
		t, err := imageaccess.Of(im).FS.Readlink(e.ino)
		if err != nil {
			return err
		}
		h.Typeflag, h.Linkname = tar.TypeSymlink, t
	case metadata.ModeChar, metadata.ModeBlock:
		h.Typeflag = tar.TypeChar
		if in.Mode&metadata.ModeType == metadata.ModeBlock {
			h.Typeflag = tar.TypeBlock
		}
		h.Devmajor, h.Devminor = int64(unix.Major(in.Rdev)), int64(unix.Minor(in.Rdev))
	case metadata.ModeFIFO:
		h.Typeflag = tar.TypeFifo
	case metadata.ModeSocket:
		h.Typeflag = tar.TypeReg // tar has no socket type
	default:
		return fmt.Errorf("unknown file type %#o", in.Mode&metadata.ModeType)
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if body != nil {
		return body()
	}
	return nil
}

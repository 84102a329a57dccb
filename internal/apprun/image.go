//go:build linux && !386 && !arm

package apprun

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/metadata"
)

// DefaultEntry is what runs when the image names no entry.
const DefaultEntry = "AppRun"

// EntryOption is the mkdwarfs option that names the entry. mkdwarfs
// records its command line in the image's history, and the runtime takes
// the entry from the newest history record that has the option.
const EntryOption = "--entry"

// appFile is the runtime's own file and the image appended to it.
type appFile struct {
	name   string   // the file, as APPIMAGE and messages name it
	f      *os.File // open for reading
	size   int64
	offset int64 // where the image starts: the end of the ELF file
}

// badImageError is an image that cannot be used; the runtime exits 127.
type badImageError struct {
	name   string
	offset int64
	err    error
}

func (e *badImageError) Error() string {
	// One line, whatever the cause's wording.
	msg := strings.ReplaceAll(e.err.Error(), "\n", "; ")
	return fmt.Sprintf("%s: no usable DwarFS image at offset %d: %s", e.name, e.offset, msg)
}

func (e *badImageError) Unwrap() error { return e.err }

// openApp opens the file at p (the runtime's own: /proc/self/exe) and
// finds where its image starts. name is how it is called in messages.
func openApp(p, name string) (*appFile, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	off, err := elfEnd(f)
	if err != nil {
		f.Close()
		return nil, &badImageError{name: name, err: err}
	}
	a := &appFile{name: name, f: f, size: st.Size(), offset: off}
	if off >= a.size {
		f.Close()
		return nil, &badImageError{name: name, offset: off, err: errors.New("nothing is appended to the runtime")}
	}
	return a, nil
}

func (a *appFile) Close() error { return a.f.Close() }

// bad wraps err as an unusable image at a's offset.
func (a *appFile) bad(err error) error {
	return &badImageError{name: a.name, offset: a.offset, err: err}
}

// image opens the appended image for reading. Block checksums are
// checked as blocks are read, as the driver does when it mounts, so that
// starting reads no more than the metadata.
func (a *appFile) image() (*godwarfs.Image, error) {
	im, err := godwarfs.OpenReaderAt(a.f, a.size, a.name, &godwarfs.Options{
		ImageOffset:    a.offset,
		LazyBlockCheck: true,
		MapMetadata:    true,
	})
	if err != nil {
		return nil, a.bad(err)
	}
	// A block compression this build leaves out fails here, not in
	// the middle of the application's start or of an extraction. Images
	// have one block compression but for categories and blocks stored
	// as they are, so the first block's says it: one header read.
	bi := imageaccess.Of(im).Blocks
	if bs := bi.Find(block.SectionBlock); len(bs) > 0 {
		s, err := bi.Header(bs[0])
		if err == nil && !s.Compression.Decodable() {
			err = fmt.Errorf("its blocks are %s-compressed, and this runtime decodes only none, lz4, lz4hc and zstd", s.Compression)
		}
		if err != nil {
			im.Close()
			return nil, a.bad(err)
		}
	}
	return im, nil
}

// sections opens the image's section structure (block headers are read
// when asked for).
func (a *appFile) sections() (*block.Image, error) {
	bi, err := block.OpenImage(a.f, a.size, block.Options{ImageOffset: a.offset, Name: a.name, LazyHeaders: true})
	if err != nil {
		return nil, a.bad(err)
	}
	return bi, nil
}

// entry returns the path in the image of the program to run: the value
// of --entry in the newest history record that has one, else AppRun.
func entry(bi *block.Image) (string, error) {
	hs := bi.Find(block.SectionHistory)
	for i := len(hs) - 1; i >= 0; i-- {
		b, err := bi.ReadDecompressed(hs[i])
		if err != nil {
			return "", err
		}
		h, err := metadata.DecodeHistory(b)
		if err != nil {
			return "", fmt.Errorf("section %d: %w", hs[i].Index, err)
		}
		for j := len(h.Entries) - 1; j >= 0; j-- {
			if e, ok := EntryFromArgs(h.Entries[j].Arguments); ok {
				return cleanEntry(e)
			}
		}
	}
	return DefaultEntry, nil
}

// EntryFromArgs finds --entry=PATH or --entry PATH in a recorded mkdwarfs
// command line (args[0] is the program).
func EntryFromArgs(args []string) (string, bool) {
	var e string
	found := false
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, EntryOption+"="); ok {
			e, found = v, true
		} else if a == EntryOption && i+1 < len(args) {
			i++
			e, found = args[i], true
		}
	}
	return e, found
}

// cleanEntry makes an entry path relative to the image root and refuses
// one that leaves it.
func cleanEntry(e string) (string, error) {
	c := path.Clean("/" + e)[1:]
	if c == "" || strings.Contains(e, "\x00") {
		return "", fmt.Errorf("the recorded entry %q is not a file path", e)
	}
	return c, nil
}

// digest identifies the image's contents: a SHA-256 of every section
// header, each of which holds its payload's SHA-512/256, so that
// computing it reads headers only. Images of the first format versions
// have no such checksums; their bytes are hashed.
func (a *appFile) digest(bi *block.Image) (string, error) {
	h := sha256.New()
	if bi.V1() {
		if _, err := io.Copy(h, io.NewSectionReader(a.f, a.offset, a.size-a.offset)); err != nil {
			return "", fmt.Errorf("%s: %w", a.name, err)
		}
	} else {
		if err := bi.LoadHeaders(); err != nil {
			return "", a.bad(err)
		}
		var rec [8 + 8 + 32 + 8]byte
		for _, s := range bi.Sections() {
			s, err := bi.Header(s)
			if err != nil {
				return "", a.bad(err)
			}
			binary.LittleEndian.PutUint16(rec[0:], uint16(s.Type))
			binary.LittleEndian.PutUint16(rec[2:], uint16(s.Compression))
			binary.LittleEndian.PutUint64(rec[8:], uint64(s.Length))
			copy(rec[16:], s.SHA512_256[:])
			binary.LittleEndian.PutUint64(rec[48:], s.XXH3)
			h.Write(rec[:])
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

package godwarfs_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/block"
	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/internal/manifest"
	"github.com/godwarfs/godwarfs/internal/testimage"
	"github.com/godwarfs/godwarfs/metadata"
)

func goodImages(t testing.TB) []fixtures.Image {
	return fixtures.Good(t)
}

func open(t testing.TB, p string) *godwarfs.Image {
	t.Helper()
	im, err := godwarfs.Open(p, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { im.Close() })
	return im
}

var typeChar = map[uint32]byte{
	0o140000: 's', 0o120000: 'l', 0o100000: '-', 0o060000: 'b', 0o040000: 'd', 0o020000: 'c', 0o010000: 'p',
}

// TestManifests opens every good image and compares it with the manifest
// of the reference extraction.
func TestManifests(t *testing.T) {
	for _, img := range goodImages(t) {
		t.Run(img.Name, func(t *testing.T) {
			t.Parallel()
			if img.Manifest == "" {
				t.Skip("no manifest")
			}
			want, err := manifest.ParseFile(img.Manifest)
			if err != nil {
				t.Fatal(err)
			}
			im := open(t, img.Path)
			checkManifest(t, im, want)
		})
	}
}

func checkManifest(t *testing.T, im *godwarfs.Image, want []manifest.Entry) {
	inodes := map[string]uint32{}
	err := imageaccess.Of(im).FS.Walk(func(p string, ino uint32, _ metadata.Inode) error {
		if p != "" {
			inodes[p] = ino
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Walk: %v", err)
	}
	if len(inodes) != len(want) {
		t.Errorf("image has %d paths, manifest %d", len(inodes), len(want))
	}
	links := map[uint32]int{}
	for _, ino := range inodes {
		links[ino]++
	}
	for _, w := range want {
		fi, err := im.Lstat(w.Path)
		if err != nil {
			t.Errorf("Lstat(%q): %v", w.Path, err)
			continue
		}
		st := fi.Sys().(*godwarfs.Stat)
		if st.Ino != inodes[w.Path] {
			t.Errorf("%s: Lstat inode %d, walk inode %d", w.Path, st.Ino, inodes[w.Path])
		}
		typ := typeChar[st.Mode&0o170000]
		// The reference extractor writes sockets as empty regular files.
		socketAsFile := typ == 's' && w.Type == '-' && w.Size == 0
		if typ != w.Type && !socketAsFile {
			t.Errorf("%s: type %c, want %c", w.Path, typ, w.Type)
			continue
		}
		// Linux shows every symlink as 0777 whatever the image stores.
		if w.Type != 'l' && st.Mode&0o7777 != w.Perm {
			t.Errorf("%s: perm %o, want %o", w.Path, st.Mode&0o7777, w.Perm)
		}
		if st.Uid != w.Uid || st.Gid != w.Gid {
			t.Errorf("%s: owner %d:%d, want %d:%d", w.Path, st.Uid, st.Gid, w.Uid, w.Gid)
		}
		if w.Type == 'd' {
			if !fi.IsDir() {
				t.Errorf("%s: not a directory", w.Path)
			}
			continue
		}
		// Legacy (<= 2.2) images store attributes per directory entry; the
		// reference extraction of a hard-link group ends up with another
		// entry's mtime than the inode's representative entry.
		legacyLink := !imageaccess.Of(im).Metadata.HasDirEntries && w.Nlink > 1
		if !legacyLink && (st.Mtime.Unix() != w.Sec || int64(st.Mtime.Nanosecond()) != w.Nsec) {
			t.Errorf("%s: mtime %d.%09d, want %d.%09d", w.Path, st.Mtime.Unix(), st.Mtime.Nanosecond(), w.Sec, w.Nsec)
		}
		if !socketAsFile && fi.Size() != w.Size {
			t.Errorf("%s: size %d, want %d", w.Path, fi.Size(), w.Size)
		}
		switch w.Type {
		case '-':
			if socketAsFile {
				break
			}
			data, err := im.ReadFile(w.Path)
			if err != nil {
				t.Errorf("ReadFile(%q): %v", w.Path, err)
				break
			}
			sum := sha256.Sum256(data)
			if got := hex.EncodeToString(sum[:]); got != w.SHA256 {
				t.Errorf("%s: sha256 %s, want %s", w.Path, got, w.SHA256)
			}
			if n := links[st.Ino]; n != w.Nlink {
				t.Errorf("%s: %d paths share inode %d, manifest nlink %d", w.Path, n, st.Ino, w.Nlink)
			}
		case 'l':
			target, err := im.ReadLink(w.Path)
			if err != nil {
				t.Errorf("Readlink(%q): %v", w.Path, err)
			} else if target != w.Target {
				t.Errorf("%s: target %q, want %q", w.Path, target, w.Target)
			}
		case 'c', 'b':
			if metadata.DevMajor(st.Rdev) != w.Major || metadata.DevMinor(st.Rdev) != w.Minor {
				t.Errorf("%s: rdev %d:%d, want %d:%d", w.Path, metadata.DevMajor(st.Rdev), metadata.DevMinor(st.Rdev), w.Major, w.Minor)
			}
		}
	}
}

func TestFutureFeatures(t *testing.T) {
	p := fixtures.File(t, "upstream", "future-features.dwarfs")
	im, err := godwarfs.Open(p, nil)
	if err == nil {
		im.Close()
		t.Fatal("Open succeeded")
	}
	if !strings.Contains(err.Error(), "this-feature-will-never-exist") || !strings.Contains(err.Error(), p) {
		t.Errorf("error %q should name the feature and the image", err)
	}
}

// TestBadFS opens corrupt images: every one must fail cleanly or work,
// never panic or hang.
func TestBadFS(t *testing.T) {
	files := fixtures.Glob(t, "badfs-sample/*.dwarfs")
	for _, f := range files {
		done := make(chan string, 1)
		go func() {
			defer func() {
				if p := recover(); p != nil {
					done <- "panic: " + strings.TrimSpace(strings.SplitN(string(stack(p)), "\n", 2)[0])
				}
			}()
			done <- exercise(f)
		}()
		select {
		case msg := <-done:
			if strings.HasPrefix(msg, "panic") || strings.Contains(msg, "(panic)") {
				t.Errorf("%s: %s", filepath.Base(f), msg)
			}
		case <-time.After(time.Second):
			t.Errorf("%s: timed out after 1s", filepath.Base(f))
		}
	}
}

func stack(p any) []byte {
	var b bytes.Buffer
	b.WriteString(strings.ReplaceAll(strings.TrimSpace(fmtAny(p)), "\n", " "))
	return b.Bytes()
}

func fmtAny(p any) string {
	if e, ok := p.(error); ok {
		return e.Error()
	}
	if s, ok := p.(string); ok {
		return s
	}
	return "non-error panic"
}

// exercise opens an image, walks it and reads every file; it returns the
// first error's text or "".
func exercise(p string) string {
	im, err := godwarfs.Open(p, nil)
	if err != nil {
		return err.Error()
	}
	defer im.Close()
	buf := make([]byte, 1<<16)
	var first error
	err = imageaccess.Of(im).FS.Walk(func(path string, ino uint32, in metadata.Inode) error {
		switch in.Mode & 0o170000 {
		case 0o100000:
			f, err := im.OpenInode(ino)
			if err != nil {
				if first == nil {
					first = err
				}
				break
			}
			for off := int64(0); ; off += int64(len(buf)) {
				n, err := f.ReadAt(buf, off)
				if err != nil {
					if err != io.EOF && first == nil {
						first = err
					}
					break
				}
				if n == 0 {
					break
				}
			}
		case 0o120000:
			if _, err := imageaccess.Of(im).FS.Readlink(ino); err != nil && first == nil {
				first = err
			}
		}
		return nil
	})
	if err != nil {
		return err.Error()
	}
	if first != nil {
		return first.Error()
	}
	return ""
}

func TestSparseSeek(t *testing.T) {
	p := fixtures.File(t, "reference", "images", "default.dwarfs")
	im := open(t, p)
	ino, err := im.Lookup("data/sparse.bin")
	if err != nil {
		t.Fatal(err)
	}
	r, err := im.OpenInode(ino)
	if err != nil {
		t.Fatal(err)
	}
	if r.Size() != 16777216 {
		t.Fatalf("size %d", r.Size())
	}
	data, err := io.ReadAll(io.NewSectionReader(r, 0, r.Size()))
	if err != nil {
		t.Fatal(err)
	}
	// Walk the data/hole map; holes must read as zeros and the map must
	// cover the file exactly.
	holes, dataBytes := int64(0), int64(0)
	for off := int64(0); off < r.Size(); {
		d, err := r.SeekData(off)
		if errors.Is(err, syscall.ENXIO) {
			d = r.Size()
		} else if err != nil {
			t.Fatal(err)
		}
		if d < off {
			t.Fatalf("SeekData(%d) = %d", off, d)
		}
		if !bytes.Equal(data[off:d], make([]byte, d-off)) {
			t.Fatalf("hole [%d,%d) is not zero", off, d)
		}
		holes += d - off
		if d == r.Size() {
			break
		}
		h, err := r.SeekHole(d)
		if err != nil || h <= d {
			t.Fatalf("SeekHole(%d) = %d, %v", d, h, err)
		}
		dataBytes += h - d
		off = h
	}
	if holes == 0 || dataBytes == 0 || holes+dataBytes != r.Size() {
		t.Errorf("holes %d + data %d != size %d (want both > 0)", holes, dataBytes, r.Size())
	}
	if _, err := r.SeekData(r.Size()); !errors.Is(err, syscall.ENXIO) {
		t.Errorf("SeekData(size): %v, want ENXIO", err)
	}
	// Fully allocated file: one data region, hole at EOF.
	ino, _ = im.Lookup("data/random.bin")
	rr, err := im.OpenInode(ino)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := rr.SeekHole(0); err != nil || h != rr.Size() {
		t.Errorf("SeekHole on dense file = %d, %v", h, err)
	}
	st, _ := im.Lstat("data/sparse.bin")
	if a := st.Sys().(*godwarfs.Stat).Allocated; a >= r.Size() {
		t.Errorf("allocated size %d not below size %d", a, r.Size())
	}
}

func TestIOFS(t *testing.T) {
	p := fixtures.File(t, "reference", "images", "default.dwarfs")
	im := open(t, p)
	// Whole-image TestFS would trip over dangling links, as os.DirFS does.
	for dir, files := range map[string][]string{
		"docs": {"doc-v1.txt"}, "unicode-ü-日本": {"файл.txt"}, "a/b": {"hello-copy.txt", "rel-link"},
	} {
		sub, err := fs.Sub(im, dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := fstest.TestFS(sub, files...); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
	// Stat follows a relative link, Lstat does not.
	fi, err := im.Stat("a/b/rel-link")
	if err != nil || fi.Mode().Type() != 0 || fi.Size() != 6 {
		t.Errorf("Stat(rel-link) = %v, %v", fi, err)
	}
	fi, err = im.Lstat("a/b/rel-link")
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat(rel-link) = %v, %v", fi, err)
	}
	if _, err := im.Stat("a/dangling"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(dangling) = %v", err)
	}
	if _, err := im.Stat("a/abs-link"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(abs-link) = %v, want not exist (leaves the image)", err)
	}
	if _, err := im.Open("/a"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("Open(/a) = %v", err)
	}
	fi, _ = im.Lstat("bin/vet")
	if fi.Mode()&fs.ModeSetuid == 0 {
		t.Errorf("bin/vet mode %v lacks setuid", fi.Mode())
	}
	fi, _ = im.Lstat("data/chardev")
	if fi.Mode()&fs.ModeCharDevice == 0 {
		t.Errorf("chardev mode %v", fi.Mode())
	}
	b, err := im.ReadFile("a/b/rel-link")
	if err != nil || string(b) != "hello\n" {
		t.Errorf("ReadFile through link = %q, %v", b, err)
	}
	// Random reads match the whole content.
	ino, _ := im.Lookup("data/repeated-segments.bin")
	full, _ := im.ReadFile("data/repeated-segments.bin")
	f, err := im.OpenInode(ino)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{0, 1, 4095, 65536, int64(len(full)) - 10} {
		buf := make([]byte, 100)
		n, err := f.ReadAt(buf, off)
		want := full[off:min(off+100, int64(len(full)))]
		if n != len(want) || !bytes.Equal(buf[:n], want) || (n < 100 && err != io.EOF) {
			t.Errorf("ReadAt(%d) = %d, %v", off, n, err)
		}
	}
}

func TestCorruptBlockFailsAtRead(t *testing.T) {
	p := fixtures.File(t, "upstream", "compat-v0.9.10.dwarfs")
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	im0 := open(t, p)
	s := imageaccess.Of(im0).Blocks.Blocks()[0]
	bad := bytes.Clone(raw)
	bad[imageaccess.Of(im0).Blocks.Offset()+s.DataOffset+10] ^= 0xff
	dst := fixtures.TempFile(t, "bad.dwarfs")
	if err := os.WriteFile(dst, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	im, err := godwarfs.Open(dst, nil)
	if err != nil {
		t.Fatalf("Open should only warn about blocks: %v", err)
	}
	defer im.Close()
	var readErr error
	imageaccess.Of(im).FS.Walk(func(path string, ino uint32, in metadata.Inode) error {
		if in.Mode&0o170000 == 0o100000 && readErr == nil {
			_, readErr = im.ReadFile(path)
		}
		return nil
	})
	if readErr == nil {
		t.Error("reading from a corrupt block succeeded")
	}
}

func BenchmarkExtract(b *testing.B) {
	p := fixtures.File(b, "reference", "images", "level-0.dwarfs")
	im := open(b, p)
	var files []uint32
	var total int64
	seen := map[uint32]bool{}
	imageaccess.Of(im).FS.Walk(func(_ string, ino uint32, in metadata.Inode) error {
		if in.Mode&0o170000 == 0o100000 && !seen[ino] {
			seen[ino] = true
			files = append(files, ino)
			total += in.Size
		}
		return nil
	})
	b.SetBytes(total)
	buf := make([]byte, 1<<20)
	b.ResetTimer()
	for b.Loop() {
		for _, ino := range files {
			f, err := im.OpenInode(ino)
			if err != nil {
				b.Fatal(err)
			}
			for off := int64(0); ; {
				n, err := f.ReadAt(buf, off)
				off += int64(n)
				if err != nil {
					if err != io.EOF {
						b.Fatal(err)
					}
					break
				}
			}
		}
	}
}

func BenchmarkStatAll(b *testing.B) {
	p := fixtures.File(b, "upstream", "catdata.dwarfs")
	im := open(b, p)
	var paths []string
	imageaccess.Of(im).FS.Walk(func(p string, _ uint32, _ metadata.Inode) error {
		if p != "" {
			paths = append(paths, p)
		}
		return nil
	})
	b.ResetTimer()
	for b.Loop() {
		for _, p := range paths {
			if _, err := im.Lstat(p); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func TestWarnings(t *testing.T) {
	p := fixtures.File(t, "reference", "images", "default.dwarfs")
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	im0 := open(t, p)
	if len(im0.Warnings()) != 0 {
		t.Fatalf("good image warns: %v", im0.Warnings())
	}
	s := imageaccess.Of(im0).Blocks.Blocks()[0]
	raw[imageaccess.Of(im0).Blocks.Offset()+s.DataOffset+100] ^= 1
	dst := fixtures.TempFile(t, "bad.dwarfs")
	if err := os.WriteFile(dst, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	im := open(t, dst)
	if len(im.Warnings()) != 1 {
		t.Errorf("warnings %v, want one", im.Warnings())
	}
	if _, err := im.ReadFile("data/random.bin"); err == nil || !strings.Contains(err.Error(), dst) {
		t.Errorf("ReadFile from bad block: %v", err)
	}
	// NoCheck skips the open-time check; compressed blocks still fail
	// their checksum when read.
	o := godwarfs.Options{}
	o.NoCheck = true
	im2, err := godwarfs.Open(dst, &o)
	if err != nil {
		t.Fatal(err)
	}
	defer im2.Close()
	if len(im2.Warnings()) != 0 {
		t.Error("NoCheck still checked")
	}
	if _, err := im2.ReadFile("data/random.bin"); err == nil {
		t.Error("corrupt compressed block read without error")
	}
	// LazyBlockCheck leaves compressed blocks to the check on load.
	if c := s.Compression; c == block.CompNone {
		t.Fatalf("block 0 of %s is stored uncompressed; the test needs a compressed one", p)
	}
	o = godwarfs.Options{LazyBlockCheck: true}
	im3, err := godwarfs.Open(dst, &o)
	if err != nil {
		t.Fatal(err)
	}
	defer im3.Close()
	if w := im3.Warnings(); len(w) != 0 {
		t.Errorf("LazyBlockCheck: warnings at open %v, want none", w)
	}
	if _, err := im3.ReadFile("data/random.bin"); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("LazyBlockCheck: ReadFile from bad block: %v, want a checksum error", err)
	}
}

func TestConcurrentReadAt(t *testing.T) {
	p := fixtures.File(t, "upstream", "catdata.dwarfs")
	o := godwarfs.Options{}
	o.CacheSize = 4 << 20 // force evictions
	im, err := godwarfs.Open(p, &o)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	type file struct {
		f    *godwarfs.File
		data []byte
	}
	var files []file
	imageaccess.Of(im).FS.Walk(func(path string, ino uint32, in metadata.Inode) error {
		if in.Mode&0o170000 == 0o100000 && in.Size > 100000 && len(files) < 6 {
			b, err := im.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := im.OpenInode(ino)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, file{f, b})
		}
		return nil
	})
	if len(files) == 0 {
		t.Skip("no large files")
	}
	errc := make(chan error, 8)
	for g := range 8 {
		go func() {
			buf := make([]byte, 5000)
			for i := range 200 {
				f := files[(g+i)%len(files)]
				off := int64((i*7919 + g*104729) % len(f.data))
				n, err := f.f.ReadAt(buf, off)
				if (err != nil && err != io.EOF) || !bytes.Equal(buf[:n], f.data[off:off+int64(n)]) {
					errc <- fmt.Errorf("ino %d off %d: n=%d err=%v", f.f.Inode(), off, n, err)
					return
				}
			}
			errc <- nil
		}()
	}
	for range 8 {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
}

func writeImage(t *testing.T, img []byte) string {
	t.Helper()
	p := fixtures.TempFile(t, "img.dwarfs")
	if err := os.WriteFile(p, img, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestChunkBlockChecks: a chunk naming a block the image lacks is refused
// at open; a chunk reaching past its block's uncompressed size is refused
// at open for stored blocks and when the block is first loaded otherwise,
// failing only the files that need that block.
func TestChunkBlockChecks(t *testing.T) {
	b0, b1 := bytes.Repeat([]byte("a"), 100), bytes.Repeat([]byte("b"), 100)
	names := []string{"a", "b"}
	build := func(comp string, c0 metadata.Chunk) string {
		md := testimage.Files(1024, names, [][]metadata.Chunk{{c0}, {{Block: 1, Offset: 0, Size: 100}}})
		img, err := testimage.Build(md, [][]byte{b0, b1}, comp)
		if err != nil {
			t.Fatal(err)
		}
		return writeImage(t, img)
	}
	p := build("zstd", metadata.Chunk{Block: 5, Offset: 0, Size: 10})
	if _, err := godwarfs.Open(p, nil); err == nil || !strings.Contains(err.Error(), "chunks[0]: block 5 out of range (2 blocks)") {
		t.Errorf("Open: %v", err)
	}
	p = build("null", metadata.Chunk{Block: 0, Offset: 90, Size: 20})
	if _, err := godwarfs.Open(p, nil); err == nil || !strings.Contains(err.Error(), "chunks[0] ends at 110, beyond block 0 of 100 bytes") {
		t.Errorf("Open (stored block): %v", err)
	}
	p = build("zstd", metadata.Chunk{Block: 0, Offset: 90, Size: 20})
	im, err := godwarfs.Open(p, nil)
	if err != nil {
		t.Fatalf("Open (compressed block, size not yet known): %v", err)
	}
	defer im.Close()
	if _, err := im.ReadFile("a"); err == nil || !strings.Contains(err.Error(), "chunks[0] ends at 110, beyond block 0 of 100 bytes") {
		t.Errorf("ReadFile a: %v", err)
	}
	if got, err := im.ReadFile("b"); err != nil || !bytes.Equal(got, b1) {
		t.Errorf("ReadFile b: %v", err)
	}
}

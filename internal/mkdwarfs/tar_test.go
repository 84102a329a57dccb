//go:build linux

package mkdwarfs

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/dwarfsextract"
	"github.com/godwarfs/godwarfs/writer"
	"golang.org/x/sys/unix"
)

// tarTree is makeTree without its sparse file (tar streams written by
// dwarfsextract carry no holes, an extracted directory may), plus a FIFO
// and, as root, a character device.
func tarTree(t *testing.T) string {
	src := makeTree(t)
	if err := os.Remove(filepath.Join(src, "sparse")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(src, "a/fifo"), 0o640); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := unix.Mknod(filepath.Join(src, "a/b/null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Log("not root: the tree has no device node")
	}
	return src
}

func extract(t *testing.T, args ...string) []byte {
	t.Helper()
	var out, stderr bytes.Buffer
	if code := dwarfsextract.Main(context.Background(), append([]string{"dwarfsextract"}, args...), cli.Stdio{Out: &out, Err: &stderr}); code != 0 {
		t.Fatalf("dwarfsextract %v: exit %d: %s", args, code, stderr.String())
	}
	return out.Bytes()
}

func sameImage(t *testing.T, what, got, want string) {
	t.Helper()
	a, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("%s: the image (%d bytes) differs from the directory's (%d bytes)", what, len(a), len(b))
	}
}

// gnuTar writes the tree at dir as a GNU format tar with archive/tar,
// hard links as links to their first name, with a ./ member for the root.
func gnuTar(t *testing.T, dir, out string) {
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	first := map[uint64]string{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		target := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if target, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, target)
		if err != nil {
			return err
		}
		h.Name, h.Format, h.Uname, h.Gname = filepath.ToSlash(rel), tar.FormatGNU, "", ""
		h.ModTime = h.ModTime.Truncate(time.Second)
		h.AccessTime, h.ChangeTime = time.Time{}, time.Time{}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.IsDir() {
			h.Name += "/"
		} else if fi.Mode().IsRegular() && st.Nlink > 1 {
			if f, ok := first[st.Ino]; ok {
				h.Typeflag, h.Linkname, h.Size = tar.TypeLink, f, 0
			} else {
				first[st.Ino] = h.Name
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Typeflag == tar.TypeReg {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			_, err = tw.Write(b)
			return err
		}
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestTarRoundTrip: an image built from the pax stream of an image, and
// from a GNU tar of its extracted tree, is byte for byte the image built
// from the extracted directory with the same options.
func TestTarRoundTrip(t *testing.T) {
	src := tarTree(t)
	dir := t.TempDir()
	img := filepath.Join(dir, "src.dwarfs")
	mk(t, "-i", src, "-o", img, "--with-devices", "--with-specials", "-l3")
	ex := filepath.Join(dir, "ex")
	if err := os.Mkdir(ex, 0o755); err != nil {
		t.Fatal(err)
	}
	extract(t, "-i", img, "-o", ex)
	pax := extract(t, "-i", img, "-f", "pax", "-o", "-")
	// The stream has no member for the root, which then takes the
	// attributes of its first member (a/); dwarfsextract leaves the
	// extracted root's as extraction made them: make them agree.
	hdr, err := tar.NewReader(bytes.NewReader(pax)).Next()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ex, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(ex, hdr.Uid, hdr.Gid); err != nil && os.Geteuid() == 0 {
		t.Fatal(err)
	}
	if err := os.Chtimes(ex, hdr.ModTime, hdr.ModTime); err != nil {
		t.Fatal(err)
	}
	gnu := filepath.Join(dir, "gnu.tar")
	gnuTar(t, ex, gnu)
	base := []string{"--no-history", "--no-create-timestamp", "--with-devices", "--with-specials", "--log-level=error"}
	if os.Geteuid() != 0 {
		t.Log("not root: the extracted tree has the tester's owner; comparing with --set-owner/--set-group 0")
		base = append(base, "--set-owner=0", "--set-group=0")
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"l1", []string{"-l1"}},
		{"l7", []string{"-l7", "-S18"}},
		{"filter-owner-chmod-time", []string{"-l2", "-F", "- *.txt", "-F", "- versions/v1.bin", "--set-owner=7", "--set-group=8", "--chmod=Fa+r,Dg+w", "--time-resolution=min"}},
		{"categorize-order", []string{"-l4", "--categorize", "--order=similarity", "--remove-empty-dirs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{}, base...), tc.args...)
			want := filepath.Join(dir, tc.name+"-dir.dwarfs")
			mk(t, append([]string{"-i", ex, "-o", want}, args...)...)
			got := filepath.Join(dir, tc.name+"-pax.dwarfs")
			if code, stderr := mkStdin(bytes.NewReader(pax), append([]string{"-i", "-", "--input-format=tar", "-o", got}, args...)...); code != 0 {
				t.Fatalf("pax from stdin: exit %d: %s", code, stderr)
			}
			sameImage(t, "pax stream", got, want)
			got = filepath.Join(dir, tc.name+"-gnu.dwarfs")
			mk(t, append([]string{"-i", gnu, "-o", got}, args...)...)
			sameImage(t, "GNU tar read in place", got, want)
		})
	}
	tarBin, err := exec.LookPath("tar")
	if err != nil {
		t.Log("skipping the tar(1) archive: no tar command")
		return
	}
	for _, format := range []string{"gnu", "pax"} {
		arch := filepath.Join(dir, "tar1-"+format+".tar")
		cmd := exec.Command(tarBin, "--format="+format, "-C", ex, "-cf", arch, ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("skipping the tar(1) %s archive: %v: %s", format, err, out)
			continue
		}
		want := filepath.Join(dir, "tar1-dir.dwarfs")
		args := append(append([]string{}, base...), "-l1")
		mk(t, append([]string{"-i", ex, "-o", want, "-f"}, args...)...)
		got := filepath.Join(dir, "tar1-"+format+".dwarfs")
		mk(t, append([]string{"-i", arch, "-o", got}, args...)...)
		sameImage(t, "tar(1) --format="+format, got, want)
	}
}

// TestTarBadInput: a broken archive fails with the member and offset
// named, and leaves no image.
func TestTarBadInput(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range []struct {
		name string
		data string
	}{{"one", strings.Repeat("1", 700)}, {"dir/two", strings.Repeat("2", 3000)}} {
		if err := tw.WriteHeader(&tar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(m.data))
	}
	tw.Close()
	good := buf.Bytes()
	badSum := append([]byte(nil), good...)
	badSum[1536+148] ^= 1 // the second header's checksum
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		data []byte
		want []string
	}{
		{"truncated", good[:1536+512+1000], []string{"member dir/two at offset 1536", "data ends early"}},
		{"bad checksum", badSum, []string{"bad tar header at offset 1536", "after member one"}},
	} {
		for _, how := range []string{"file", "pipe"} {
			t.Run(tc.name+"/"+how, func(t *testing.T) {
				out := filepath.Join(dir, "out.dwarfs")
				var code int
				var stderr string
				if how == "file" {
					in := filepath.Join(dir, "in.tar")
					if err := os.WriteFile(in, tc.data, 0o644); err != nil {
						t.Fatal(err)
					}
					code, stderr = mkStdin(nil, "-i", in, "-o", out)
				} else {
					code, stderr = mkStdin(bytes.NewReader(tc.data), "-i", "-", "-o", out)
				}
				if code == 0 {
					t.Fatal("a broken archive was accepted")
				}
				for _, w := range tc.want {
					if !strings.Contains(stderr, w) {
						t.Errorf("error %q does not say %q", stderr, w)
					}
				}
				if _, err := os.Stat(out); !os.IsNotExist(err) {
					t.Errorf("an image was written: %v", err)
				}
				ents, _ := os.ReadDir(dir)
				for _, e := range ents {
					if e.Name() != "in.tar" {
						t.Errorf("left behind: %s", e.Name())
					}
				}
			})
		}
	}
}

// TestInputFormat: auto tells archives from directories; a file that is
// neither is refused, and so is a directory given as a tar.
func TestInputFormat(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk")
	os.WriteFile(junk, bytes.Repeat([]byte("not a tar "), 200), 0o644)
	out := filepath.Join(dir, "o.dwarfs")
	if code, stderr := mkStdin(nil, "-i", junk, "-o", out); code == 0 || !strings.Contains(stderr, "neither a directory nor a tar archive") {
		t.Errorf("junk input: exit %d: %s", code, stderr)
	}
	if code, stderr := mkStdin(nil, "-i", dir, "--input-format=tar", "-o", out); code == 0 || !strings.Contains(stderr, dir) {
		t.Errorf("directory as tar: exit %d: %s", code, stderr)
	}
	if code, stderr := mkStdin(nil, "-i", dir, "--input-format=zip", "-o", out); code == 0 || !strings.Contains(stderr, "--input-format") {
		t.Errorf("bad format: exit %d: %s", code, stderr)
	}
}

// TestTarProgress: the reading phase reports the archive bytes read, up
// to the whole archive, from a file and from a pipe.
func TestTarProgress(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := range 50 {
		data := bytes.Repeat([]byte{byte(i)}, 10000+i)
		tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("d/f%d", i), Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
		tw.Write(data)
	}
	tw.Close()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.tar")
	if err := os.WriteFile(in, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{in, "-"} {
		cfg, err := ParseConfig([]string{"-i", src, "-o", filepath.Join(dir, "out.dwarfs"), "-f", "-l1"}, bytes.NewReader(buf.Bytes()), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var read int64
		var phases []string
		_, err = build(context.Background(), cfg, io.Discard, func(p writer.Progress) {
			mu.Lock()
			defer mu.Unlock()
			if len(phases) == 0 || phases[len(phases)-1] != p.Phase {
				phases = append(phases, p.Phase)
			}
			if p.Phase == phaseReading {
				read = max(read, p.Stats.ArchiveBytes)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if read != int64(buf.Len()) || len(phases) < 2 || phases[0] != phaseReading || phases[1] != phaseScanning {
			t.Errorf("%s: %d of %d bytes read reported; phases %v", src, read, buf.Len(), phases)
		}
	}
}

// TestTarSparse: GNU and pax sparse members give the image a directory
// with the same sparse file gives (the holes are where the file system
// has them).
func TestTarSparse(t *testing.T) {
	tarBin, err := exec.LookPath("tar")
	if err != nil {
		t.Skip("skipped: no tar command to write sparse archives with")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	os.Mkdir(src, 0o755)
	f, err := os.Create(filepath.Join(src, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(bytes.Repeat([]byte("data"), 4096), 1<<20)
	f.WriteAt(bytes.Repeat([]byte("more"), 1024), 3<<20)
	f.Truncate(5 << 20)
	off, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_DATA)
	f.Close()
	if err != nil || off != 1<<20 {
		t.Skipf("skipped: the file system does not report the holes (SEEK_DATA: %d, %v)", off, err)
	}
	os.Chtimes(filepath.Join(src, "sparse"), time.Unix(1e9, 0), time.Unix(1e9, 0))
	os.Chtimes(src, time.Unix(1e9, 0), time.Unix(1e9, 0))
	args := []string{"--no-history", "--no-create-timestamp", "-l1", "--log-level=error"}
	want := filepath.Join(dir, "dir.dwarfs")
	mk(t, append([]string{"-i", src, "-o", want}, args...)...)
	for _, format := range []string{"gnu", "pax"} {
		arch := filepath.Join(dir, format+".tar")
		if out, err := exec.Command(tarBin, "--sparse", "--format="+format, "-C", src, "-cf", arch, ".").CombinedOutput(); err != nil {
			t.Fatalf("tar: %v: %s", err, out)
		}
		got := filepath.Join(dir, format+".dwarfs")
		mk(t, append([]string{"-i", arch, "-o", got}, args...)...)
		sameImage(t, format+" sparse", got, want)
	}
}

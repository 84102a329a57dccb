//go:build linux && !386 && !arm

package fusefs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/faultio"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/internal/testimage"
)

// mountReaderAt opens an image from r and mounts it in-process.
func mountReaderAt(t *testing.T, r io.ReaderAt, size int64, name string) (*fusefs.Server, *godwarfs.Image) {
	t.Helper()
	im, err := godwarfs.OpenReaderAt(r, size, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	src := fusefs.NewImageSource(im)
	t.Cleanup(func() { src.Close(); im.Close() })
	return mountSrc(t, src, ""), im
}

func blockSpan(im *godwarfs.Image, n int) (off, length int64) {
	bi := imageaccess.Of(im).Blocks
	s := bi.Blocks()[n]
	return bi.Offset() + s.DataOffset, s.Length
}

// checkMount reads every file of sp through the mount: the files needing
// block bad (none if bad < 0) must fail with EIO, all others byte-exact;
// the daemon must still be serving afterwards.
func checkMount(t *testing.T, srv *fusefs.Server, sp *testimage.Spread, bad int) {
	t.Helper()
	for name, want := range sp.Files {
		got, err := os.ReadFile(filepath.Join(srv.Dir(), name))
		switch {
		case bad >= 0 && sp.NeedsBlock(name, bad):
			if !errors.Is(err, syscall.EIO) {
				t.Errorf("%s needs faulty block %d: err %v, want EIO", name, bad, err)
			}
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case !bytes.Equal(got, want):
			t.Errorf("%s: content differs", name)
		}
	}
	select {
	case <-srv.Done():
		t.Fatal("the FUSE daemon stopped after an I/O error")
	default:
	}
	if ents, err := os.ReadDir(srv.Dir()); err != nil || len(ents) != len(sp.Files) {
		t.Fatalf("mount no longer serving: %d entries, %v", len(ents), err)
	}
}

// TestFaultEIO: the driver reads through a storage fault injector. A
// read error inside a block gives EIO for exactly the files that need it,
// the others read byte-exact, the daemon keeps serving, and the files read
// again once the storage recovers. Storage that shrinks under the mount
// gives EIO too, never a crash.
func TestFaultEIO(t *testing.T) {
	sp, err := testimage.NewSpread("zstd", 3<<10)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("read error", func(t *testing.T) {
		fr := faultio.New(bytes.NewReader(sp.Image))
		srv, im := mountReaderAt(t, fr, int64(len(sp.Image)), "fault.dwarfs")
		off, n := blockSpan(im, 1)
		fr.Fail(off, n, syscall.EIO)
		checkMount(t, srv, sp, 1)
		checkMount(t, srv, sp, 1) // failures are not cached as success either
		fr.Clear()
		checkMount(t, srv, sp, -1)
	})
	t.Run("truncated", func(t *testing.T) {
		fr := faultio.New(bytes.NewReader(sp.Image))
		srv, im := mountReaderAt(t, fr, int64(len(sp.Image)), "fault.dwarfs")
		off, _ := blockSpan(im, 2)
		fr.Truncate(off + 5)
		checkMount(t, srv, sp, 2)
		fr.Clear()
		checkMount(t, srv, sp, -1)
	})
}

// skipFault skips with a reason printed even without -v.
func skipFault(t *testing.T, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	fmt.Fprintf(os.Stderr, "skipped: %s: %s\n", t.Name(), reason)
	t.Skip(reason)
}

func run(t *testing.T, name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return strings.TrimSpace(string(out)), nil
}

// TestFaultDeviceMapper puts the image on a loop device behind a
// device-mapper table whose sectors inside block 1 are an "error" target:
// real EIO from the kernel's block layer. The mount must give EIO for the
// files needing block 1 and serve the rest; after the table is replaced
// by a healthy one, every file reads again.
func TestFaultDeviceMapper(t *testing.T) {
	requireFuse(t)
	if os.Geteuid() != 0 {
		skipFault(t, "device-mapper needs root")
	}
	for _, tool := range []string{"dmsetup", "losetup"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipFault(t, "%s not installed", tool)
		}
	}
	if _, err := run(t, "dmsetup", "targets"); err != nil {
		first, _, _ := strings.Cut(err.Error(), "\n")
		skipFault(t, "kernel device-mapper unavailable: %s", first)
	}
	// Blocks of 48 KiB span many sectors, so the error range can lie wholly
	// inside block 1 and nothing else.
	sp, err := testimage.NewSpread("zstd", 48<<10)
	if err != nil {
		t.Fatal(err)
	}
	// Where block 1 lies in the image.
	probe, err := godwarfs.OpenReaderAt(bytes.NewReader(sp.Image), int64(len(sp.Image)), "probe", nil)
	if err != nil {
		t.Fatal(err)
	}
	off, n := blockSpan(probe, 1)
	probe.Close()
	const sector = 512
	first, end := (off+sector-1)/sector, (off+n)/sector
	if end <= first {
		t.Fatalf("block 1 (%d bytes at %d) spans no whole sector", n, off)
	}
	img := append(bytes.Clone(sp.Image), make([]byte, sector-len(sp.Image)%sector)...)
	total := int64(len(img)) / sector
	file := filepath.Join(t.TempDir(), "img.dwarfs")
	if err := os.WriteFile(file, img, 0o644); err != nil {
		t.Fatal(err)
	}
	loop, err := run(t, "losetup", "-f", "--show", file)
	if err != nil {
		skipFault(t, "no loop device: %v", err)
	}
	t.Cleanup(func() { run(t, "losetup", "-d", loop) })
	name := fmt.Sprintf("godwarfs-fault-%d", os.Getpid())
	bad := fmt.Sprintf("0 %d linear %s 0\n%d %d error\n%d %d linear %s %d",
		first, loop, first, end-first, end, total-end, loop, end)
	if _, err := run(t, "dmsetup", "create", name, "--table", bad); err != nil {
		skipFault(t, "cannot create a device-mapper device: %v", err)
	}
	t.Cleanup(func() { run(t, "dmsetup", "remove", "--retry", name) })
	dev := "/dev/mapper/" + name
	if _, err := os.Stat(dev); err != nil {
		run(t, "dmsetup", "mknodes", name)
	}
	im, err := godwarfs.Open(dev, nil)
	if err != nil {
		t.Fatalf("open on a device with a bad block 1: %v", err)
	}
	if w := im.Warnings(); len(w) == 0 {
		t.Error("the unreadable block gave no warning at open")
	}
	src := fusefs.NewImageSource(im)
	t.Cleanup(func() { src.Close(); im.Close() })
	srv := mountSrc(t, src, "")
	checkMount(t, srv, sp, 1)

	good := fmt.Sprintf("0 %d linear %s 0", total, loop)
	for _, args := range [][]string{{"suspend", name}, {"reload", name, "--table", good}, {"resume", name}} {
		if _, err := run(t, "dmsetup", args...); err != nil {
			t.Fatal(err)
		}
	}
	checkMount(t, srv, sp, -1)
}

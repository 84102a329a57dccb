//go:build linux && !386 && !arm && benchremote

package remote

import (
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/internal/remotetest"
	"golang.org/x/sys/unix"
)

// waitMounted waits until the FUSE mount at dir answers; the driver's pid
// xattr needs neither metadata lookups nor block data.
func waitMounted(t *testing.T, m *mount) {
	deadline := time.Now().Add(5 * time.Minute)
	buf := make([]byte, 64)
	for time.Now().Before(deadline) {
		if _, err := unix.Getxattr(m.dir, fusefs.XattrPid, buf); err == nil {
			return
		}
		if m.cmd.ProcessState != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%s did not mount", m.dir)
}

// perfmonRemote is the remote line of the driver's perfmon report.
func perfmonRemote(t *testing.T, dir string) string {
	b := make([]byte, 1<<16)
	n, err := unix.Getxattr(dir, fusefs.XattrPerfmon, b)
	if err != nil {
		t.Fatalf("getxattr %s: %v", fusefs.XattrPerfmon, err)
	}
	for _, l := range strings.Split(string(b[:n]), "\n") {
		if strings.HasPrefix(l, "remote: ") {
			return l
		}
	}
	return "(no remote line in perfmon)"
}

// smallFile picks a small file of the image (the first in walk order of
// 1-64 KiB) and returns its path, size and the stored bytes of the
// distinct blocks that hold it.
func smallFile(t *testing.T, image string) (string, int64, int, int64, string) {
	im, err := godwarfs.Open(image, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	parts := imageaccess.Of(im)
	blocks := parts.Blocks.Blocks()
	var stored int64
	for _, b := range blocks {
		stored += b.Length
	}
	shape := fmt.Sprintf("%d blocks of %d bytes (%d bytes stored), metadata section %d bytes stored, %d decoded",
		len(blocks), parts.Metadata.BlockSize, stored, parts.MetadataSection.Length, parts.MetadataSize)
	var rel string
	var size int64
	errFound := fmt.Errorf("found")
	fs.WalkDir(im, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if fi, _ := d.Info(); fi.Size() >= 1<<10 && fi.Size() <= 64<<10 {
			rel, size = p, fi.Size()
			return errFound
		}
		return nil
	})
	if rel == "" {
		t.Fatal("no file of 1-64 KiB in the image")
	}
	ino, err := im.Lookup(rel)
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := parts.FS.FileChunks(ino)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint32]bool{}
	var budget int64
	for _, c := range chunks {
		if !c.Hole && !seen[c.Block] {
			seen[c.Block] = true
			b, _ := parts.Blocks.Block(int(c.Block))
			budget += b.Length
		}
	}
	return rel, size, len(seen), budget, shape
}

// TestBenchRemoteOpen mounts a large image from loopback S3 (SeaweedFS)
// and HTTP (nginx) and reports what `ls -lR` of the whole tree and the
// read of one small file transfer. It asserts the bounds: mount
// plus listing under 1% of the object, the small file no more than the
// blocks that hold it. Run through bench/remote-open.sh.
func TestBenchRemoteOpen(t *testing.T) {
	image := os.Getenv("GODWARFS_BENCH_OPEN_IMAGE")
	bin := os.Getenv("BIN")
	if image == "" || bin == "" {
		t.Skip("skipped: run through bench/remote-open.sh (needs GODWARFS_BENCH_OPEN_IMAGE and BIN)")
	}
	st, err := os.Stat(image)
	if err != nil {
		t.Fatal(err)
	}
	size := st.Size()
	rel, fsize, nblocks, budget, shape := smallFile(t, image)

	w := remotetest.SeaweedFS(t)
	w.Bucket(t, "bench")
	t0 := time.Now()
	w.Upload(t, "bench", "image.dwarfs", image)
	upload := time.Since(t0)
	ng := remotetest.Nginx(t, filepath.Dir(image))
	env := []string{"AWS_ENDPOINT_URL_S3=" + w.URL, "AWS_ACCESS_KEY_ID=bench", "AWS_SECRET_ACCESS_KEY=bench",
		"AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true"}

	var b strings.Builder
	fmt.Fprintf(&b, "# bench/remote-open.sh\n\nimage %s: %d bytes (%.2f GiB), %s; upload to SeaweedFS took %v\n\n",
		filepath.Base(image), size, float64(size)/(1<<30), shape, upload.Round(time.Millisecond))
	fmt.Fprintf(&b, "small file: %s, %d bytes, in %d block(s) of %d stored bytes\n\n", rel, fsize, nblocks, budget)
	fmt.Fprintf(&b, "| source | mounted after | ls -lR done after | entries listed | fetched by mount + ls -lR | requests | %% of object | fetched by reading the small file | its blocks | requests |\n|---|---|---|---|---|---|---|---|---|---|\n")
	sources := []struct{ name, url string }{
		{"S3 (SeaweedFS)", "s3://bench/image.dwarfs"},
		{"HTTP (nginx)", ng.URL + "/" + filepath.Base(image)},
	}
	// A delay per request stands in for the round trip to a distant
	// server, which loopback lacks.
	if d, err := time.ParseDuration(os.Getenv("REMOTE_DELAY")); err == nil && d > 0 {
		px := remotetest.NewProxy(t, ng.URL, func(int64, *http.Request) remotetest.Fault { return remotetest.Fault{Delay: d} })
		sources = append(sources, struct{ name, url string }{fmt.Sprintf("HTTP (nginx), +%v per request", d), px.URL + "/" + filepath.Base(image)})
	}
	// The same image from the local file, for the time ls -lR takes
	// without any transfer.
	{
		start := time.Now()
		m := startMount(t, bin, image, "", nil)
		waitMounted(t, m)
		mounted := time.Since(start)
		err := exec.Command("ls", "-lR", m.dir).Run()
		listed := time.Since(start)
		m.stop(t)
		if err != nil {
			t.Fatalf("local: ls -lR: %v", err)
		}
		fmt.Fprintf(&b, "| local file | %v | %v | | - | - | - | - | | - |\n", mounted.Round(time.Millisecond), listed.Round(time.Millisecond))
	}
	var perf []string
	for _, s := range sources {
		start := time.Now()
		m := startMount(t, bin, s.url, "", env)
		waitMounted(t, m)
		mounted := time.Since(start)
		out, err := exec.Command("ls", "-lR", m.dir).Output()
		if err != nil {
			m.stop(t)
			t.Fatalf("%s: ls -lR: %v", s.name, err)
		}
		listed := time.Since(start)
		entries := 0
		for _, l := range strings.Split(string(out), "\n") {
			if len(l) > 10 && strings.ContainsAny(l[:1], "-dlcbps") && !strings.HasPrefix(l, "total ") {
				entries++
			}
		}
		open := stats(t, m.dir)
		f, err := os.Open(filepath.Join(m.dir, rel))
		if err != nil {
			m.stop(t)
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, f)
		f.Close()
		if err != nil || n != fsize {
			m.stop(t)
			t.Fatalf("%s: read %s: %d bytes, %v", s.name, rel, n, err)
		}
		after := stats(t, m.dir)
		perf = append(perf, s.name+" "+perfmonRemote(t, m.dir))
		m.stop(t)
		read, reqs := after.BytesFetched-open.BytesFetched, after.Requests-open.Requests
		pct := 100 * float64(open.BytesFetched) / float64(size)
		fmt.Fprintf(&b, "| %s | %v | %v | %d | %d | %d | %.3f%% | %d | %d | %d |\n", s.name, mounted.Round(time.Millisecond),
			listed.Round(time.Millisecond), entries, open.BytesFetched, open.Requests, pct, read, budget, reqs)
		if open.BytesFetched*100 >= size {
			t.Errorf("%s: mount and ls -lR fetched %d bytes of %d (%.2f%%), want < 1%%", s.name, open.BytesFetched, size, pct)
		}
		if read > budget {
			t.Errorf("%s: reading %s (%d bytes) fetched %d bytes; its blocks hold %d", s.name, rel, fsize, read, budget)
		}
	}
	fmt.Fprintf(&b, "\nperfmon (after the small file):\n\n")
	for _, p := range perf {
		fmt.Fprintf(&b, "    %s\n", p)
	}
	fmt.Fprintf(&b, "\nload average: %s\n", loadavg())
	fmt.Print(b.String())
	if out := os.Getenv("BENCH_REPORT"); out != "" {
		os.WriteFile(out, []byte(b.String()), 0o644)
	}
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], " ")
}

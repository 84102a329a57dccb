//go:build linux && !386 && !arm && benchremote

// Package remote benchmarks mounting an image from loopback S3
// (SeaweedFS) beside the same image mounted from a local file. It runs
// from `make bench-remote`, which builds the image and sets
// GODWARFS_BENCH_REMOTE_IMAGE; otherwise the test is skipped.
package remote

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/remotetest"
	"github.com/godwarfs/godwarfs/source"
	_ "github.com/godwarfs/godwarfs/source/remote" // reads http(s)://, s3:// and docker://
	"golang.org/x/sys/unix"
)

type result struct {
	name    string
	ttfb    time.Duration // dwarfs started -> first byte of the largest file
	read    time.Duration // full read of every file, in walk order
	bytes   int64
	fetched int64 // bytes fetched remotely (-1: local)
	reqs    int64
}

func (r result) mibs() float64 { return float64(r.bytes) / (1 << 20) / r.read.Seconds() }

type mount struct {
	cmd *exec.Cmd
	dir string
}

// startMount runs the dwarfs binary in the foreground on image.
func startMount(t *testing.T, bin, image, opts string, env []string) *mount {
	dir := t.TempDir()
	args := []string{image, dir, "-f"}
	if opts != "" {
		args = append(args, "-o", opts)
	}
	cmd := exec.Command(filepath.Join(bin, "dwarfs"), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return &mount{cmd: cmd, dir: dir}
}

func (m *mount) stop(t *testing.T) {
	if err := exec.Command("umount", m.dir).Run(); err != nil {
		exec.Command("fusermount3", "-u", m.dir).Run()
	}
	done := make(chan error, 1)
	go func() { done <- m.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		m.cmd.Process.Kill()
		<-done
	}
}

// firstByte waits until one byte of rel can be read through the mount.
func firstByte(t *testing.T, m *mount, rel string) {
	deadline := time.Now().Add(2 * time.Minute)
	buf := make([]byte, 1)
	for time.Now().Before(deadline) {
		f, err := os.Open(filepath.Join(m.dir, rel))
		if err == nil {
			n, _ := f.Read(buf)
			f.Close()
			if n == 1 {
				return
			}
		}
		time.Sleep(500 * time.Microsecond)
	}
	t.Fatalf("no byte of %s through %s", rel, m.dir)
}

// readAll reads every regular file below dir like tar does: in walk
// order, one at a time.
func readAll(t *testing.T, dir string) int64 {
	var total int64
	buf := make([]byte, 1<<20)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		n, err := io.CopyBuffer(io.Discard, f, buf)
		f.Close()
		total += n
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return total
}

func stats(t *testing.T, dir string) source.Stats {
	b := make([]byte, 4096)
	n, err := unix.Getxattr(dir, fusefs.XattrRemote, b)
	if err != nil {
		t.Fatalf("getxattr: %v", err)
	}
	var st source.Stats
	if err := json.Unmarshal(b[:n], &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// runs repeats run n times and returns the medians of time to first
// byte and read time (each on its own) with the counters of the last run.
func runs(t *testing.T, n int, name, bin, image, opts, largest string, env []string, remote bool) result {
	var all []result
	for range n {
		all = append(all, run(t, name, bin, image, opts, largest, env, remote))
	}
	med := func(f func(result) time.Duration) time.Duration {
		d := make([]time.Duration, len(all))
		for i, r := range all {
			d[i] = f(r)
		}
		slices.Sort(d)
		if len(d)%2 == 1 {
			return d[len(d)/2]
		}
		return (d[len(d)/2-1] + d[len(d)/2]) / 2
	}
	r := all[len(all)-1]
	r.ttfb = med(func(r result) time.Duration { return r.ttfb })
	r.read = med(func(r result) time.Duration { return r.read })
	for _, x := range all {
		if x.bytes != r.bytes {
			t.Errorf("%s: runs read %d and %d bytes", name, x.bytes, r.bytes)
		}
	}
	return r
}

func run(t *testing.T, name, bin, image, opts, largest string, env []string, remote bool) result {
	start := time.Now()
	m := startMount(t, bin, image, opts, env)
	defer m.stop(t)
	firstByte(t, m, largest)
	r := result{name: name, ttfb: time.Since(start), fetched: -1}
	t0 := time.Now()
	r.bytes = readAll(t, m.dir)
	r.read = time.Since(t0)
	if remote {
		st := stats(t, m.dir)
		r.fetched, r.reqs = st.BytesFetched, st.Requests
	}
	return r
}

func TestBenchRemote(t *testing.T) {
	image := os.Getenv("GODWARFS_BENCH_REMOTE_IMAGE")
	bin := os.Getenv("BIN")
	if image == "" || bin == "" {
		t.Skip("skipped: run through `make bench-remote` (needs GODWARFS_BENCH_REMOTE_IMAGE and BIN)")
	}
	im, err := godwarfs.Open(image, nil)
	if err != nil {
		t.Fatal(err)
	}
	var largest string
	var lsize int64
	fs.WalkDir(im, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, _ := d.Info(); fi.Size() > lsize {
				largest, lsize = p, fi.Size()
			}
		}
		return nil
	})
	im.Close()
	st, _ := os.Stat(image)

	w := remotetest.SeaweedFS(t)
	w.Bucket(t, "bench")
	t0 := time.Now()
	w.Upload(t, "bench", "image.dwarfs", image)
	upload := time.Since(t0)
	env := []string{"AWS_ENDPOINT_URL_S3=" + w.URL, "AWS_ACCESS_KEY_ID=bench", "AWS_SECRET_ACCESS_KEY=bench",
		"AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true"}
	url := "s3://bench/image.dwarfs"
	cache := t.TempDir()
	workers := os.Getenv("REMOTE_WORKERS")
	if workers == "" {
		workers = "4"
	}
	ro := "remote_workers=" + workers

	n := 3
	if v, err := strconv.Atoi(os.Getenv("RUNS")); err == nil && v > 0 {
		n = v
	}
	load0 := loadavg()
	local := runs(t, n, "local file", bin, image, "", largest, nil, false)
	// Remote mounts skip the checksum pass over every section at open
	// (it would fetch the whole image); so does this one.
	nocheck := runs(t, n, "local file, -o nocheck", bin, image, "nocheck", largest, nil, false)
	cold := runs(t, n, "S3, no disk cache", bin, url, ro, largest, env, true)
	run(t, "S3, filling disk cache", bin, url, ro+",disk_cache="+cache+",disk_cache_size=64g", largest, env, true)
	warm := runs(t, n, "S3, warm disk cache", bin, url, ro+",disk_cache="+cache+",disk_cache_size=64g", largest, env, true)
	load1 := loadavg()

	var b strings.Builder
	fmt.Fprintf(&b, "# make bench-remote\n\nimage %s: %d bytes; upload to SeaweedFS took %v; largest file %s (%d bytes); %s\n\n",
		filepath.Base(image), st.Size(), upload.Round(time.Millisecond), largest, lsize, ro)
	fmt.Fprintf(&b, "medians of %d runs each (a fresh driver process per run); load average %s at the start, %s at the end (%d CPUs)\n\n", n, load0, load1, runtime.NumCPU())
	fmt.Fprintf(&b, "| mount | time to first byte | full read | MiB/s | fetched bytes | requests | TTFB vs local nocheck | read MiB/s vs local nocheck |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range []result{local, nocheck, cold, warm} {
		f := "-"
		if r.fetched >= 0 {
			f = fmt.Sprint(r.fetched)
		}
		fmt.Fprintf(&b, "| %s | %v | %v | %.1f | %s | %d | %.2fx | %.2fx |\n", r.name, r.ttfb.Round(time.Millisecond),
			r.read.Round(time.Millisecond), r.mibs(), f, r.reqs,
			r.ttfb.Seconds()/nocheck.ttfb.Seconds(), r.mibs()/nocheck.mibs())
	}
	fmt.Fprintf(&b, "\nAll over loopback on this machine; the local image file is in the page cache. Ratios are against the local mount with -o nocheck, which like the remote mounts skips the checksum pass over every section at open; >1 for TTFB means slower than local, <1 for MiB/s slower. Fetched bytes and requests are those of the last run; a cold full read fetched %.1f%% of the image's size.\n", 100*float64(cold.fetched)/float64(st.Size()))
	fmt.Print(b.String())
	if out := os.Getenv("BENCH_REPORT"); out != "" {
		os.WriteFile(out, []byte(b.String()), 0o644)
	}
	if warm.fetched != 0 {
		t.Errorf("warm disk cache run fetched %d bytes", warm.fetched)
	}
}

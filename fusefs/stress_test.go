//go:build linux && !386 && !arm

package fusefs_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/imageaccess"
	"github.com/godwarfs/godwarfs/metadata"
)

// stressImage(t) has 11 blocks of 64 KiB, so a 100 KiB cache holds less than
// two of them and readers constantly evict each other's blocks.
func stressImage(t testing.TB) string {
	return fixtures.File(t, "reference", "images", "lookback-4.dwarfs")
}

const stressCacheSize = 100 << 10

type refFile struct {
	path string
	data []byte
}

// referenceFiles reads all regular files through a separate library
// instance, so the comparison does not share a cache with the mount.
func referenceFiles(t testing.TB, img string) []refFile {
	t.Helper()
	ref, err := godwarfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	var files []refFile
	err = imageaccess.Of(ref).FS.Walk(func(p string, ino uint32, in metadata.Inode) error {
		if in.Mode&syscall.S_IFMT != syscall.S_IFREG || in.Size == 0 {
			return nil
		}
		b := make([]byte, in.Size)
		f, err := ref.OpenInode(ino)
		if err != nil {
			return err
		}
		if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		files = append(files, refFile{p, b})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no files")
	}
	return files
}

func stressDuration() time.Duration {
	if s := os.Getenv("GODWARFS_STRESS_DURATION"); s != "" {
		if d, err := time.ParseDuration(s); err == nil {
			return d
		}
	}
	return 3 * time.Second
}

func TestConcurrentReads(t *testing.T) {
	files := referenceFiles(t, stressImage(t))
	gopts := godwarfs.Options{}
	gopts.CacheSize = stressCacheSize
	srv, im := mountImageWith(t, stressImage(t), &gopts, "no_cache_files,seq_detector=2")
	if n := imageaccess.Of(im).Blocks.NumBlocks(); n < 3 {
		t.Fatalf("stress image has only %d blocks", n)
	}
	deadline := time.Now().Add(stressDuration())
	var wg sync.WaitGroup
	var reads atomic.Int64
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 42))
			buf := make([]byte, 300<<10)
			for time.Now().Before(deadline) {
				rf := files[rng.IntN(len(files))]
				f, err := os.Open(filepath.Join(srv.Dir(), rf.path))
				if err != nil {
					t.Error(err)
					return
				}
				for range 1 + rng.IntN(8) {
					off := rng.Int64N(int64(len(rf.data)))
					n := 1 + rng.IntN(len(buf))
					got, err := f.ReadAt(buf[:n], off)
					if err != nil && !errors.Is(err, io.EOF) {
						t.Errorf("%s @%d+%d: %v", rf.path, off, n, err)
						f.Close()
						return
					}
					want := rf.data[off:min(off+int64(n), int64(len(rf.data)))]
					if !bytes.Equal(buf[:got], want) {
						t.Errorf("%s @%d+%d: data mismatch (%d bytes read, %d expected)", rf.path, off, n, got, len(want))
						f.Close()
						return
					}
					reads.Add(1)
				}
				f.Close()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(stressDuration() + 60*time.Second):
		t.Fatal("readers deadlocked")
	}
	// The cached blocks stay within the capacity; beyond it only blocks
	// being decoded or read, which nothing holds once the readers are done
	// and the last read-ahead has finished.
	st := imageaccess.Of(im).Cache.Stats()
	for end := time.Now().Add(10 * time.Second); st.LoadingBytes+st.PinnedBytes != 0 && time.Now().Before(end); st = imageaccess.Of(im).Cache.Stats() {
		time.Sleep(time.Millisecond)
	}
	t.Logf("%d reads; cache %+v", reads.Load(), st)
	if st.CurrentBytes > st.Capacity || st.LoadingBytes != 0 || st.PinnedBytes != 0 {
		t.Errorf("cache holds %d bytes (capacity %d), %d loading, %d pinned after the reads", st.CurrentBytes, st.Capacity, st.LoadingBytes, st.PinnedBytes)
	}
	if st.Evictions == 0 {
		t.Errorf("no evictions: the test did not stress the cache")
	}
}

func TestUnmountUnderLoad(t *testing.T) {
	requireFuse(t)
	files := referenceFiles(t, stressImage(t))
	before := runtime.NumGoroutine()

	gopts := godwarfs.Options{}
	gopts.CacheSize = stressCacheSize
	im, err := godwarfs.Open(stressImage(t), &gopts)
	if err != nil {
		t.Fatal(err)
	}
	src := fusefsImageSource(im)
	srv := mountSrcNoCleanup(t, src, "no_cache_files,tidy_strategy=time,tidy_interval=50ms,tidy_max_age=10ms")

	var wg sync.WaitGroup
	var stopped atomic.Bool
	var afterErrs, okReads atomic.Int64
	reader := func(g int, keepOpen bool) {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(uint64(g), 7))
		buf := make([]byte, 64<<10)
		var f *os.File
		for {
			if f == nil {
				var err error
				f, err = os.Open(filepath.Join(srv.Dir(), files[rng.IntN(len(files))].path))
				if err != nil {
					if stopped.Load() {
						afterErrs.Add(1)
						return
					}
					t.Errorf("open before unmount: %v", err)
					return
				}
			}
			_, err := f.ReadAt(buf, 0)
			if err != nil && !errors.Is(err, io.EOF) {
				f.Close()
				if stopped.Load() {
					afterErrs.Add(1)
					return
				}
				t.Errorf("read before unmount: %v", err)
				return
			}
			okReads.Add(1)
			if !keepOpen {
				f.Close()
				f = nil
			}
		}
	}
	for g := range 8 {
		wg.Add(1)
		// Half the readers hold their file open, which makes a plain
		// unmount fail with EBUSY and exercises the forced path. Aborting
		// the connection of a busy mount needs fusectl, i.e. root.
		go reader(g, g%2 == 0 && os.Geteuid() == 0)
	}
	time.Sleep(300 * time.Millisecond)
	stopped.Store(true)
	start := time.Now()
	if err := srv.Unmount(); err != nil {
		t.Fatalf("unmount under load: %v", err)
	}
	t.Logf("unmount took %v after %d reads", time.Since(start), okReads.Load())
	waitDone := make(chan struct{})
	go func() { wg.Wait(); close(waitDone) }()
	select {
	case <-waitDone:
	case <-time.After(20 * time.Second):
		t.Fatal("readers still blocked after unmount")
	}
	if afterErrs.Load() != 8 {
		t.Errorf("%d of 8 readers saw an error after unmount", afterErrs.Load())
	}
	src.Close()
	im.Close()
	var now int
	for range 50 {
		now = runtime.NumGoroutine()
		if now <= before+2 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if now > before+2 {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Errorf("goroutines: %d before, %d after unmount\n%s", before, now, buf[:n])
	}
}

// TestSequentialPrefetchImage checks that the sequential detector reaches
// the block cache on a real image with many small blocks.
func TestSequentialPrefetchImage(t *testing.T) {
	srv, im := mountImage(t, stressImage(t), "no_cache_files,seq_detector=2,readahead=128k")
	f, err := os.Open(filepath.Join(srv.Dir(), "data/repeated-segments.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 16<<10)
	for {
		if _, err := f.Read(buf); err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
	}
	if st := imageaccess.Of(im).Cache.Stats(); st.Prefetches == 0 {
		t.Errorf("no block prefetches after a sequential read; cache %+v\n%s", st, srv.Perfmon())
	}
}
